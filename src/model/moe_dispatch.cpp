#include "src/model/moe_dispatch.h"

namespace zt {

bool expert_parallel(const LayerDims& d) {
  return d.ep != nullptr && d.ep->size() > 1;
}

int local_experts(const LayerDims& d) {
  return expert_parallel(d) ? d.moe.E / d.ep->size() : d.moe.E;
}

void expert_rows(const LayerDims& d, MoeHost& h) {
  const int E = d.moe.E, El = local_experts(d);
  const auto at = [&](int i) { return int64_t{h.rows32[static_cast<size_t>(i)]}; };
  for (int l = 0; l < El; ++l) {
    int64_t n = 0;
    if (El == E)
      n = at(l);
    else
      for (int s = 0; s < E / El; ++s) n += at(E + s * El + l);
    h.rows[static_cast<size_t>(l)] = n;
  }
  int64_t first = 0;
  for (int l = 0; l < El; ++l) {
    h.first[static_cast<size_t>(l)] = first;
    first += h.rows[static_cast<size_t>(l)];
  }
  h.first[static_cast<size_t>(El)] = first;
  if (El == E) return;
  for (int q = 0; q < E / El; ++q) {
    int64_t sent = 0, received = 0;
    for (int l = 0; l < El; ++l) {
      sent += at(q * El + l);
      received += at(E + q * El + l);
    }
    h.send_elems[static_cast<size_t>(q)] = sent * d.C;
    h.recv_elems[static_cast<size_t>(q)] = received * d.C;
  }
}

void exchange_counts(const LayerDims& d, MoeHost& h, const LayerScratch& s) {
  Backend& be = *d.be;
  const int E = d.moe.E;
  const auto n = static_cast<size_t>(E);
  for (size_t e = 0; e < n; ++e) h.counts[e] = static_cast<float>(h.rows32[e]);
  be.copy_to_device(s.moe_counts, h.counts.data(), n * 4);
  d.ep->all_to_all(Tensor(s.moe_counts, {E}, DType::F32, be.device()),
                   Tensor(s.moe_counts + E, {E}, DType::F32, be.device()));
  be.copy_to_host(h.counts.data() + E, s.moe_counts + E, n * 4);
  for (size_t e = 0; e < n; ++e) h.rows32[n + e] = static_cast<int32_t>(h.counts[n + e]);
}

void count_picks(const LayerDims& d, MoeHost& h, const LayerScratch& s) {
  const int E = d.moe.E;
  const auto n = static_cast<size_t>(E);
  if (!d.cp.active()) {
    for (size_t e = 0; e < n; ++e) h.picks[e] = h.slots.picks[e];
    return;
  }
  Backend& be = *d.be;
  for (size_t e = 0; e < n; ++e) h.counts[e] = static_cast<float>(h.slots.picks[e]);
  be.copy_to_device(s.moe_counts, h.counts.data(), n * 4);
  d.cp.group->all_reduce(Tensor(s.moe_counts, {E}, DType::F32, be.device()));
  be.copy_to_host(h.counts.data(), s.moe_counts, n * 4);
  for (size_t e = 0; e < n; ++e) h.picks[e] = static_cast<int64_t>(h.counts[e]);
}

void exchange_rows(const LayerDims& d, const MoeHost& h, CRef send, Ref recv, bool back) {
  const std::vector<int64_t>& out = back ? h.recv_elems : h.send_elems;
  const std::vector<int64_t>& in = back ? h.send_elems : h.recv_elems;
  int64_t n_out = 0, n_in = 0;
  for (size_t q = 0; q < out.size(); ++q) {
    n_out += out[q];
    n_in += in[q];
  }
  const Device dev = d.be->device();
  d.ep->all_to_all_v(Tensor(const_cast<void*>(send.p), {n_out}, send.t, dev), out,
                     Tensor(recv.p, {n_in}, recv.t, dev), in);
}

void permute_rows(const LayerDims& d, MoeHost& h, Ref dst, CRef src, bool to_peers) {
  const int E = d.moe.E, El = local_experts(d);
  const size_t row = src.bytes(d.C);
  for (int l = 0; l < El; ++l) h.cursor[static_cast<size_t>(l)] = h.first[static_cast<size_t>(l)];
  int64_t peer_at = 0;
  for (int q = 0; q < E / El; ++q)
    for (int l = 0; l < El; ++l) {
      const int64_t n = h.rows32[static_cast<size_t>(E + q * El + l)];
      int64_t& expert_at = h.cursor[static_cast<size_t>(l)];
      const int64_t from = to_peers ? expert_at : peer_at, to = to_peers ? peer_at : expert_at;
      if (n > 0) d.be->copy((dst + to * d.C).p, (src + from * d.C).p, static_cast<size_t>(n) * row);
      expert_at += n;
      peer_at += n;
    }
}

void rows_to_experts(const LayerDims& d, MoeHost& h, const LayerScratch& s, const int32_t* slots,
                     CRef x) {
  Backend& be = *d.be;
  if (!expert_parallel(d)) {
    be.moe_dispatch(s.moe_rows_in, x, slots, d.N(), d.moe.k, d.C);
    return;
  }
  be.moe_dispatch(s.moe_drows, x, slots, d.N(), d.moe.k, d.C);
  exchange_rows(d, h, s.moe_drows, s.moe_recv, false);
  permute_rows(d, h, s.moe_rows_in, s.moe_recv, false);
}

void rows_to_peers(const LayerDims& d, MoeHost& h, const LayerScratch& s, Ref dst) {
  permute_rows(d, h, s.moe_rows_in, s.moe_recv, true);
  exchange_rows(d, h, s.moe_rows_in, dst, true);
}

}  // namespace zt
