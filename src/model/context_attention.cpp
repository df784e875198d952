#include "src/model/context_attention.h"

#include "src/tensor_parallel/rng_tracker.h"

namespace zt {
namespace {

// How the heads of a tensor-parallel rank are dealt to its C context ranks: rank j takes query
// heads [j·H/C, (j+1)·H/C) and the key/value heads they read, KVg = KV/C of them, or, with fewer
// key/value heads than context ranks, the one its query heads share (`rep` = C/KV ranks take the
// same one). In the all-to-all's buffers head group j is one block of N rows: its query columns
// [N][ql], then (q|k|v) its key and value columns [N][2·kvl] — each part contiguous, so the
// gradients of a shared key/value head sum as whole blocks.
struct Groups {
  int C = 1, rep = 1;
  int64_t N = 0, ql = 0, kvl = 0, Cl = 0, Ckv = 0;
  int64_t row(bool qkv) const { return qkv ? ql + 2 * kvl : ql; }  // a row of one group
  int64_t kv_col(int j) const { return (j / rep) * kvl; }          // in the k (or v) columns
};

Groups groups_of(const LayerDims& d) {
  Groups g;
  g.C = d.cp.size;
  g.rep = d.KV < g.C ? g.C / d.KV : 1;
  g.N = d.N();
  g.ql = d.Cl / g.C;
  g.kvl = int64_t{d.Ckv} * g.rep / g.C;
  g.Cl = d.Cl;
  g.Ckv = d.Ckv;
  return g;
}

// local [N, ld] -> send [C][block]: block j holds head group j's columns of every row.
void to_blocks(const LayerDims& d, const Groups& g, CRef local, int64_t ld, Ref send, bool qkv) {
  for (int j = 0; j < g.C; ++j) {
    const Ref b = send + j * g.N * g.row(qkv);
    copy_rows(d, b, g.ql, local + j * g.ql, ld, g.ql, g.N);
    if (!qkv) continue;
    const Ref kv = b + g.N * g.ql;
    copy_rows(d, kv, 2 * g.kvl, local + g.Cl + g.kv_col(j), ld, g.kvl, g.N);
    copy_rows(d, kv + g.kvl, 2 * g.kvl, local + g.Cl + g.Ckv + g.kv_col(j), ld, g.kvl, g.N);
  }
}

// The inverse: recv [C][block] -> local [N, ld]. A key/value head shared by `rep` groups is taken
// from the first of them (sum_shared_kv has added the others' into it).
void from_blocks(const LayerDims& d, const Groups& g, CRef recv, Ref local, int64_t ld, bool qkv) {
  for (int j = 0; j < g.C; ++j) {
    const CRef b = recv + j * g.N * g.row(qkv);
    copy_rows(d, local + j * g.ql, ld, b, g.ql, g.ql, g.N);
    if (!qkv || j % g.rep != 0) continue;
    const CRef kv = b + g.N * g.ql;
    copy_rows(d, local + g.Cl + g.kv_col(j), ld, kv, 2 * g.kvl, g.kvl, g.N);
    copy_rows(d, local + g.Cl + g.Ckv + g.kv_col(j), ld, kv + g.kvl, 2 * g.kvl, g.kvl, g.N);
  }
}

// The key/value gradients of the groups that share a head, summed into the first's block.
void sum_shared_kv(const LayerDims& d, const Groups& g, Ref recv) {
  const int64_t block = g.N * g.row(true), kv = 2 * g.kvl * g.N;
  for (int j = 0; j < g.C; ++j)
    if (j % g.rep != 0)
      d.be->add_inplace(recv + (j - j % g.rep) * block + g.N * g.ql,
                        CRef(recv) + j * block + g.N * g.ql, kv);
}

// The rows of each block r (rank r's tokens: chunks r and 2C−1−r of each sample) to their places
// in the whole sequences [B][seq][row] (`to_whole`), or back.
void move_rows(const LayerDims& d, const Groups& g, Ref blocks, Ref whole, bool qkv,
               bool to_whole) {
  const ContextSplit& s = d.cp;
  const int64_t c = s.chunk(), L = s.local(), row = g.row(qkv);
  for (int r = 0; r < g.C; ++r)
    for (int64_t b = 0; b < d.B; ++b)
      for (int k = 0; k < 2; ++k) {
        const int64_t at = b * L + k * c, to = b * s.seq + s.chunk_start(r, k);
        const Ref blk = blocks + r * g.N * row;
        const Ref q = blk + at * g.ql, w = whole + to * row;
        if (to_whole)
          copy_rows(d, w, row, q, g.ql, g.ql, c);
        else
          copy_rows(d, q, g.ql, w, row, g.ql, c);
        if (!qkv) continue;
        const Ref kv = blk + g.N * g.ql + at * 2 * g.kvl;
        if (to_whole)
          copy_rows(d, w + g.ql, row, kv, 2 * g.kvl, 2 * g.kvl, c);
        else
          copy_rows(d, kv, 2 * g.kvl, w + g.ql, row, 2 * g.kvl, c);
      }
}

void all_to_all(const LayerDims& d, Ref send, Ref recv, int64_t n) {
  const Device dev = d.be->device();
  d.cp.group->all_to_all(Tensor(send.p, Shape{n}, send.t, dev),
                         Tensor(recv.p, Shape{n}, recv.t, dev));
}

// This rank's tokens [N, ld] -> head group rows of whole sequences [B][seq][row].
void to_whole_sequences(const LayerDims& d, const LayerScratch& s, CRef local, int64_t ld, bool qkv,
                        Ref whole) {
  const Groups g = groups_of(d);
  to_blocks(d, g, local, ld, s.cp_send, qkv);
  all_to_all(d, s.cp_send, s.cp_recv, g.C * g.N * g.row(qkv));
  move_rows(d, g, s.cp_recv, whole, qkv, true);
}

// The inverse of to_whole_sequences (`whole` may be s.cp_recv), the gradients of a shared
// key/value head summed.
void to_own_tokens(const LayerDims& d, const LayerScratch& s, Ref whole, int64_t ld, bool qkv,
                   Ref local) {
  const Groups g = groups_of(d);
  move_rows(d, g, s.cp_send, whole, qkv, false);
  all_to_all(d, s.cp_send, s.cp_recv, g.C * g.N * g.row(qkv));
  if (qkv && g.rep > 1) sum_shared_kv(d, g, s.cp_recv);
  from_blocks(d, g, s.cp_recv, local, ld, qkv);
}

// The attention kernel's view of this rank's head group.
struct HeadGroup {
  int heads, kv_heads, width, row, first_head;
};

HeadGroup head_group(const LayerDims& d) {
  const Groups g = groups_of(d);
  const int heads = d.H / g.C;
  return {heads, static_cast<int>(g.kvl / d.head_dim()), static_cast<int>(g.ql),
          static_cast<int>(g.row(true)), d.head_begin + d.cp.rank * heads};
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
