#pragma once
// Backend: the one interface the training stack computes through. It carries the kernels of
// kernels/ops.inc, declared from that list (same arguments, a typed reference for each T*, same
// conventions: read that file for each contract) plus the memory moves the stack needs between
// host and device, so src/model, src/tensor_parallel, src/zero and src/train never name a
// backend. kernels/kernel_backend.h implements the kernels once over a backend's kernel class:
// CpuBackend over cpu::Kernels, CudaBackend (kernels/cuda/cuda_backend.h, only with
// ZT_HAVE_CUDA) over cuda::Kernels on its compute stream.
//
// Every pointer a kernel takes is device memory of the backend (host memory on the CPU), except
// where a function says "host". Work is ordered on the backend's compute stream: a function that
// returns a host value (sum_squares, has_inf_or_nan) or fills host memory (copy_to_host) waits
// for it; everything else may return before the work is done.
//
// DeviceContext bundles what a layer needs to allocate and compute: the backend, the pool of
// its device memory and a pool of host memory for staging (the same pool on the CPU, pinned host
// memory on CUDA). Layers receive it next to the communicator they use; there is no global one.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/common/adamw.h"
#include "kernels/common/attention.h"
#include "kernels/common/dropout.h"
#include "kernels/common/moe.h"
#include "kernels/common/multi_tensor.h"
#include "kernels/common/rope.h"
#include "kernels/op_signature.h"
#include "src/core/dtype.h"
#include "src/core/half.h"
#include "src/core/memory_pool.h"
#include "src/core/typed_ref.h"

namespace zt {

class Backend {
 public:
  virtual ~Backend() = default;
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

 protected:
  // The element types the op list's signatures name (T, Y): typed references here.
  using T = ops::Working;
  using Y = ops::Working;

 public:
  virtual Device device() const = 0;
  // True when the host may read and write this backend's memory directly (the CPU backend):
  // then no host staging is needed and callers skip it, so the CPU path keeps its bits and its
  // memory counts.
  virtual bool host_accessible() const = 0;
  // The compute stream (a cudaStream_t) for code that enqueues its own work; null on the CPU.
  virtual void* stream() const = 0;
  // Makes this backend's device current on the calling thread, before a thread other than the
  // one that created the backend calls it; nothing on the CPU.
  virtual void bind_thread() {}

  // ---- the kernels: one pure virtual per op of kernels/ops.inc (read it for each contract) ----
  // Activations and parameters are Refs in the run's working precision (every Ref argument of
  // one call has the same type, except where the list says otherwise); statistics, losses and
  // parameter gradients are fp32.
#define ZT_OP(R, name, ...) \
  virtual R name(ZT_OP_MAP(ZT_OP_BACKEND_PARAM, ZT_OP_COMMA, __VA_ARGS__)) = 0;
#define ZT_TYPED_OP(name, x, ...) \
  virtual void name(ZT_OP_MAP(ZT_OP_BACKEND_PARAM, ZT_OP_COMMA, __VA_ARGS__)) = 0;
#define ZT_TYPED_OUT_OP(name, x, y, ...) \
  virtual void name(ZT_OP_MAP(ZT_OP_BACKEND_PARAM, ZT_OP_COMMA, __VA_ARGS__)) = 0;
#define ZT_DTYPE_OP(name, t, ...) \
  virtual void name(ZT_OP_MAP(ZT_OP_BACKEND_PARAM, ZT_OP_COMMA, __VA_ARGS__), DType t) = 0;
#include "kernels/ops.inc"

  // ---- memory ----
  // host -> device; the host buffer may be reused as soon as this returns.
  virtual void copy_to_device(void* dst, const void* host_src, size_t bytes) = 0;
  // device -> host; the host buffer holds the bytes when this returns.
  virtual void copy_to_host(void* host_dst, const void* src, size_t bytes) = 0;
  // device -> device (non-overlapping).
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  // `rows` rows of `width` bytes, device -> device, with row pitches in bytes.
  virtual void copy_2d(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width,
                       size_t rows) = 0;
  virtual void fill_zero(void* dst, size_t bytes) = 0;
  // Waits for all work enqueued so far.
  virtual void synchronize() = 0;

  // Asynchronous copies between device memory and (pinned) host memory on a side stream, in the
  // order they are started (activation checkpoints offloaded to the host, gradients leaving the
  // device, parameter parts staged for a gather): offload() and fetch() start after the work
  // enqueued so far and overlap the compute enqueued after them. Until a copy is known complete
  // its source must not change and its destination must not be read: join_copies() orders all
  // compute enqueued afterwards behind every copy started so far, wait_copies() returns when
  // they are done (the host may then read what offload() wrote and reuse what fetch() read).
  // On the CPU they are plain copies; the staging backend runs each copy at the latest moment
  // these rules allow and fills what is undefined until then with NaN (kernels/deferred_copies.h),
  // so a missing join or wait shows.
  virtual void offload(void* host_dst, const void* src, size_t bytes) = 0;
  virtual void fetch(void* dst, const void* host_src, size_t bytes) = 0;
  virtual void join_copies() = 0;
  virtual void wait_copies() = 0;
};

// Waits for the backend's side copies when it goes out of scope: declared after the buffers those
// copies read and write (or around their use), it keeps them alive until the copies are done, also
// when a failure unwinds. A failing wait is not raised again there.
class SideCopyGuard {
 public:
  explicit SideCopyGuard(Backend* be) : be_(be) {}
  ~SideCopyGuard();
  SideCopyGuard(const SideCopyGuard&) = delete;
  SideCopyGuard& operator=(const SideCopyGuard&) = delete;

 private:
  Backend* be_;
};

// The CPU backend: zt::cpu on host memory. Stateless, so one instance serves every caller.
Backend& cpu_backend();
// The same kernels with the CUDA backend's memory discipline: host_accessible() is false, so the
// stack stages through DeviceContext::host() and allocates what it allocates on a GPU (staging
// chunks, the prefetch buffer, the scalar reducers in the host pool), from the same code. For
// checking the CUDA paths where no GPU is (tests/unit, tests/dist); the losses are the CPU
// backend's. Strict where a GPU would fail:
//   - device memory from make_staging_device_allocator() is closed to the host (mprotect) except
//     inside this backend's calls and a communicator's operations: a host read or write of a
//     device pointer faults, as on a GPU (src/core/protected_memory.h);
//   - the side copies run at the latest moment the rules above allow and poison what they leave
//     undefined until then; a source changed too early fails the join or the wait
//     (kernels/deferred_copies.h).
Backend& cpu_staging_backend();
// Device memory for cpu_staging_backend(): `capacity` bytes reserved (not committed) at once.
std::unique_ptr<Allocator> make_staging_device_allocator(size_t capacity = size_t{4} << 30);

struct DeviceContext {
  // The CPU backend over one host pool, which also serves as the staging pool. Implicit: a host
  // MemoryPool can only ever be driven by the CPU backend, so a pool alone says everything.
  DeviceContext(MemoryPool& pool);  // NOLINT(google-explicit-constructor)
  DeviceContext(Backend& backend, MemoryPool& pool, MemoryPool& host);

  Backend& backend() const { return *backend_; }
  MemoryPool& pool() const { return *pool_; }  // device memory
  MemoryPool& host() const { return *host_; }  // host memory: staging, host checkpoints
  // True when the host must stage data through host() to reach the device's memory.
  bool needs_staging() const { return !backend_->host_accessible(); }

 private:
  Backend* backend_;
  MemoryPool* pool_;
  MemoryPool* host_;
};

}  // namespace zt
