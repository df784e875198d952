// The pipeline schedules: completeness, Megatron-LM's orders, memory in flight, and the bubble
// their simulation gives against the closed forms.
#include "src/pipeline/schedule.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "src/core/error.h"

namespace zt::pipeline {
namespace {

using K = Step::Kind;

std::vector<ScheduleShape> shapes() {
  std::vector<ScheduleShape> out;
  for (int p : {1, 2, 3, 4, 8})
    for (int m : {1, 2, 4, 8, 12, 16})
      for (int v : {1, 2, 3}) {
        const ScheduleShape s{p, m, v};
        if (v > 1 && (p == 1 || m % p != 0)) continue;
        out.push_back(s);
      }
  return out;
}

TEST(PipelineSchedule, EveryStepExactlyOnceAndBackwardAfterForward) {
  for (const ScheduleShape& s : shapes())
    for (int st = 0; st < s.stages; ++st) {
      std::set<std::tuple<int, int, int>> seen;
      std::set<std::pair<int, int>> forwarded;
      for (const Step& x : stage_schedule(s, st)) {
        EXPECT_TRUE(seen.insert({x.kind, x.micro_batch, x.chunk}).second);
        if (x.kind == K::Forward)
          forwarded.insert({x.micro_batch, x.chunk});
        else
          EXPECT_TRUE(forwarded.count({x.micro_batch, x.chunk}));
      }
      EXPECT_EQ(seen.size(), static_cast<size_t>(2 * s.micro_batches * s.chunks));
    }
}

TEST(PipelineSchedule, OneFOneBOrder) {
  const ScheduleShape s{4, 8, 1};
  const std::vector<Step> want{
      {K::Forward, 0, 0},  {K::Forward, 1, 0},  {K::Forward, 2, 0},  {K::Forward, 3, 0},
      {K::Backward, 0, 0}, {K::Forward, 4, 0},  {K::Backward, 1, 0}, {K::Forward, 5, 0},
      {K::Backward, 2, 0}, {K::Forward, 6, 0},  {K::Backward, 3, 0}, {K::Forward, 7, 0},
      {K::Backward, 4, 0}, {K::Backward, 5, 0}, {K::Backward, 6, 0}, {K::Backward, 7, 0}};
  EXPECT_EQ(stage_schedule(s, 0), want);
  // The last stage has no warm-up: forward and backward alternate from the start.
  const std::vector<Step> last = stage_schedule(s, 3);
  for (int k = 0; k < 8; ++k) {
    EXPECT_EQ(last[static_cast<size_t>(2 * k)], (Step{K::Forward, k, 0}));
    EXPECT_EQ(last[static_cast<size_t>(2 * k + 1)], (Step{K::Backward, k, 0}));
  }
}

TEST(PipelineSchedule, InterleavedOrderIsMegatrons) {
  // P 2, v 2, m 4, stage 0: warm-up (2-0-1)·2 + (2-1)·2 = 4 forwards; micro-batches in groups of
  // P through chunk 0 then chunk 1; backwards start from the last chunk.
  const ScheduleShape s{2, 4, 2};
  const std::vector<Step> want{
      {K::Forward, 0, 0},  {K::Forward, 1, 0},  {K::Forward, 0, 1},  {K::Forward, 1, 1},
      {K::Forward, 2, 0},  {K::Backward, 0, 1}, {K::Forward, 3, 0},  {K::Backward, 1, 1},
      {K::Forward, 2, 1},  {K::Backward, 0, 0}, {K::Forward, 3, 1},  {K::Backward, 1, 0},
      {K::Backward, 2, 1}, {K::Backward, 3, 1}, {K::Backward, 2, 0}, {K::Backward, 3, 0}};
  EXPECT_EQ(stage_schedule(s, 0), want);
}

// megatron-core 0.16's order, from tests/fixtures/make_megatron_core_schedule.py's port of its
// scheduling logic: every rank of every shape there (m = P included, where its warm-up rule
// differs from Megatron-LM's older every-forward-first).
TEST(PipelineSchedule, InterleavedOrderIsMegatronCore016s) {
  std::ifstream f(std::string(ZT_FIXTURES) + "/megatron_core_interleaved_orders.txt");
  ASSERT_TRUE(f.good());
  int shapes = 0, with_m_equal_p = 0;
  for (std::string line; std::getline(f, line);) {
    std::istringstream in(line);
    int p = 0, v = 0, m = 0, rank = 0;
    char colon = 0;
    in >> p >> v >> m >> rank >> colon;
    ASSERT_EQ(colon, ':') << line;
    std::vector<Step> want;
    for (std::string w; in >> w;) {
      const size_t dot = w.find('.');
      want.push_back({w[0] == 'F' ? K::Forward : K::Backward, std::stoi(w.substr(1, dot - 1)),
                      std::stoi(w.substr(dot + 1))});
    }
    EXPECT_EQ(stage_schedule({p, m, v}, rank), want)
        << "P " << p << " v " << v << " m " << m << " rank " << rank;
    if (rank == 0) {
      ++shapes;
      with_m_equal_p += m == p ? 1 : 0;
    }
  }
  EXPECT_EQ(shapes, 48);
  EXPECT_EQ(with_m_equal_p, 12);
}

TEST(PipelineSchedule, FirstStageHoldsTheMostActivations) {
  for (int p : {2, 4, 8})
    for (int m : {1, 4, 16}) {
      const ScheduleShape s{p, m, 1};
      for (int st = 0; st < p; ++st) EXPECT_EQ(max_in_flight(s, st), std::min(m, p - st));
    }
}

TEST(PipelineSchedule, OneFOneBBubbleIsTheClosedForm) {
  for (int p : {1, 2, 4, 8})
    for (int m : {1, 2, 4, 8, 32}) {
      const SimResult r = simulate({p, m, 1}, {1.0, 2.0, 0.0, {}, {}});
      EXPECT_NEAR(r.bubble_fraction(), double(p - 1) / (m + p - 1), 1e-12) << p << " " << m;
      EXPECT_NEAR(r.makespan, 3.0 * (m + p - 1), 1e-9);
    }
}

TEST(PipelineSchedule, InterleavingShrinksTheBubble) {
  for (int p : {2, 4})
    for (int m : {8, 16}) {
      const double plain = simulate({p, m, 1}, {1.0, 2.0, 0.0, {}, {}}).bubble_fraction();
      const double two = simulate({p, m, 2}, {1.0, 2.0, 0.0, {}, {}}).bubble_fraction();
      EXPECT_LT(two, plain) << p << " " << m;
      // Megatron-LM's estimate for v chunks: (P-1) / (v·m + P - 1) of the run idle.
      EXPECT_NEAR(two, double(p - 1) / (2 * m + p - 1), 0.02) << p << " " << m;
    }
}

// Unequal stages (a heavier last stage, as the head and the loss make it): the last stage is
// busy m·4.5 after the first forward reaches it through the three others (3·1) and before the
// last gradient leaves them (3·2); the others idle the difference, a larger bubble than equal
// stages of either speed.
TEST(PipelineSchedule, AHeavierLastStageSetsThePace) {
  Timing t{1.0, 2.0, 0.0, {1.0, 1.0, 1.0, 1.5}, {2.0, 2.0, 2.0, 3.0}};
  const SimResult uneven = simulate({4, 8, 1}, t);
  EXPECT_NEAR(uneven.makespan, 3 * 1.0 + 8 * 4.5 + 3 * 2.0, 1e-9);
  EXPECT_NEAR(uneven.busy[3], 8 * 4.5, 1e-9);
  EXPECT_NEAR(uneven.bubble_fraction(), 1 - (3 * 8 * 3.0 + 8 * 4.5) / (4 * 45.0), 1e-12);
  EXPECT_GT(uneven.bubble_fraction(), 3.0 / 11);  // equal stages: (P-1)/(m+P-1)
}

TEST(PipelineSchedule, TransferLatencyAddsToTheBubble) {
  const double none = simulate({4, 8, 1}, {1.0, 2.0, 0.0, {}, {}}).bubble_fraction();
  const double some = simulate({4, 8, 1}, {1.0, 2.0, 0.1, {}, {}}).bubble_fraction();
  EXPECT_GT(some, none);
}

TEST(PipelineSchedule, ShapesWithoutASchedule) {
  EXPECT_THROW(validate({0, 4, 1}), InputError);
  EXPECT_THROW(validate({2, 0, 1}), InputError);
  EXPECT_THROW(validate({4, 6, 2}), InputError);  // m not a multiple of P
  EXPECT_THROW(validate({1, 4, 2}), InputError);  // interleaving without a pipeline
  EXPECT_NO_THROW(validate({4, 8, 2}));
}

// StageRunner's protocol, executed step by step for every stage at once: each step posts its
// receive, waits for the message, joins the sends its plan joins there (a join waits until the
// peer has posted that send's receive), computes and sends. Returns whether every stage
// finished (no deadlock) and how many joins had to wait. Written apart from sends_complete, which
// the plans are chosen by.
struct Protocol {
  bool finished = true;
  int waiting_joins = 0;
};
std::vector<std::vector<Step>> all_steps(const ScheduleShape& s, bool eval) {
  std::vector<std::vector<Step>> steps;
  for (int st = 0; st < s.stages; ++st)
    steps.push_back(eval ? forward_only_schedule(s) : stage_schedule(s, st));
  return steps;
}
std::vector<SendPlan> all_plans(const ScheduleShape& s, bool eval) {
  std::vector<SendPlan> plans;
  for (int st = 0; st < s.stages; ++st)
    plans.push_back(eval ? eval_sends(s, st) : train_sends(s, st));
  return plans;
}
using Msg = std::tuple<int, int, int>;  // kind, micro-batch, receiving virtual stage

// The message step x of stage st receives (in) or sends (out), and whether it has one.
std::pair<bool, Msg> message_in(const ScheduleShape& s, int st, const Step& x) {
  const int vs = virtual_stage(s, st, x.chunk), V = s.stages * s.chunks;
  if (x.kind == Step::Forward) return {vs > 0, {0, x.micro_batch, vs}};
  return {vs < V - 1, {1, x.micro_batch, vs}};
}
std::pair<bool, Msg> message_out(const ScheduleShape& s, int st, const Step& x) {
  const int vs = virtual_stage(s, st, x.chunk), V = s.stages * s.chunks;
  if (x.kind == Step::Forward) return {vs < V - 1, {0, x.micro_batch, vs + 1}};
  return {vs > 0, {1, x.micro_batch, vs - 1}};
}

Protocol run_protocol(const ScheduleShape& s, const std::vector<std::vector<Step>>& steps,
                      const std::vector<SendPlan>& plans) {
  const int P = s.stages;
  std::set<Msg> posted, sent;
  auto in = [&](int st, const Step& x) { return message_in(s, st, x); };
  auto out = [&](int st, const Step& x) { return message_out(s, st, x); };
  Protocol r;
  std::vector<size_t> next(static_cast<size_t>(P), 0);
  std::vector<std::vector<char>> joined(static_cast<size_t>(P)), counted(static_cast<size_t>(P));
  std::vector<int> unjoined(static_cast<size_t>(P), 0);
  for (size_t u = 0; u < steps.size(); ++u) {
    joined[u].assign(steps[u].size(), 0);
    counted[u].assign(steps[u].size(), 0);
  }
  for (bool progress = true; progress;) {
    progress = false;
    for (int st = 0; st < P; ++st) {
      const auto u = static_cast<size_t>(st);
      while (next[u] < steps[u].size()) {
        const Step& x = steps[u][next[u]];
        const auto [receives, msg] = in(st, x);
        if (receives) posted.insert(msg);
        if (receives && !sent.count(msg)) break;
        bool blocked = false;
        for (size_t j = 0; j < next[u]; ++j) {
          if (plans[u].join_at[j] != static_cast<int>(next[u]) || joined[u][j]) continue;
          if (!posted.count(out(st, steps[u][j]).second)) {
            if (!counted[u][j]) ++r.waiting_joins;
            counted[u][j] = 1;
            blocked = true;
            continue;
          }
          joined[u][j] = 1;
          --unjoined[u];
        }
        if (blocked) break;
        if (out(st, x).first) {
          sent.insert(out(st, x).second);
          ++unjoined[u];
          EXPECT_LE(unjoined[u], plans[u].buffers) << "stage " << st;
        }
        ++next[u];
        progress = true;
      }
    }
  }
  for (size_t u = 0; u < steps.size(); ++u) r.finished &= next[u] == steps[u].size();
  return r;
}

// The stages' plans complete under the protocol with one send buffer per stage under 1F1B, two
// interleaved (in the steady phase a forward's send to the next stage and a backward's to the
// previous are in flight together; with m = P one completes but waits: FewerBuffersAddNoBubble),
// where joining only on proof of the receive
// (plan_sends) never waits but holds the whole warm-up's outputs.
TEST(PipelineSends, ProtocolCompletesWithOneOrTwoBuffers) {
  for (int P : {2, 3, 4, 8})
    for (int v : {1, 2, 4})
      for (int mult : {1, 2, 8}) {
        const ScheduleShape s{P, P * mult, v};
        for (bool eval : {false, true}) {
          const auto steps = all_steps(s, eval);
          const auto plans = all_plans(s, eval);
          const Protocol r = run_protocol(s, steps, plans);
          EXPECT_TRUE(r.finished) << P << " stages, " << s.micro_batches << " micro-batches, " << v
                                  << " chunks, eval " << eval;
          EXPECT_TRUE(sends_complete(s, steps, plans));
          int most = 0;
          for (const SendPlan& p : plans) most = std::max(most, p.buffers);
          EXPECT_EQ(most, eval || v == 1 ? 1 : 2)
              << P << " " << s.micro_batches << " " << v << " eval " << eval;
          if (eval) continue;
          std::vector<SendPlan> proven;
          for (int st = 0; st < P; ++st) proven.push_back(plan_sends(s, steps, st));
          const Protocol q = run_protocol(s, steps, proven);
          EXPECT_TRUE(q.finished);
          EXPECT_EQ(q.waiting_joins, 0) << P << " " << s.micro_batches << " " << v;
          EXPECT_TRUE(sends_complete(s, steps, proven));
        }
      }
}

// The protocol in time: a step starts when its stage is free, its input has arrived and the
// receives of the sends it joins are posted (at the receiver's step start, or with its previous
// step's send); forward 1, backward 2 per stage, transfers instant. Returns the bubble fraction.
double timed_bubble(const ScheduleShape& s, const std::vector<std::vector<Step>>& steps,
                    const std::vector<SendPlan>& plans) {
  const int P = s.stages;
  std::map<Msg, double> sent, posted;
  auto in = [&](int st, const Step& x) { return message_in(s, st, x); };
  auto out = [&](int st, const Step& x) { return message_out(s, st, x); };
  const auto U = static_cast<size_t>(P);
  std::vector<size_t> next(U, 0);
  std::vector<double> free(U, 0), busy(U, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t u = 0; u < U; ++u)
      while (next[u] < steps[u].size()) {
        const int st = static_cast<int>(u);
        const size_t i = next[u];
        double t = free[u];
        if (const auto [r, m] = in(st, steps[u][i]); r) {
          posted.try_emplace(m, t);
          if (!sent.count(m)) break;
          t = std::max(t, sent[m]);
        }
        bool blocked = false;
        for (size_t j = 0; j < i && !blocked; ++j) {
          if (plans[u].join_at[j] != static_cast<int>(i)) continue;
          const Msg m = out(st, steps[u][j]).second;
          blocked = !posted.count(m);
          if (!blocked) t = std::max(t, posted[m]);
        }
        if (blocked) break;
        const double d = (steps[u][i].kind == Step::Forward ? 1.0 : 2.0) / s.chunks;
        free[u] = t + d;
        busy[u] += d;
        if (const auto [o, m] = out(st, steps[u][i]); o) {
          sent[m] = free[u];
          if (i + 1 < steps[u].size())
            if (const auto [r2, m2] = in(st, steps[u][i + 1]); r2) posted.try_emplace(m2, free[u]);
        }
        ++next[u];
        progress = true;
      }
  }
  double makespan = 0, work = 0;
  for (size_t u = 0; u < U; ++u) {
    EXPECT_EQ(next[u], steps[u].size());
    makespan = std::max(makespan, free[u]);
    work += busy[u];
  }
  return 1 - work / (P * makespan);
}

// Joining a send when its buffer is needed, rather than on proof alone, adds no wait to the
// schedule: the bubble is simulate()'s with either plan.
TEST(PipelineSends, FewerBuffersAddNoBubble) {
  for (int P : {2, 4, 8})
    for (int v : {1, 2, 3})
      for (int mult : {1, 2, 4}) {
        const ScheduleShape s{P, P * mult, v};
        const auto steps = all_steps(s, false);
        std::vector<SendPlan> proven;
        for (int st = 0; st < P; ++st) proven.push_back(plan_sends(s, steps, st));
        const double want = simulate(s, {1.0, 2.0, 0.0, {}, {}}).bubble_fraction();
        EXPECT_NEAR(timed_bubble(s, steps, all_plans(s, false)), want, 1e-12)
            << P << " " << s.micro_batches << " " << v;
        EXPECT_NEAR(timed_bubble(s, steps, proven), want, 1e-12);
      }
}

// Both models find the deadlock of joining every send before the next step computes in the
// interleaved steady phase (one buffer): the plans' second buffer is needed.
TEST(PipelineSends, OneBufferDeadlocksTheInterleavedSteadyPhase) {
  const ScheduleShape s{4, 8, 2};
  const auto steps = all_steps(s, false);
  std::vector<SendPlan> eager;
  for (int st = 0; st < s.stages; ++st) {
    SendPlan p = plan_sends(s, steps, st);
    for (size_t i = 0; i < p.join_at.size(); ++i)
      if (p.join_at[i] >= 0) p.join_at[i] = static_cast<int>(i) + 1;
    p.buffers = 1;
    eager.push_back(p);
  }
  EXPECT_FALSE(run_protocol(s, steps, eager).finished);
  EXPECT_FALSE(sends_complete(s, steps, eager));
}

TEST(PipelineSends, JoinsComeAfterTheSend) {
  const ScheduleShape s{4, 8, 2};
  for (int st = 0; st < 4; ++st) {
    const SendPlan p = train_sends(s, st);
    const auto steps = stage_schedule(s, st);
    ASSERT_EQ(p.join_at.size(), steps.size());
    for (size_t i = 0; i < steps.size(); ++i)
      if (p.join_at[i] >= 0) {
        EXPECT_GT(p.join_at[i], static_cast<int>(i));
      }
  }
}

std::vector<std::vector<std::vector<P2pOp>>> all_groups(const ScheduleShape& s, bool eval,
                                                        bool paired) {
  std::vector<std::vector<std::vector<P2pOp>>> g;
  for (int st = 0; st < s.stages; ++st)
    g.push_back(p2p_groups(s, eval ? forward_only_schedule(s) : stage_schedule(s, st), st, paired));
  return g;
}

// NCCL's rules (no tags, one stream per communicator, no buffering to rely on): with each send
// issued together with the next step's receive, 1F1B runs to the end for every shape, training
// and evaluation, and the messages between two stages are matched in the order they were meant;
// so does the interleaved schedule with as many micro-batches as stages. With more, its steady
// phase deadlocks under this pairing, and check_paired_p2p says so (pipeline_exchange_test: the
// batched rounds the stage runner issues order those shapes too).
TEST(PipelineP2pOrder, PairedSendsAndReceivesCompleteWithoutBuffering) {
  for (int P : {2, 3, 4, 8})
    for (int v : {1, 2, 4})
      for (int mult : {1, 2, 8}) {
        const ScheduleShape s{P, P * mult, v};
        const bool expected = v == 1 || mult == 1;
        for (bool eval : {false, true})
          EXPECT_EQ(check_rendezvous(s, all_groups(s, eval, true)).empty(), expected || eval)
              << P << " stages, " << s.micro_batches << " micro-batches, " << v << " chunks, eval "
              << eval;
        EXPECT_EQ(check_paired_p2p(s).empty(), expected) << P << " " << s.micro_batches << " " << v;
      }
}

// The model catches the order that relies on buffering: each operation alone, 1F1B over two
// stages deadlocks at once (stage 0 sends micro-batch 1 while stage 1's receive of it waits
// behind its send of micro-batch 0's gradient, which stage 0 receives only after).
TEST(PipelineP2pOrder, UnpairedOneFOneBDeadlocksWithoutBuffering) {
  const ScheduleShape s{2, 4, 1};
  const std::string why = check_rendezvous(s, all_groups(s, false, false));
  EXPECT_NE(why.find("deadlock: stage 0 at group 1 of"), std::string::npos) << why;
  EXPECT_NE(why.find("stage 1 at group 1 of"), std::string::npos) << why;
  // Evaluation has no backward messages: nothing to wait on in either order.
  EXPECT_EQ(check_rendezvous(s, all_groups(s, true, false)), "");
}

TEST(PipelineP2pOrder, MismatchedOrderIsNamed) {
  const ScheduleShape s{2, 2, 1};
  auto g = all_groups(s, true, true);
  std::swap(g[1][0], g[1][1]);  // stage 1 receives micro-batch 1 before micro-batch 0
  EXPECT_NE(check_rendezvous(s, g).find("is matched by its receive of message"), std::string::npos);
}

}  // namespace
}  // namespace zt::pipeline
