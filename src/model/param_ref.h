#pragma once
// ParamRef: one parameter as the model reaches it through a ParamSource — its block, where it
// starts in the block, and its rows — and the chunks of whole rows it is cut into.
#include <cstdint>
#include <string>

#include "src/model/param_layout.h"
#include "src/model/param_source.h"

namespace zt {

struct ParamRef {
  int block = 0;
  int64_t offset = 0;  // block-relative
  int64_t rows = 0, row_len = 0;
  int64_t expert_rows = 1;  // ParamSpec::expert_rows

  static ParamRef of(const ParamLayout& layout, const std::string& name);
  // The same, or an empty reference (rows 0) where the layout has no such parameter (a linear
  // bias under --disable-bias-linear, an RMSNorm's bias, the learned positions under rope).
  static ParamRef maybe(const ParamLayout& layout, const std::string& name);
  bool present() const { return rows > 0; }
  int64_t numel() const { return rows * row_len; }
  Span span() const { return {block, offset, numel()}; }
  Span row_span(int64_t row0, int64_t n) const {
    return {block, offset + row0 * row_len, n * row_len};
  }
  int64_t chunk(const ParamSource& src) const {
    return chunk_rows(rows, row_len, src.max_span(), expert_rows);
  }
};

// Where span `s` starts in the layout's flat order.
inline int64_t layout_offset(const ParamLayout& layout, const Span& s) {
  return layout.blocks()[static_cast<size_t>(s.block)].begin + s.offset;
}

// The parameter held whole (one span), released when this goes out of scope.
class Held {
 public:
  Held(ParamSource& src, const Span& s) : src_(&src), span_(s), p_(src.acquire(s)) {}
  Held(ParamSource& src, const ParamRef& p) : Held(src, p.span()) {}
  ~Held() { src_->release(span_); }
  Held(const Held&) = delete;
  Held& operator=(const Held&) = delete;
  CRef get() const { return p_; }

 private:
  ParamSource* src_;
  Span span_;
  CRef p_;
};

// A gradient span open for adding into, closed when this goes out of scope.
class GradSpan {
 public:
  GradSpan(ParamSource& src, const Span& s) : src_(&src), span_(s), p_(src.open_grads(s)) {}
  GradSpan(ParamSource& src, const ParamRef& p) : GradSpan(src, p.span()) {}
  ~GradSpan() { src_->close_grads(span_); }
  GradSpan(const GradSpan&) = delete;
  GradSpan& operator=(const GradSpan&) = delete;
  float* get() const { return p_; }

 private:
  ParamSource* src_;
  Span span_;
  float* p_;
};

}  // namespace zt
