#include "kernels/cuda/cublas_check.h"

#include <fmt/format.h>

#include "src/core/cuda_check.h"
#include "src/core/error.h"

namespace zt::cuda::detail {

void throw_cublas_error(const char* call, cublasStatus_t status, const char* file, int line) {
  cuda_detail::throw_cuda_error(call, cublasGetStatusString(status), file, line);
}

void throw_runtime_error(const char* call, cudaError_t status, const char* file, int line) {
  cuda_detail::throw_cuda_error(call, cudaGetErrorString(status), file, line);
}

void throw_check_failed(const char* cond, const std::string& msg, const char* file, int line) {
  // ZT_CHECK's wording (src/core/error.cpp), with the rank as in CUDA errors.
  throw Error(fmt::format("{} ({} failed at {}:{}, rank {})", msg, cond, file, line,
                          cuda_detail::error_rank()));
}

}  // namespace zt::cuda::detail
