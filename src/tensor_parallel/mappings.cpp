#include "src/tensor_parallel/mappings.h"

namespace zt::tp {
namespace {

// dst [rows, w] <- column block `block` (width w) of src [rows, cols].
void copy_block_out(Backend& be, Ref dst, CRef src, int64_t rows, int64_t cols, int64_t w,
                    int block) {
  be.copy_2d(dst.p, dst.bytes(w), (src + block * w).p, src.bytes(cols), src.bytes(w),
             static_cast<size_t>(rows));
}

// full [rows, w*n] <- gathered [n, rows, w] (rank-major, as all_gather leaves it).
void interleave(Backend& be, Ref full, CRef gathered, int64_t rows, int64_t w, int n) {
  for (int k = 0; k < n; ++k)
    be.copy_2d((full + k * w).p, full.bytes(w * n), (gathered + k * rows * w).p, gathered.bytes(w),
               gathered.bytes(w), static_cast<size_t>(rows));
}

}  // namespace

void all_reduce(Backend& be, comm::Communicator* tp, Ref x, int64_t n, comm::ReduceOp op) {
  if (!active(tp)) return;
  tp->all_reduce(Tensor(x.p, Shape{n}, x.t, be.device()), op);
}

void scatter_last_dim_forward(Backend& be, comm::Communicator* tp, Ref local, CRef full,
                              int64_t rows, int64_t cols) {
  const int n = size_of(tp);
  ZT_CHECK(cols % n == 0, "scatter: {} columns do not split over {} ranks", cols, n);
  copy_block_out(be, local, full, rows, cols, cols / n, rank_of(tp));
}

void scatter_last_dim_backward(Backend& be, comm::Communicator* tp, Ref dfull, CRef dlocal,
                               int64_t rows, int64_t cols, Ref scratch) {
  gather_last_dim_forward(be, tp, dfull, dlocal, rows, cols / size_of(tp), scratch);
}

void gather_last_dim_forward(Backend& be, comm::Communicator* tp, Ref full, CRef local,
                             int64_t rows, int64_t cols_local, Ref scratch) {
  const int n = size_of(tp);
  const int64_t m = rows * cols_local;
  if (!active(tp)) {
    be.copy(full.p, local.p, local.bytes(m));
    return;
  }
  be.copy((scratch + rank_of(tp) * m).p, local.p, local.bytes(m));
  tp->all_gather(Tensor(scratch.p, Shape{m * n}, scratch.t, be.device()));
  interleave(be, full, scratch, rows, cols_local, n);
}

void gather_last_dim_backward(Backend& be, comm::Communicator* tp, Ref dlocal, CRef dfull,
                              int64_t rows, int64_t cols_local) {
  copy_block_out(be, dlocal, dfull, rows, cols_local * size_of(tp), cols_local, rank_of(tp));
}

}  // namespace zt::tp
