#pragma once
// CudaBackend: the Backend interface (kernels/backend.h) over cuda::Kernels (kernels/cuda/ops.h)
// on one device. All work goes to its compute stream, in call order, so the stack's sequential code
// is correct without further synchronisation; functions returning host values wait for it.
// A second (copy) stream carries the side copies to and from pinned host memory (backend.h),
// ordered with the compute stream by events. Built only with ZT_HAVE_CUDA.
#include <memory>

#include "kernels/backend.h"
#include "kernels/cuda/ops.h"
#include "kernels/kernel_backend.h"
#include "src/core/cuda_stream.h"

namespace zt {

class CudaBackend final : public KernelBackend<cuda::Kernels, CudaBackend> {
 public:
  // On the current device (cuda::select_device first); creates its two streams.
  CudaBackend();
  ~CudaBackend() override;

  Device device() const override { return Device::Cuda; }
  bool host_accessible() const override { return false; }
  void* stream() const override { return compute_.get(); }
  void bind_thread() override;
  cudaStream_t compute_stream() const { return compute_.get(); }
  // Where the kernels run (kernels/kernel_backend.h).
  cudaStream_t exec() const { return compute_.get(); }

  void copy_to_device(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void copy_2d(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width,
               size_t rows) override;
  void fill_zero(void* dst, size_t bytes) override;
  void synchronize() override;
  void offload(void* host_dst, const void* src, size_t bytes) override;
  void fetch(void* dst, const void* host_src, size_t bytes) override;
  void join_copies() override;
  void wait_copies() override;

 private:
  void copy_stream_waits_compute();
  int device_ = 0;  // current when constructed
  cuda::Stream compute_, copies_;
  cuda::Event compute_done_, copies_done_;
};

}  // namespace zt
