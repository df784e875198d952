#include "src/model/chunked_linear.h"

#include <algorithm>

namespace zt {

void chunked_linear_forward(Backend& be, ParamSource& src, const LinearRefs& l, Ref y, CRef x,
                            int N, bool with_bias) {
  const int64_t step = l.w.chunk(src);
  if (step == l.w.rows) {
    const Held w(src, l.w);
    if (!with_bias || !l.has_bias()) {
      be.linear_forward(y, x, w.get(), CRef(nullptr, x.t), N, l.in, l.out);
      return;
    }
    const Held b(src, l.b);
    be.linear_forward(y, x, w.get(), b.get(), N, l.in, l.out);
    return;
  }
  for (int64_t r = 0; r < l.w.rows; r += step) {
    const int64_t n = std::min(step, l.w.rows - r);
    const Held w(src, l.w.row_span(r, n));
    be.gemm(false, true, N, static_cast<int>(n), l.in, 1.0f, x, l.in, w.get(), l.in, 0.0f, y + r,
            l.out);
  }
  if (with_bias && l.has_bias()) chunked_add_bias(be, src, l, y, N);
}

void chunked_linear_gelu_forward(Backend& be, ParamSource& src, const LinearRefs& l, Ref y, Ref pre,
                                 CRef x, int N) {
  if (l.w.chunk(src) != l.w.rows) {
    chunked_linear_forward(be, src, l, pre, x, N, true);
    be.gelu_forward(y, pre, int64_t{N} * l.out);
    return;
  }
  const Held w(src, l.w);
  if (!l.has_bias()) {
    be.linear_gelu_forward(y, pre, x, w.get(), CRef(nullptr, x.t), N, l.in, l.out);
    return;
  }
  const Held b(src, l.b);
  be.linear_gelu_forward(y, pre, x, w.get(), b.get(), N, l.in, l.out);
}

void chunked_add_bias(Backend& be, ParamSource& src, const LinearRefs& l, Ref y, int N) {
  const Held b(src, l.b);
  be.add_broadcast(y, b.get(), N, l.out);
}

void chunked_linear_backward_input(Backend& be, ParamSource& src, const LinearRefs& l, Ref dx,
                                   CRef dy, int N) {
  const int64_t step = l.w.chunk(src);
  bool first = true;
  // Highest rows first: a stage-3 source gathers the weight in the order backward needs it.
  for (int64_t r = (l.w.rows - 1) / step * step; r >= 0; r -= step) {
    const int64_t n = std::min(step, l.w.rows - r);
    const Held w(src, l.w.row_span(r, n));
    be.gemm(false, false, N, l.in, static_cast<int>(n), 1.0f, dy + r, l.out, w.get(), l.in,
            first ? 0.0f : 1.0f, dx, l.in);
    first = false;
  }
}

void chunked_linear_backward_input_gelu(Backend& be, ParamSource& src, const LinearRefs& l, Ref dx,
                                        CRef dy, CRef pre, int N) {
  if (l.w.chunk(src) != l.w.rows) {
    chunked_linear_backward_input(be, src, l, dx, dy, N);
    be.gelu_backward(dx, pre, dx, int64_t{N} * l.in);
    return;
  }
  const Held w(src, l.w);
  be.linear_backward_gelu(dx, dy, w.get(), pre, N, l.in, l.out);
}

void chunked_linear_backward_params(Backend& be, ParamSource& src, const LinearRefs& l, CRef dy,
                                    CRef x, CRef ones, int N) {
  const int64_t step = l.w.chunk(src);
  if (step == l.w.rows) {
    if (!l.has_bias()) {
      const GradSpan dw(src, l.w);
      be.linear_backward(Ref(nullptr, x.t), dw.get(), nullptr, dy, x, CRef(nullptr, x.t), N, l.in,
                         l.out, false);
      return;
    }
    const GradSpan db(src, l.b);
    const GradSpan dw(src, l.w);
    be.linear_backward(Ref(nullptr, x.t), dw.get(), db.get(), dy, x, CRef(nullptr, x.t), N, l.in,
                       l.out, false);
    return;
  }
  if (l.has_bias()) {
    const GradSpan db(src, l.b);
    be.gemm(false, false, 1, l.out, N, 1.0f, ones, N, dy, l.out, 1.0f, db.get(), l.out);
  }
  for (int64_t r = (l.w.rows - 1) / step * step; r >= 0; r -= step) {
    const int64_t n = std::min(step, l.w.rows - r);
    const GradSpan dw(src, l.w.row_span(r, n));
    be.gemm(true, false, static_cast<int>(n), l.in, N, 1.0f, dy + r, l.out, x, l.in, 1.0f, dw.get(),
            l.in);
  }
}

}  // namespace zt
