#pragma once
// The local GEMMs of one linear layer y = x·Wᵀ + b (W [out, in]) whose weight the model reaches
// through a ParamSource in chunks of whole output rows (ParamRef::chunk). When W fits in one
// span these are exactly the backend's fused linear ops, so the bits do not depend on the
// source. When it does not:
//   forward   y[:, rows] = x·W_cᵀ per chunk, then the bias added once (one more rounding);
//   dx        Σ_c dy[:, rows]·W_c accumulated in the working precision, chunk by chunk (as the
//             tensor-parallel all-reduce sums its partials);
//   dW, db    per chunk / once, into the source's gradient spans: fp32, each element once.
// Tensor-parallel communication stays with the caller (src/tensor_parallel/mappings.h).
#include "kernels/backend.h"
#include "src/model/param_ref.h"

namespace zt {

struct LinearRefs {
  ParamRef w;
  ParamRef b;  // b.rows == 0: no bias
  int in = 0, out = 0;
  bool has_bias() const { return b.rows > 0; }
};

// y [N, out] = x·Wᵀ, plus b when `with_bias`.
void chunked_linear_forward(Backend& be, ParamSource& src, const LinearRefs& l, Ref y, CRef x,
                            int N, bool with_bias);
// The MLP's fc and its GeLU: pre [N, out] = x·Wᵀ + b, y = gelu(pre). One fused backend op when
// W fits in one span; otherwise chunked_linear_forward then the GeLU (the same math).
void chunked_linear_gelu_forward(Backend& be, ParamSource& src, const LinearRefs& l, Ref y, Ref pre,
                                 CRef x, int N);
// y[n, :] += b for every row.
void chunked_add_bias(Backend& be, ParamSource& src, const LinearRefs& l, Ref y, int N);
// dx [N, in] = dy·W (overwritten).
void chunked_linear_backward_input(Backend& be, ParamSource& src, const LinearRefs& l, Ref dx,
                                   CRef dy, int N);
// dx [N, in] = (dy·W) ⊙ gelu'(pre): the input gradient of a linear layer fed by gelu(pre). One
// fused backend op when W fits in one span; otherwise chunked_linear_backward_input then the
// GeLU backward.
void chunked_linear_backward_input_gelu(Backend& be, ParamSource& src, const LinearRefs& l, Ref dx,
                                        CRef dy, CRef pre, int N);
// dW += dyᵀ·x and db += colsum(dy) into the source's gradient spans, highest offset first (the
// bias follows its weight in the layout). `ones`: N ones in the working precision, for a bias
// gradient computed beside a chunked weight.
void chunked_linear_backward_params(Backend& be, ParamSource& src, const LinearRefs& l, CRef dy,
                                    CRef x, CRef ones, int N);

}  // namespace zt
