#include "src/model/context_attention.h"

#include "src/tensor_parallel/rng_tracker.h"

namespace zt {
namespace {

// A rank's head group j of a row: its query heads' columns, and under `qkv` its key and value
// heads' columns (q|k|v, as the fused projection lays them out), side by side in a group row.
struct GroupColumns {
  int64_t col[3] = {};
  int64_t width[3] = {};
  int count = 0;
  int64_t row = 0;  // the width of a group row
};

GroupColumns group_columns(const LayerDims& d, int j, bool qkv) {
  const int64_t g = d.cp.size, cl = d.Cl / g, ckv = d.Ckv / g;
  GroupColumns c;
  c.col[0] = j * cl;
  c.width[0] = cl;
  c.count = 1;
  if (qkv) {
    c.col[1] = d.Cl + j * ckv;
    c.col[2] = d.Cl + d.Ckv + j * ckv;
    c.width[1] = c.width[2] = ckv;
    c.count = 3;
  }
  for (int i = 0; i < c.count; ++i) c.row += c.width[i];
  return c;
}

// local [N, ld] -> send [cp][N][group row]: block j holds head group j's columns of every row.
void to_head_groups(const LayerDims& d, CRef local, int64_t ld, Ref send, bool qkv) {
  const int64_t N = d.N();
  for (int j = 0; j < d.cp.size; ++j) {
    const GroupColumns c = group_columns(d, j, qkv);
    int64_t at = 0;
    for (int i = 0; i < c.count; ++i) {
      d.be->copy_2d((send + j * N * c.row + at).p, send.bytes(c.row), (local + c.col[i]).p,
                    local.bytes(ld), local.bytes(c.width[i]), static_cast<size_t>(N));
      at += c.width[i];
    }
  }
}

// The inverse: recv [cp][N][group row] -> local [N, ld].
void from_head_groups(const LayerDims& d, CRef recv, Ref local, int64_t ld, bool qkv) {
  const int64_t N = d.N();
  for (int j = 0; j < d.cp.size; ++j) {
    const GroupColumns c = group_columns(d, j, qkv);
    int64_t at = 0;
    for (int i = 0; i < c.count; ++i) {
      d.be->copy_2d((local + c.col[i]).p, local.bytes(ld), (recv + j * N * c.row + at).p,
                    recv.bytes(c.row), recv.bytes(c.width[i]), static_cast<size_t>(N));
      at += c.width[i];
    }
  }
}

// recv [cp][B][T/cp][w] (block r: rank r's chunks of every sample) -> whole [B][seq][w], every
// chunk at its place in the sample; `to_local` the other way.
void chunks_to_whole(const LayerDims& d, CRef recv, Ref whole, int64_t w) {
  const ContextSplit& s = d.cp;
  const int64_t c = s.chunk(), L = s.local();
  for (int r = 0; r < s.size; ++r)
    for (int64_t b = 0; b < d.B; ++b)
      for (int k = 0; k < 2; ++k)
        d.be->copy((whole + (b * s.seq + s.chunk_start(r, k)) * w).p,
                   (recv + ((r * d.B + b) * L + k * c) * w).p, whole.bytes(c * w));
}

void whole_to_chunks(const LayerDims& d, CRef whole, Ref send, int64_t w) {
  const ContextSplit& s = d.cp;
  const int64_t c = s.chunk(), L = s.local();
  for (int r = 0; r < s.size; ++r)
    for (int64_t b = 0; b < d.B; ++b)
      for (int k = 0; k < 2; ++k)
        d.be->copy((send + ((r * d.B + b) * L + k * c) * w).p,
                   (whole + (b * s.seq + s.chunk_start(r, k)) * w).p, send.bytes(c * w));
}

void all_to_all(const LayerDims& d, Ref send, Ref recv, int64_t n) {
  const Device dev = d.be->device();
  d.cp.group->all_to_all(Tensor(send.p, Shape{n}, send.t, dev),
                         Tensor(recv.p, Shape{n}, recv.t, dev));
}

// This rank's tokens [N, ld] -> head group rows of whole sequences [B][seq][ld/cp].
void to_whole_sequences(const LayerDims& d, const LayerScratch& s, CRef local, int64_t ld, bool qkv,
                        Ref whole) {
  to_head_groups(d, local, ld, s.cp_send, qkv);
  all_to_all(d, s.cp_send, s.cp_recv, int64_t{d.N()} * ld);
  chunks_to_whole(d, s.cp_recv, whole, ld / d.cp.size);
}

// The inverse of to_whole_sequences (`whole` may be s.cp_recv).
void to_own_tokens(const LayerDims& d, const LayerScratch& s, CRef whole, int64_t ld, bool qkv,
                   Ref local) {
  whole_to_chunks(d, whole, s.cp_send, ld / d.cp.size);
  all_to_all(d, s.cp_send, s.cp_recv, int64_t{d.N()} * ld);
  from_head_groups(d, s.cp_recv, local, ld, qkv);
}

struct HeadGroup {
  int heads, kv_heads, width, row, first_head;
};

HeadGroup head_group(const LayerDims& d) {
  const int g = d.cp.size;
  return {d.H / g, d.KV / g, d.Cl / g, d.qkv_width() / g, d.head_begin + d.cp.rank * (d.H / g)};
}

}  // namespace

void context_attention_forward(const LayerDims& d, const LayerScratch& s, CRef qkv, Ref qkv_heads,
                               float* lse, Ref atty, const DropoutParams& drop) {
  const HeadGroup h = head_group(d);
  const int T = d.cp.seq;
  to_whole_sequences(d, s, qkv, d.qkv_width(), true, qkv_heads);
  if (d.rope)
    d.be->rope_forward(qkv_heads, d.B, T, h.heads, h.kv_heads, d.head_dim(), d.rope_table);
  const int64_t rows = int64_t{h.heads} * T;
  for (int b = 0; b < d.B; ++b)
    d.be->attention_forward(s.cp_out + int64_t{b} * T * h.width, lse + b * rows,
                            CRef(qkv_heads) + int64_t{b} * T * h.row, 1, T, h.width, h.heads,
                            h.kv_heads, tp::head_slice(drop, b, d.heads_total, h.first_head, T));
  to_own_tokens(d, s, s.cp_out, d.Cl, false, atty);
}

void context_attention_backward(const LayerDims& d, const LayerScratch& s, CRef datty,
                                CRef qkv_heads, const float* lse, CRef atty, Ref dqkv,
                                const DropoutParams& drop) {
  const HeadGroup h = head_group(d);
  const int T = d.cp.seq;
  // The output (attention's D = rowsum(dO·O)) and its gradient, head-split like the forward.
  to_whole_sequences(d, s, atty, d.Cl, false, s.cp_out);
  to_whole_sequences(d, s, datty, d.Cl, false, s.cp_dout);
  const Ref dheads = s.cp_recv;  // free once the gradient above is in place
  const int64_t rows = int64_t{h.heads} * T;
  for (int b = 0; b < d.B; ++b) {
    const int64_t q = int64_t{b} * T * h.row, o = int64_t{b} * T * h.width;
    d.be->attention_backward(dheads + q, s.delta + b * rows, CRef(s.cp_dout) + o, qkv_heads + q,
                             CRef(s.cp_out) + o, lse + b * rows, 1, T, h.width, h.heads, h.kv_heads,
                             tp::head_slice(drop, b, d.heads_total, h.first_head, T));
  }
  if (d.rope) d.be->rope_backward(dheads, d.B, T, h.heads, h.kv_heads, d.head_dim(), d.rope_table);
  to_own_tokens(d, s, dheads, d.qkv_width(), true, dqkv);
}

}  // namespace zt
