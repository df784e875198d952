#include "src/model/context_ring.h"

#include "src/tensor_parallel/rng_tracker.h"

namespace zt {
namespace {

// The ring's neighbours: keys and values go to the next rank and come from the previous one.
struct Ring {
  int C, rank, next, prev;
  explicit Ring(const ContextSplit& s)
      : C(s.size),
        rank(s.rank),
        next((s.rank + 1) % s.size),
        prev((s.rank + s.size - 1) % s.size) {}
  int source(int step) const { return (rank - step % C + C) % C; }  // whose keys step `step` holds
};

// Tags of the two exchanges that can be in flight together between the same neighbours.
constexpr int kKeysTag = 0;
constexpr int kGradsTag = 1;

Tensor whole(void* p, int64_t n, DType t, const LayerDims& d) {
  return {p, Shape{n}, t, d.be->device()};
}

// Posts this step's hop: `send` to the next rank, `recv` from the previous one.
std::pair<comm::Handle, comm::Handle> hop(const LayerDims& d, const Ring& r, Tensor send,
                                          Tensor recv, int tag) {
  return d.cp.group->send_recv_async(send, r.next, tag, recv, r.prev, tag);
}

void wait(std::pair<comm::Handle, comm::Handle>& h) {
  h.first.wait();
  h.second.wait();
}

// The block of this rank's chunk b.q of sample rows against chunk b.kv of rank src's, the q rows
// strided ldq in qkv, the keys and values [N, 2Ckv] in the ring buffer.
AttentionBlock block_of(const LayerDims& d, const RingBlock& b, int src) {
  const ContextSplit& s = d.cp;
  const int c = s.chunk();
  return {c,
          c,
          s.chunk_start(s.rank, b.q),
          s.chunk_start(src, b.kv),
          s.seq,
          d.qkv_width(),
          2 * int64_t{d.Ckv},
          s.local()};
}

// Rotary embeddings on this rank's rows at their places in the whole sample (or the inverse).
void rope_at_positions(const LayerDims& d, Ref x, bool inverse) {
  const ContextSplit& s = d.cp;
  const int c = s.chunk(), L = s.local();
  for (int b = 0; b < d.B; ++b)
    for (int k = 0; k < 2; ++k) {
      const Ref rows = x + (int64_t{b} * L + int64_t{k} * c) * d.qkv_width();
      const int pos = s.chunk_start(s.rank, k);
      if (inverse)
        d.be->rope_backward_at(rows, c, pos, d.H, d.KV, d.head_dim(), d.rope_table);
      else
        d.be->rope_forward_at(rows, c, pos, d.H, d.KV, d.head_dim(), d.rope_table);
    }
}

// dst (in T) = src (fp32), n elements.
void round_into(const LayerDims& d, Ref dst, const float* src, int64_t n) {
  switch (dst.t) {
    case DType::F32:
      d.be->copy(dst.p, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::BF16:
      d.be->cast(dst.as<bf16>(), src, n);
      return;
    case DType::F16:
      d.be->cast(dst.as<fp16>(), src, n);
      return;
  }
}

}  // namespace

void ring_attention_forward(const LayerDims& d, const LayerScratch& s, Ref qkv, float* lse,
                            Ref atty, const DropoutParams& drop) {
  const Ring r(d.cp);
  const int L = d.cp.local(), c = d.cp.chunk();
  const int64_t W = d.qkv_width(), kv = 2 * int64_t{d.Ckv}, n = int64_t{d.N()} * kv;
  if (d.rope) rope_at_positions(d, qkv, false);
  copy_rows(d, s.ring_kv[0], kv, CRef(qkv) + d.Cl, W, kv, d.N());
  for (int step = 0; step < r.C; ++step) {
    const Ref held = s.ring_kv[step % 2];
    std::pair<comm::Handle, comm::Handle> next;
    if (step + 1 < r.C)
      next = hop(d, r, whole(held.p, n, held.t, d),
                 whole(s.ring_kv[(step + 1) % 2].p, n, held.t, d), kKeysTag);
    const int src = r.source(step);
    for (int b = 0; b < d.B; ++b) {
      const DropoutParams db = tp::head_slice(drop, b, d.heads_total, d.head_begin, d.cp.seq);
      bool started[2] = {step > 0, step > 0};  // the first block of a query chunk writes
      for (const RingBlock& blk : d.cp.ring_blocks(r.rank, src)) {
        const int64_t q_row = int64_t{b} * L + int64_t{blk.q} * c;
        const int64_t kv_row = int64_t{b} * L + int64_t{blk.kv} * c;
        d.be->attention_block_forward(s.ring_acc + q_row * d.Cl,
                                      lse + int64_t{b} * d.H * L + blk.q * c, CRef(qkv) + q_row * W,
                                      CRef(held) + kv_row * kv, d.Cl, d.H, d.KV,
                                      block_of(d, blk, src), started[blk.q], db);
        started[blk.q] = true;
      }
    }
    wait(next);
  }
  round_into(d, atty, s.ring_acc, int64_t{d.N()} * d.Cl);
}

void ring_attention_backward(const LayerDims& d, const LayerScratch& s, Ref datty, CRef qkv,
                             const float* lse, CRef atty, Ref dqkv, const DropoutParams& drop) {
  const Ring r(d.cp);
  const int L = d.cp.local(), c = d.cp.chunk();
  const int64_t W = d.qkv_width(), kv = 2 * int64_t{d.Ckv}, n = int64_t{d.N()} * kv;
  copy_rows(d, s.ring_kv[0], kv, qkv + d.Cl, W, kv, d.N());
  d.be->fill_zero(s.ring_acc, static_cast<size_t>(d.N()) * d.Cl * sizeof(float));
  d.be->fill_zero(s.ring_dkv[0], static_cast<size_t>(n) * sizeof(float));
  std::pair<comm::Handle, comm::Handle> grads;
  for (int step = 0; step < r.C; ++step) {
    const Ref held = s.ring_kv[step % 2];
    float* dheld = s.ring_dkv[step % 2];
    std::pair<comm::Handle, comm::Handle> next;
    if (step + 1 < r.C)
      next = hop(d, r, whole(held.p, n, held.t, d),
                 whole(s.ring_kv[(step + 1) % 2].p, n, held.t, d), kKeysTag);
    wait(grads);  // the gradients of the keys at hand, from the previous rank
    const int src = r.source(step);
    for (int b = 0; b < d.B; ++b) {
      const DropoutParams db = tp::head_slice(drop, b, d.heads_total, d.head_begin, d.cp.seq);
      for (const RingBlock& blk : d.cp.ring_blocks(r.rank, src)) {
        const int64_t q_row = int64_t{b} * L + int64_t{blk.q} * c;
        const int64_t kv_row = int64_t{b} * L + int64_t{blk.kv} * c;
        d.be->attention_block_backward(
            s.ring_acc + q_row * d.Cl, dheld + kv_row * kv, s.delta, CRef(datty) + q_row * d.Cl,
            atty + q_row * d.Cl, qkv + q_row * W, CRef(held) + kv_row * kv,
            lse + int64_t{b} * d.H * L + blk.q * c, d.Cl, d.H, d.KV, block_of(d, blk, src), db);
      }
    }
    // The key and value gradients go on with their keys; after the last step they reach their
    // own rank.
    grads = hop(d, r, whole(dheld, n, DType::F32, d),
                whole(s.ring_dkv[(step + 1) % 2], n, DType::F32, d), kGradsTag);
    wait(next);
  }
  wait(grads);
  // Both into dqkv in T: the query gradient through datty's rows (read no more), the key and
  // value gradients through the keys' buffer.
  round_into(d, datty, s.ring_acc, int64_t{d.N()} * d.Cl);
  copy_rows(d, dqkv, W, datty, d.Cl, d.Cl, d.N());
  round_into(d, s.ring_kv[0], s.ring_dkv[r.C % 2], n);
  copy_rows(d, dqkv + d.Cl, W, s.ring_kv[0], kv, kv, d.N());
  if (d.rope) rope_at_positions(d, dqkv, true);
}

}  // namespace zt
