#pragma once
// Context parallelism: how a sample's tokens are split over the ranks of a context group.
//
// The sequence of T tokens is cut into 2·cp equal chunks and rank r holds chunks r and
// 2·cp−1−r, in that order (Megatron-core's layout): under the causal mask the first chunks attend
// to few keys and the last to many, so pairing them gives every rank the same attention work.
// Everything outside attention is per token and runs on a rank's own T/cp tokens; attention
// exchanges over the group, by a ring (src/model/context_ring.h) or an all-to-all
// (src/model/context_attention.h). A token keeps its place in the whole
// sample for everything that depends on it: its position (learned table, rotary angle) and its
// dropout counters, so cp ranks draw exactly the masks one rank draws.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "src/comm/communicator.h"
#include "src/model/gpt_config.h"

namespace zt {

// One block of ring attention (context_ring.h): this rank's chunk `q` (0 or 1: chunk r or
// 2·cp−1−r) of queries against chunk `kv` of the keys and values it holds at a ring step (those of
// some rank src), causal when both are the same chunk of the sequence.
struct RingBlock {
  int q = 0, kv = 0;
  bool diagonal = false;
};

struct ContextSplit {
  int size = 1;                          // ranks of the context group
  int rank = 0;                          // this rank's place in it
  int seq = 0;                           // tokens of a whole sample
  comm::Communicator* group = nullptr;   // null at size 1
  ContextComm comm = ContextComm::Ring;  // how attention exchanges (GptConfig::context_comm)

  bool active() const { return size > 1; }
  int local() const { return seq / size; }        // tokens of a sample this rank holds
  int chunk() const { return seq / (2 * size); }  // tokens of one chunk
  // The first position of rank r's chunk k (0: chunk r, 1: chunk 2·size−1−r).
  int chunk_start(int r, int k) const { return (k == 0 ? r : 2 * size - 1 - r) * chunk(); }
  // The position in the sample of this rank's token t (0 <= t < local()).
  int position(int t) const {
    if (!active()) return t;
    return chunk_start(rank, t / chunk()) + t % chunk();
  }
  // The chunk index in the sequence of rank r's chunk k.
  int chunk_index(int r, int k) const { return k == 0 ? r : 2 * size - 1 - r; }
  // The blocks rank r computes with the keys and values of rank src: every pair of its query
  // chunk and src's key chunk with the key chunk at or before the query chunk — three when
  // src = r (two causal), else two whole ones, so every rank's work is the same at every step.
  std::vector<RingBlock> ring_blocks(int r, int src) const {
    std::vector<RingBlock> out;
    for (int k = 0; k < 2; ++k)
      for (int m = 0; m < 2; ++m) {
        const int a = chunk_index(r, k), b = chunk_index(src, m);
        if (b <= a) out.push_back({k, m, a == b});
      }
    return out;
  }
  // `group` of size config.context_parallel (null: one rank).
  static ContextSplit of(const GptConfig& config, comm::Communicator* group);
};

// Calls fn(offset, n, whole_row) for each run of this rank's rows [first, first + rows) of its
// [B, local()] tokens that are consecutive positions of one sample: `offset` from `first`,
// `whole_row` = sample·seq + position, the run's first row in the [B, seq] whole batch. Without
// context parallelism a run is a sample's part of the rows.
template <typename F>
void for_each_run(const ContextSplit& s, int64_t first, int64_t rows, F&& fn) {
  const int64_t L = s.local(), run = s.active() ? s.chunk() : L;
  for (int64_t at = first; at < first + rows;) {
    const int64_t sample = at / L, t = at % L;
    const int64_t n = std::min(run - t % run, first + rows - at);
    fn(at - first, n, sample * s.seq + s.position(static_cast<int>(t)));
    at += n;
  }
}

// The runs of for_each_run clipped to positions [p0, p0 + n) (a chunk of a position table):
// fn(offset, position − p0, count) for each non-empty piece, `offset` from `first`.
template <typename F>
void for_each_run_in(const ContextSplit& s, int64_t first, int64_t rows, int64_t p0, int64_t n,
                     F&& fn) {
  for_each_run(s, first, rows, [&](int64_t at, int64_t len, int64_t whole_row) {
    const int64_t pos = whole_row % s.seq, lo = std::max(pos, p0), hi = std::min(pos + len, p0 + n);
    if (lo < hi) fn(at + lo - pos, lo - p0, hi - lo);
  });
}

// This rank's tokens of B whole samples: local [B, local()] from whole [B, seq] (host memory).
void keep_local_tokens(const ContextSplit& s, const int32_t* whole, int32_t* local, int B);

}  // namespace zt
