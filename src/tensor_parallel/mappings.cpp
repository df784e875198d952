#include "src/tensor_parallel/mappings.h"

#include <algorithm>

namespace zt::tp {
namespace {

// dst [rows, cols] column block `block` (width w) <- src [rows, w], or the reverse.
void copy_block_out(float* dst, const float* src, int64_t rows, int64_t cols, int64_t w,
                    int block) {
  for (int64_t r = 0; r < rows; ++r) std::copy_n(src + r * cols + block * w, w, dst + r * w);
}

// full [rows, w*n] <- gathered [n, rows, w] (rank-major, as all_gather leaves it).
void interleave(float* full, const float* gathered, int64_t rows, int64_t w, int n) {
  for (int k = 0; k < n; ++k)
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(gathered + (k * rows + r) * w, w, full + r * w * n + k * w);
}

}  // namespace

void all_reduce(comm::Communicator* tp, float* x, int64_t n, comm::ReduceOp op) {
  if (!active(tp)) return;
  tp->all_reduce(Tensor(x, Shape{n}, DType::F32), op);
}

void scatter_last_dim_forward(comm::Communicator* tp, float* local, const float* full, int64_t rows,
                              int64_t cols) {
  const int n = size_of(tp);
  ZT_CHECK(cols % n == 0, "scatter: {} columns do not split over {} ranks", cols, n);
  copy_block_out(local, full, rows, cols, cols / n, rank_of(tp));
}

void scatter_last_dim_backward(comm::Communicator* tp, float* dfull, const float* dlocal,
                               int64_t rows, int64_t cols, float* scratch) {
  gather_last_dim_forward(tp, dfull, dlocal, rows, cols / size_of(tp), scratch);
}

void gather_last_dim_forward(comm::Communicator* tp, float* full, const float* local, int64_t rows,
                             int64_t cols_local, float* scratch) {
  const int n = size_of(tp);
  const int64_t m = rows * cols_local;
  if (!active(tp)) {
    std::copy_n(local, m, full);
    return;
  }
  std::copy_n(local, m, scratch + rank_of(tp) * m);
  tp->all_gather(Tensor(scratch, Shape{m * n}, DType::F32));
  interleave(full, scratch, rows, cols_local, n);
}

void gather_last_dim_backward(comm::Communicator* tp, float* dlocal, const float* dfull,
                              int64_t rows, int64_t cols_local) {
  copy_block_out(dlocal, dfull, rows, cols_local * size_of(tp), cols_local, rank_of(tp));
}

}  // namespace zt::tp
