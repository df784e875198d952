#include "src/tensor_parallel/mappings.h"

namespace zt::tp {
namespace {

// dst [rows, w] <- column block `block` (width w) of src [rows, cols].
void copy_block_out(Backend& be, float* dst, const float* src, int64_t rows, int64_t cols,
                    int64_t w, int block) {
  be.copy_2d(dst, static_cast<size_t>(w) * 4, src + block * w, static_cast<size_t>(cols) * 4,
             static_cast<size_t>(w) * 4, static_cast<size_t>(rows));
}

// full [rows, w*n] <- gathered [n, rows, w] (rank-major, as all_gather leaves it).
void interleave(Backend& be, float* full, const float* gathered, int64_t rows, int64_t w, int n) {
  for (int k = 0; k < n; ++k)
    be.copy_2d(full + k * w, static_cast<size_t>(w * n) * 4, gathered + k * rows * w,
               static_cast<size_t>(w) * 4, static_cast<size_t>(w) * 4, static_cast<size_t>(rows));
}

}  // namespace

void all_reduce(Backend& be, comm::Communicator* tp, float* x, int64_t n, comm::ReduceOp op) {
  if (!active(tp)) return;
  tp->all_reduce(Tensor(x, Shape{n}, DType::F32, be.device()), op);
}

void scatter_last_dim_forward(Backend& be, comm::Communicator* tp, float* local, const float* full,
                              int64_t rows, int64_t cols) {
  const int n = size_of(tp);
  ZT_CHECK(cols % n == 0, "scatter: {} columns do not split over {} ranks", cols, n);
  copy_block_out(be, local, full, rows, cols, cols / n, rank_of(tp));
}

void scatter_last_dim_backward(Backend& be, comm::Communicator* tp, float* dfull,
                               const float* dlocal, int64_t rows, int64_t cols, float* scratch) {
  gather_last_dim_forward(be, tp, dfull, dlocal, rows, cols / size_of(tp), scratch);
}

void gather_last_dim_forward(Backend& be, comm::Communicator* tp, float* full, const float* local,
                             int64_t rows, int64_t cols_local, float* scratch) {
  const int n = size_of(tp);
  const int64_t m = rows * cols_local;
  if (!active(tp)) {
    be.copy(full, local, static_cast<size_t>(m) * 4);
    return;
  }
  be.copy(scratch + rank_of(tp) * m, local, static_cast<size_t>(m) * 4);
  tp->all_gather(Tensor(scratch, Shape{m * n}, DType::F32, be.device()));
  interleave(be, full, scratch, rows, cols_local, n);
}

void gather_last_dim_backward(Backend& be, comm::Communicator* tp, float* dlocal,
                              const float* dfull, int64_t rows, int64_t cols_local) {
  copy_block_out(be, dlocal, dfull, rows, cols_local * size_of(tp), cols_local, rank_of(tp));
}

}  // namespace zt::tp
