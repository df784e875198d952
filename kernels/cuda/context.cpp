#include "kernels/cuda/context.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>

#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/ops.h"
#include "src/core/cuda_check.h"
#include "src/core/error.h"
#include "src/core/memory_pool.h"

namespace zt::cuda::detail {
namespace {

// Deleters ignore errors: they run at thread exit, where nothing can be reported.
struct CudaFree {
  void operator()(void* p) const { (void)cudaFree(p); }
};
struct BlasDestroy {
  void operator()(cublasContext* h) const { (void)cublasDestroy(h); }
};
struct LtHandleDestroy {
  void operator()(cublasLtContext* h) const { (void)cublasLtDestroy(h); }
};
using DeviceBuffer = std::unique_ptr<void, CudaFree>;

// One buffer: from the scope's pool (pooled) or from cudaMalloc (raw).
struct Buffer {
  zt::Buffer pooled;
  DeviceBuffer raw;
  size_t bytes = 0;
  void* get() const { return raw ? raw.get() : pooled.data(); }
};

struct CachedPlan {
  LtPlan plan;
  uint64_t last_use = 0;
};

struct DeviceState {
  std::unique_ptr<cublasContext, BlasDestroy> blas;
  std::unique_ptr<cublasLtContext, LtHandleDestroy> lt;
  std::map<LtPlanKey, CachedPlan> plans;
  uint64_t plan_clock = 0;
};

struct ThreadState {
  std::map<int, DeviceState> devices;
  std::map<int, int> sm_counts;
};

ThreadState& state() {
  thread_local ThreadState s;
  return s;
}

// The buffers, process-wide (a scope returns them to its pool from whichever thread ends it).
// Key: (device, thread, stream, purpose).
using BufferKey = std::tuple<int, std::thread::id, cudaStream_t, int>;
struct Buffers {
  std::mutex mu;
  std::map<BufferKey, Buffer> table;
  std::map<int, MemoryPool*> pools;    // by device, while a ScratchPoolScope is open
  std::map<int, size_t> grown_at_end;  // by device: the grown scratch when its last scope ended
};

constexpr int kLtWorkspacePurpose = -1;  // shares the buffer table with the Scratch purposes

// The pooled Scratch purposes' bytes on `dev` (not the GEMM workspaces). With the lock held.
size_t grown_locked(const Buffers& all, int dev) {
  size_t n = 0;
  for (const auto& [key, b] : all.table)
    if (std::get<0>(key) == dev && std::get<3>(key) != kLtWorkspacePurpose && b.raw == nullptr)
      n += b.bytes;
  return n;
}
Buffers& buffers() {
  static Buffers* b = new Buffers;  // never destroyed: raw buffers outlive static destructors
  return *b;
}

int current_device() {
  int d = 0;
  ZT_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

DeviceState& device_state() {
  return state().devices[current_device()];
}

void* buffer(int purpose, size_t bytes, cudaStream_t stream) {
  const int dev = current_device();
  Buffers& all = buffers();
  std::lock_guard lk(all.mu);
  Buffer& b = all.table[{dev, std::this_thread::get_id(), stream, purpose}];
  if (b.bytes < bytes || (b.raw == nullptr && b.pooled.data() == nullptr)) {
    if (b.bytes > 0) ZT_CUDA_CHECK(cudaStreamSynchronize(stream));  // work still using it
    b = Buffer{};
    const size_t n = bytes > 0 ? bytes : 256;
    auto pool = all.pools.find(dev);
    if (pool != all.pools.end()) {
      b.pooled = pool->second->allocate(n, MemCategory::Buffers);
    } else {
      void* p = nullptr;
      ZT_CUDA_CHECK(cudaMalloc(&p, n));
      b.raw.reset(p);
    }
    b.bytes = n;
  }
  return b.get();
}

}  // namespace

cublasHandle_t blas_handle(cudaStream_t stream) {
  DeviceState& d = device_state();
  if (d.blas == nullptr) {
    cublasHandle_t h = nullptr;
    ZT_CUBLAS_CHECK(cublasCreate(&h));
    d.blas.reset(h);
  }
  // fp32 GEMMs (the fp32 attention products) on TF32 tensor cores only when set_tf32(true).
  ZT_CUBLAS_CHECK(
      cublasSetMathMode(d.blas.get(), tf32() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  ZT_CUBLAS_CHECK(cublasSetStream(d.blas.get(), stream));
  // The stream's GEMM workspace, shared with cuBLASLt (their calls on one stream never overlap),
  // so cuBLAS allocates none outside MemoryPool.
  ZT_CUBLAS_CHECK(cublasSetWorkspace(d.blas.get(), lt_workspace(stream), kLtWorkspaceBytes));
  return d.blas.get();
}

cublasLtHandle_t lt_handle() {
  DeviceState& d = device_state();
  if (d.lt == nullptr) {
    cublasLtHandle_t h = nullptr;
    ZT_CUBLAS_CHECK(cublasLtCreate(&h));
    d.lt.reset(h);
  }
  return d.lt.get();
}

void LtDestroy::operator()(cublasLtMatmulDescOpaque_t* d) const {
  (void)cublasLtMatmulDescDestroy(d);
}
void LtDestroy::operator()(cublasLtMatrixLayoutOpaque_t* d) const {
  (void)cublasLtMatrixLayoutDestroy(d);
}
void LtDestroy::operator()(cublasLtMatmulPreferenceOpaque_t* d) const {
  (void)cublasLtMatmulPreferenceDestroy(d);
}

LtPlan* lt_plan_find(const LtPlanKey& key) {
  DeviceState& d = device_state();
  auto it = d.plans.find(key);
  if (it == d.plans.end()) return nullptr;
  it->second.last_use = ++d.plan_clock;
  return &it->second.plan;
}

LtPlan& lt_plan_insert(const LtPlanKey& key, LtPlan&& plan) {
  DeviceState& d = device_state();
  if (d.plans.size() >= kLtPlanCacheEntries) {
    auto lru = d.plans.begin();
    for (auto it = d.plans.begin(); it != d.plans.end(); ++it)
      if (it->second.last_use < lru->second.last_use) lru = it;
    d.plans.erase(lru);
  }
  CachedPlan& c = d.plans[key];
  c.plan = std::move(plan);
  c.last_use = ++d.plan_clock;
  return c.plan;
}

size_t lt_plan_count() {
  return device_state().plans.size();
}

void* lt_workspace(cudaStream_t stream) {
  return buffer(kLtWorkspacePurpose, kLtWorkspaceBytes, stream);
}

void* scratch(Scratch purpose, size_t bytes, cudaStream_t stream) {
  return buffer(static_cast<int>(purpose), bytes, stream);
}

int sm_count() {
  const int dev = current_device();
  auto& counts = state().sm_counts;
  auto it = counts.find(dev);
  if (it == counts.end()) {
    int n = 0;
    ZT_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    it = counts.emplace(dev, n).first;
  }
  return it->second;
}

}  // namespace zt::cuda::detail

namespace zt::cuda {

ScratchPoolScope::ScratchPoolScope(MemoryPool& pool, cudaStream_t stream)
    : device_(detail::current_device()) {
  ZT_CHECK(pool.device() == Device::Cuda, "ScratchPoolScope needs a device pool");
  {
    detail::Buffers& all = detail::buffers();
    std::lock_guard lk(all.mu);
    ZT_CHECK(all.pools.emplace(device_, &pool).second,
             "a ScratchPoolScope is already open for device {}", device_);
  }
  (void)detail::lt_workspace(stream);
}

ScratchPoolScope::~ScratchPoolScope() {
  // Nothing queued may still use a buffer given back (a destructor has no error to report).
  (void)cudaDeviceSynchronize();
  detail::Buffers& all = detail::buffers();
  std::lock_guard lk(all.mu);
  const int dev = device_;
  all.grown_at_end[dev] = grown_locked(all, dev);
  std::erase_if(all.table, [dev](const auto& kv) {
    return std::get<0>(kv.first) == dev && kv.second.raw == nullptr;
  });
  all.pools.erase(dev);
}

size_t grown_scratch_bytes() {
  const int dev = detail::current_device();
  detail::Buffers& all = detail::buffers();
  std::lock_guard lk(all.mu);
  if (all.pools.count(dev) == 0) {
    auto it = all.grown_at_end.find(dev);
    return it == all.grown_at_end.end() ? 0 : it->second;
  }
  return detail::grown_locked(all, dev);
}
namespace {
std::atomic<bool> g_tf32{false};
}  // namespace
void set_tf32(bool on) {
  g_tf32.store(on);
}
bool tf32() {
  return g_tf32.load();
}
}  // namespace zt::cuda
