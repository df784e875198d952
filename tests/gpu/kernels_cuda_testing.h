#pragma once
// Helpers for the CUDA-kernel tests: RAII device buffers, host<->device copies, random data and
// the comparisons (max_rel_error from tests/max_rel_error.h, bit equality).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "src/core/cuda_check.h"
#include "tests/max_rel_error.h"

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

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

inline double rel_err(const std::vector<float>& got, const std::vector<float>& want) {
  EXPECT_EQ(got.size(), want.size());
  return test::max_rel_error(got.data(), want.data(), want.size());
}

// Bitwise equality; on failure names the first differing element.
template <typename T>
::testing::AssertionResult same_bits(const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0)
      return ::testing::AssertionFailure() << "first difference at element " << i;
  return ::testing::AssertionSuccess();
}

}  // namespace zt::gpu_test
