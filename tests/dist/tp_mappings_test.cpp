// The tensor-parallel building blocks on their own, at tp = world size: the conjugate mappings
// (values and CommStats counts), and the vocab-parallel cross-entropy against the single-rank
// kernel on the full logits, including shards that are partly or entirely vocabulary padding.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/ops.h"
#include "src/comm/topology.h"
#include "src/tensor_parallel/mappings.h"
#include "src/tensor_parallel/sequence_parallel.h"
#include "src/tensor_parallel/vocab_parallel_cross_entropy.h"
#include "tests/dist/dist_util.h"

namespace zt::dist {
namespace {

using comm::CommOp;
using comm::GroupKind;

float full_value(int64_t r, int64_t c) {
  return static_cast<float>(r * 100 + c);
}

TEST(TpMappings, ScatterGatherCopyReduce) {
  comm::Topology topo(world(), world().size());
  comm::Communicator* tp = &topo.tp();
  const int n = tp->size(), me = tp->rank();
  const int64_t rows = 3, cl = 5, cols = cl * n;
  std::vector<float> full(static_cast<size_t>(rows * cols)), local(static_cast<size_t>(rows * cl));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) full[static_cast<size_t>(r * cols + c)] = full_value(r, c);
  comm::StepCommMeter meter(topo.stats());
  meter.begin_step();

  tp::scatter_last_dim_forward(cpu_backend(), tp, local.data(), full.data(), rows, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cl; ++c)
      EXPECT_EQ(local[static_cast<size_t>(r * cl + c)], full_value(r, me * cl + c));

  std::vector<float> back(full.size(), -1.0f), scratch(full.size());
  tp::gather_last_dim_forward(cpu_backend(), tp, back.data(), local.data(), rows, cl,
                              scratch.data());
  EXPECT_EQ(back, full);
  std::vector<float> dlocal(local.size());
  tp::gather_last_dim_backward(cpu_backend(), tp, dlocal.data(), full.data(), rows, cl);
  EXPECT_EQ(dlocal, local);
  std::fill(back.begin(), back.end(), -1.0f);
  tp::scatter_last_dim_backward(cpu_backend(), tp, back.data(), local.data(), rows, cols,
                                scratch.data());
  EXPECT_EQ(back, full);

  // copy-to-TP backward and reduce-from-TP forward sum over the group; their other halves are
  // the identity and move nothing.
  std::vector<float> x(7, static_cast<float>(me + 1));
  tp::copy_to_tp_forward(cpu_backend(), tp, x.data(), 7);
  EXPECT_EQ(x[0], static_cast<float>(me + 1));
  tp::copy_to_tp_backward(cpu_backend(), tp, x.data(), 7);
  EXPECT_EQ(x[3], static_cast<float>(n * (n + 1) / 2));
  tp::reduce_from_tp_backward(cpu_backend(), tp, x.data(), 7);
  tp::reduce_from_tp_forward(cpu_backend(), tp, x.data(), 7);
  EXPECT_EQ(x[6], static_cast<float>(n * n * (n + 1) / 2));

  const comm::CommSnapshot s = meter.end_step();
  EXPECT_EQ(s.at(GroupKind::Tp, CommOp::AllGather).calls, 2u);
  EXPECT_EQ(s.at(GroupKind::Tp, CommOp::AllGather).elements, 2u * rows * cols);
  EXPECT_EQ(s.at(GroupKind::Tp, CommOp::AllReduce).calls, 2u);
  EXPECT_EQ(s.at(GroupKind::Tp, CommOp::AllReduce).bytes, 2u * 2 * 7 * 4);
}

// Sequence parallelism: each rank holds a contiguous block of rows; gather and reduce-scatter are
// each other's backward, and together they move what one all-reduce moves.
TEST(TpMappings, SequenceParallelGatherScatterReduceScatter) {
  comm::Topology topo(world(), world().size());
  comm::Communicator* tp = &topo.tp();
  const int n = tp->size(), me = tp->rank();
  const int64_t rows = 4 * n, c = 3, m = rows / n * c;
  EXPECT_EQ(tp::sequence_rows(tp, rows), 4);
  EXPECT_EQ(tp::sequence_first_row(tp, rows), 4 * me);
  std::vector<float> full(static_cast<size_t>(rows * c)), local(static_cast<size_t>(m));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < c; ++k) full[static_cast<size_t>(r * c + k)] = full_value(r, k);
  comm::StepCommMeter meter(topo.stats());
  meter.begin_step();

  tp::sequence_scatter_forward(cpu_backend(), tp, local.data(), full.data(), rows, c);
  for (int64_t i = 0; i < m; ++i)
    EXPECT_EQ(local[static_cast<size_t>(i)], full[static_cast<size_t>(4 * me * c + i)]);
  std::vector<float> back(full.size(), -1.0f);
  tp::sequence_gather_forward(cpu_backend(), tp, back.data(), local.data(), rows, c);
  EXPECT_EQ(back, full);

  // Every rank's partial is (rank + 1)·full: the reduce-scatter leaves Σ(rank + 1)·full on this
  // rank's rows, and its backward (an all-gather) hands every rank the whole result.
  std::vector<float> partial(full.size());
  for (size_t i = 0; i < full.size(); ++i) partial[i] = static_cast<float>(me + 1) * full[i];
  tp::sequence_reduce_scatter_forward(cpu_backend(), tp, local.data(), partial.data(), rows, c);
  const float sum = static_cast<float>(n * (n + 1) / 2);
  for (int64_t i = 0; i < m; ++i)
    EXPECT_EQ(local[static_cast<size_t>(i)], sum * full[static_cast<size_t>(4 * me * c + i)]);
  tp::sequence_reduce_scatter_backward(cpu_backend(), tp, back.data(), local.data(), rows, c);
  for (size_t i = 0; i < full.size(); ++i) EXPECT_EQ(back[i], sum * full[i]);
  tp::sequence_gather_backward(cpu_backend(), tp, local.data(), partial.data(), rows, c);
  for (int64_t i = 0; i < m; ++i)
    EXPECT_EQ(local[static_cast<size_t>(i)], sum * full[static_cast<size_t>(4 * me * c + i)]);

  const comm::CommSnapshot s = meter.end_step();
  EXPECT_EQ(s.at(GroupKind::Tp, CommOp::AllGather).calls, 2u);
  EXPECT_EQ(s.at(GroupKind::Tp, CommOp::ReduceScatter).calls, 2u);
  EXPECT_EQ(s.at(GroupKind::Tp, CommOp::AllReduce).calls, 0u);
}

// vocab 10 padded to 16: with tp = 4 the shards are [0,4) [4,8) [8,12) (two real columns)
// [12,16) (padding only); with tp = 2 [0,8) [8,16).
// ColumnParallelLinear with gather_output, composed from the mappings as Megatron composes it
// (the local linear layer, then gather along the last dim; backward: keep this rank's block,
// the local backward, copy-to-TP backward): every rank ends with the full output, and the
// backward from the full output gradient gives the full input gradient and this rank's rows of
// the weight gradient — as the unsplit linear layer does.
TEST(TpColumnParallel, GatheredOutputMatchesTheFullLinear) {
  comm::Topology topo(world(), world().size());
  comm::Communicator* tp = &topo.tp();
  const int n = tp->size(), me = tp->rank();
  const int N = 5, in = 6, ol = 3, out = ol * n;
  auto val = [](int a, int b, int salt) {
    return std::sin(static_cast<float>(a * 31 + b * 7 + salt)) * 0.5f;
  };
  std::vector<float> x(N * in), w(out * in), b(out), dy(N * out);
  for (int i = 0; i < N; ++i)
    for (int k = 0; k < in; ++k) x[static_cast<size_t>(i * in + k)] = val(i, k, 1);
  for (int o = 0; o < out; ++o) {
    b[static_cast<size_t>(o)] = val(o, 0, 2);
    for (int k = 0; k < in; ++k) w[static_cast<size_t>(o * in + k)] = val(o, k, 3);
    for (int i = 0; i < N; ++i) dy[static_cast<size_t>(i * out + o)] = val(i, o, 4);
  }
  std::vector<float> y_ref(N * out), dx_ref(N * in), dw_ref(out * in, 0.0f), db_ref(out, 0.0f);
  cpu::Kernels::linear_forward(y_ref.data(), x.data(), w.data(), b.data(), N, in, out);
  cpu::Kernels::linear_backward(dx_ref.data(), dw_ref.data(), db_ref.data(), dy.data(), x.data(),
                                w.data(), N, in, out, false);
  // This rank's shard: output rows [me·ol, (me+1)·ol).
  const float* w_r = w.data() + me * ol * in;
  const float* b_r = b.data() + me * ol;
  std::vector<float> y(N * out), y_local(N * ol), scratch(N * out);
  Backend& be = cpu_backend();
  be.linear_forward(y_local.data(), x.data(), w_r, b_r, N, in, ol);
  tp::gather_last_dim_forward(be, tp, y.data(), y_local.data(), N, ol, scratch.data());
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], y_ref[i], 1e-5f) << i;
  std::vector<float> dx(N * in), dw(ol * in, 0.0f), db(ol, 0.0f), dy_local(N * ol);
  tp::gather_last_dim_backward(be, tp, dy_local.data(), dy.data(), N, ol);
  be.linear_backward(dx.data(), dw.data(), db.data(), dy_local.data(), x.data(), w_r, N, in, ol,
                     false);
  tp::copy_to_tp_backward(be, tp, dx.data(), int64_t{N} * in);
  for (size_t i = 0; i < dx.size(); ++i) EXPECT_NEAR(dx[i], dx_ref[i], 1e-5f) << i;
  for (int o = 0; o < ol; ++o) {
    EXPECT_NEAR(db[static_cast<size_t>(o)], db_ref[static_cast<size_t>(me * ol + o)], 1e-5f);
    for (int k = 0; k < in; ++k)
      EXPECT_NEAR(dw[static_cast<size_t>(o * in + k)],
                  dw_ref[static_cast<size_t>((me * ol + o) * in + k)], 1e-5f);
  }
}

TEST(TpCrossEntropy, MatchesTheFullKernelAndExcludesPadding) {
  comm::Topology topo(world(), world().size());
  comm::Communicator* tp = &topo.tp();
  const int N = 6, V = 16, v_real = 10;
  const tp::VocabRange range = tp::vocab_range(V, tp->size(), tp->rank());
  std::vector<float> logits(static_cast<size_t>(N * V));
  std::vector<int32_t> targets(N);
  for (int n = 0; n < N; ++n) {
    targets[static_cast<size_t>(n)] = (3 * n + 1) % v_real;
    for (int v = 0; v < V; ++v)
      logits[static_cast<size_t>(n * V + v)] =
          v < v_real ? std::sin(0.7f * static_cast<float>(n * V + v)) * 3.0f : 50.0f;  // padding
  }
  std::vector<float> local(static_cast<size_t>(N * range.local));
  for (int n = 0; n < N; ++n)
    for (int v = 0; v < range.local; ++v)
      local[static_cast<size_t>(n * range.local + v)] =
          logits[static_cast<size_t>(n * V + range.begin + v)];
  std::vector<float> want_loss(N), got_loss(N), scratch(3 * N);
  const float dloss = 0.25f;
  cpu::Kernels::softmax_cross_entropy(logits.data(), want_loss.data(), targets.data(), N, V, v_real,
                                      dloss);
  tp::vocab_parallel_cross_entropy(cpu_backend(), tp, local.data(), got_loss.data(), targets.data(),
                                   N, range, v_real, dloss, scratch.data());
  for (int n = 0; n < N; ++n) {
    EXPECT_NEAR(got_loss[static_cast<size_t>(n)], want_loss[static_cast<size_t>(n)],
                1e-6 * std::abs(want_loss[static_cast<size_t>(n)]));
    for (int v = 0; v < range.local; ++v)
      EXPECT_NEAR(local[static_cast<size_t>(n * range.local + v)],
                  logits[static_cast<size_t>(n * V + range.begin + v)], 1e-7)
          << "dlogits row " << n << " column " << range.begin + v;
  }
}

}  // namespace
}  // namespace zt::dist
