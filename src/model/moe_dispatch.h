#pragma once
// Expert parallelism's token dispatch for a mixture-of-experts layer (docs/design/moe.md,
// Dispatch): the row counts exchanged over the expert-parallel group, the rows to the experts
// that own them and back by all_to_all_v, permuted between peer order and expert-major order;
// and the context group's sum of each expert's choices. Without expert parallelism the rows stay
// on the rank and only the slot dispatch runs.
#include "src/model/moe_mlp.h"

namespace zt {

bool expert_parallel(const LayerDims& d);
// The experts this rank runs: all E, or its E/ep.
int local_experts(const LayerDims& d);
// From h.rows32 (as forward leaves them): the rows each of this rank's experts runs and where
// they start, and with expert parallelism the elements sent to and received from each peer.
void expert_rows(const LayerDims& d, MoeHost& h);
// Each rank learns how many rows every peer sends each of its experts (into h.rows32[E, 2E)):
// an all-to-all of E/ep counts per peer, in fp32 (exact below 2^24 rows), through the device as
// the rows will go.
void exchange_counts(const LayerDims& d, MoeHost& h, const LayerScratch& s);
// h.picks: the choices each expert drew from the micro-batch's whole sequences, this rank's
// summed over the context group (fp32, exact below 2^24), so the load-balancing loss is the
// one-rank run's.
void count_picks(const LayerDims& d, MoeHost& h, const LayerScratch& s);
// Rows between this rank and its peers: `send` holds the rows for each peer in peer order, and
// `recv` takes each peer's; `back` is the return direction (the experts' results going home).
void exchange_rows(const LayerDims& d, const MoeHost& h, CRef send, Ref recv, bool back);
// Received rows (peer by peer, each peer's expert by expert) into expert-major order (each of
// this rank's experts' rows peer by peer), or back with `to_peers`.
void permute_rows(const LayerDims& d, MoeHost& h, Ref dst, CRef src, bool to_peers);
// The token rows x to this rank's experts' input rows, expert-major, in s.moe_rows_in: each to
// its slots (expert-major over all E experts, so peer by peer) and, with expert parallelism,
// through s.moe_drows (free in forward and in moe_backward_params) to the peers and permuted.
void rows_to_experts(const LayerDims& d, MoeHost& h, const LayerScratch& s, const int32_t* slots,
                     CRef x);
// The experts' output rows (expert-major, in s.moe_recv) back to the ranks whose tokens they
// are, into `dst` in slot order (through s.moe_rows_in).
void rows_to_peers(const LayerDims& d, MoeHost& h, const LayerScratch& s, Ref dst);

}  // namespace zt
