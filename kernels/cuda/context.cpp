#include "kernels/cuda/context.h"

#include <atomic>
#include <map>
#include <memory>
#include <tuple>
#include <utility>

#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/ops.h"
#include "src/core/cuda_check.h"

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

struct Buffer {
  DeviceBuffer ptr;
  size_t bytes = 0;
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
  std::map<std::tuple<int, cudaStream_t, int>, Buffer> buffers;  // (device, stream, purpose)
  std::map<int, int> sm_counts;
};

ThreadState& state() {
  thread_local ThreadState s;
  return s;
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
  Buffer& b = state().buffers[{current_device(), stream, purpose}];
  if (b.bytes < bytes || b.ptr == nullptr) {
    b.ptr.reset();
    b.bytes = 0;
    void* p = nullptr;
    ZT_CUDA_CHECK(cudaMalloc(&p, bytes > 0 ? bytes : 256));
    b.ptr.reset(p);
    b.bytes = bytes;
  }
  return b.ptr.get();
}

constexpr int kLtWorkspacePurpose = -1;  // shares the buffer table with the Scratch purposes

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
