#pragma once
// Checking macros for the CUDA kernels. They avoid src/core/error.h and cuda_check.h on purpose:
// those include fmt, whose headers nvcc's host pass does not compile (consteval format strings
// and constexpr bodies fail), so .cu files use these and the formatting happens in
// cublas_check.cpp. The thrown zt::Error reads like ZT_CUDA_CHECK's and ZT_CHECK's.
//   ZT_CUBLAS_CHECK(call)     cuBLAS / cuBLASLt status (cublasStatus_t)
//   ZT_CU_CUDA_CHECK(call)    CUDA runtime status (ZT_CUDA_CHECK for .cu files)
//   ZT_CU_CHECK(cond, msg)    a condition on arguments; msg is a std::string (see cat below)
#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <sstream>
#include <string>

namespace zt::cuda::detail {
[[noreturn]] void throw_cublas_error(const char* call, cublasStatus_t status, const char* file,
                                     int line);
[[noreturn]] void throw_runtime_error(const char* call, cudaError_t status, const char* file,
                                      int line);
[[noreturn]] void throw_check_failed(const char* cond, const std::string& msg, const char* file,
                                     int line);

// The message of a failed check, streamed together (fmt is not available in .cu files).
template <typename... Args>
std::string cat(const Args&... args) {
  std::ostringstream s;
  (s << ... << args);
  return s.str();
}
}  // namespace zt::cuda::detail

#define ZT_CUBLAS_CHECK(call)                                                               \
  do {                                                                                      \
    const cublasStatus_t zt_cublas_status_ = (call);                                        \
    if (zt_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                         \
      ::zt::cuda::detail::throw_cublas_error(#call, zt_cublas_status_, __FILE__, __LINE__); \
  } while (0)

#define ZT_CU_CUDA_CHECK(call)                                                           \
  do {                                                                                   \
    const cudaError_t zt_cu_status_ = (call);                                            \
    if (zt_cu_status_ != cudaSuccess)                                                    \
      ::zt::cuda::detail::throw_runtime_error(#call, zt_cu_status_, __FILE__, __LINE__); \
  } while (0)

#define ZT_CU_CHECK(cond, msg)                                                  \
  do {                                                                          \
    if (!(cond)) [[unlikely]]                                                   \
      ::zt::cuda::detail::throw_check_failed(#cond, (msg), __FILE__, __LINE__); \
  } while (0)
