#pragma once
// Helpers for the CUDA-kernel tests: RAII device buffers, host<->device copies and the relative
// error (max_rel_error from tests/support/max_rel_error.h). Random data and bit equality are
// tests/support/kernels_testing.h's, shared with the CPU kernel tests.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "src/core/cuda_check.h"
#include "tests/support/kernels_testing.h"
#include "tests/support/max_rel_error.h"

namespace zt::gpu_test {

struct CudaFree {
  void operator()(void* p) const { (void)cudaFree(p); }
};

// A device copy of a host vector; host() copies it back (synchronising the default stream).
template <typename T>
class DeviceVector {
 public:
  explicit DeviceVector(size_t n) : n_(n) {
    void* p = nullptr;
    ZT_CUDA_CHECK(cudaMalloc(&p, n * sizeof(T) + 16));
    ptr_.reset(p);
  }
  explicit DeviceVector(const std::vector<T>& v) : DeviceVector(v.size()) { upload(v); }
  void upload(const std::vector<T>& v) {
    ZT_CUDA_CHECK(cudaMemcpy(ptr_.get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> host() const {
    std::vector<T> v(n_);
    ZT_CUDA_CHECK(cudaDeviceSynchronize());
    ZT_CUDA_CHECK(cudaMemcpy(v.data(), ptr_.get(), n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
  }
  T* get() const { return static_cast<T*>(ptr_.get()); }
  size_t size() const { return n_; }

 private:
  size_t n_;
  std::unique_ptr<void, CudaFree> ptr_;
};

inline double rel_err(const std::vector<float>& got, const std::vector<float>& want) {
  EXPECT_EQ(got.size(), want.size());
  return test::max_rel_error(got.data(), want.data(), want.size());
}

}  // namespace zt::gpu_test
