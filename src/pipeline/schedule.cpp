#include "src/pipeline/schedule.h"

#include <algorithm>
#include <limits>

#include "src/core/error.h"

namespace zt::pipeline {
namespace {

// The k-th forward (or backward) of an interleaved stage: micro-batches advance in groups of P,
// each group through every chunk before the next group starts; backwards visit the chunks in
// reverse (Megatron-LM's get_model_chunk_id / get_microbatch_id_in_model_chunk).
Step interleaved_step(const ScheduleShape& s, int k, Step::Kind kind) {
  const int group = s.stages * s.chunks;
  int chunk = (k % group) / s.stages;
  if (kind == Step::Backward) chunk = s.chunks - 1 - chunk;
  return {kind, (k / group) * s.stages + k % s.stages, chunk};
}

}  // namespace

void validate(const ScheduleShape& s) {
  ZT_REQUIRE(s.stages >= 1, "pipeline stages must be >= 1, got {}", s.stages);
  ZT_REQUIRE(s.micro_batches >= 1, "micro-batches per step must be >= 1, got {}", s.micro_batches);
  ZT_REQUIRE(s.chunks >= 1, "model chunks per stage must be >= 1, got {}", s.chunks);
  ZT_REQUIRE(s.chunks == 1 || s.stages > 1,
             "an interleaved schedule needs --pipeline-model-parallel-size > 1");
  ZT_REQUIRE(s.chunks == 1 || s.micro_batches % s.stages == 0,
             "the interleaved schedule needs the micro-batches per step ({}) to be a multiple of "
             "--pipeline-model-parallel-size ({})",
             s.micro_batches, s.stages);
}

std::vector<Step> stage_schedule(const ScheduleShape& s, int stage) {
  validate(s);
  ZT_CHECK(stage >= 0 && stage < s.stages, "stage {} of {}", stage, s.stages);
  const int total = s.micro_batches * s.chunks;
  int warmup = 0;
  if (s.chunks == 1)
    warmup = std::min(s.stages - stage - 1, s.micro_batches);
  else if (s.micro_batches == s.stages)
    warmup = total;  // every forward first: the steady phase would have nothing to overlap
  else
    warmup = std::min((s.stages - stage - 1) * 2 + (s.chunks - 1) * s.stages, total);
  auto step = [&](int k, Step::Kind kind) {
    return s.chunks == 1 ? Step{kind, k, 0} : interleaved_step(s, k, kind);
  };
  std::vector<Step> out;
  out.reserve(static_cast<size_t>(2 * total));
  for (int k = 0; k < warmup; ++k) out.push_back(step(k, Step::Forward));
  for (int k = 0; k < total - warmup; ++k) {
    out.push_back(step(warmup + k, Step::Forward));
    out.push_back(step(k, Step::Backward));
  }
  for (int k = total - warmup; k < total; ++k) out.push_back(step(k, Step::Backward));
  return out;
}

int max_in_flight(const ScheduleShape& s, int stage) {
  int live = 0, most = 0;
  for (const Step& st : stage_schedule(s, stage)) {
    live += st.kind == Step::Forward ? 1 : -1;
    most = std::max(most, live);
  }
  return most;
}

std::vector<Step> forward_only_schedule(const ScheduleShape& s) {
  validate(s);
  std::vector<Step> out;
  for (int m = 0; m < s.micro_batches; ++m)
    for (int c = 0; c < s.chunks; ++c) out.push_back({Step::Forward, m, c});
  return out;
}

SendPlan plan_sends(const ScheduleShape& s, const std::vector<std::vector<Step>>& steps,
                    int stage) {
  const int P = s.stages, V = s.stages * s.chunks, m = s.micro_batches;
  // Where each (kind, micro-batch, virtual stage) runs: its stage's step index.
  std::vector<int> index(static_cast<size_t>(2 * m * V), -1);
  auto key = [&](Step::Kind kind, int mb, int vs) {
    return (static_cast<size_t>(kind) * static_cast<size_t>(m) + static_cast<size_t>(mb)) *
               static_cast<size_t>(V) +
           static_cast<size_t>(vs);
  };
  for (int st = 0; st < P; ++st)
    for (size_t i = 0; i < steps[static_cast<size_t>(st)].size(); ++i) {
      const Step& x = steps[static_cast<size_t>(st)][i];
      index[key(x.kind, x.micro_batch, virtual_stage(s, st, x.chunk))] = static_cast<int>(i);
    }
  // The step a step receives from (receiving) or sends to: the neighbouring virtual stage's
  // same pass (forward: from the previous, to the next; backward the other way).
  struct Peer {
    int stage = -1, step = -1;
  };
  auto peer = [&](const Step& x, bool receiving) -> Peer {
    const int vs = virtual_stage(s, stage, x.chunk);
    const int other = (x.kind == Step::Forward) == receiving ? vs - 1 : vs + 1;
    if (other < 0 || other >= V) return {};
    const int at = index[key(x.kind, x.micro_batch, other)];
    ZT_CHECK(at >= 0, "stage {} exchanges with a step no stage runs", stage);
    return {other % P, at};
  };
  const auto& mine = steps[static_cast<size_t>(stage)];
  const int n = static_cast<int>(mine.size());
  SendPlan plan;
  plan.join_at.assign(mine.size(), -1);
  std::vector<int> live(mine.size(), 0);  // sends unjoined while each step computes
  for (int i = 0; i < n; ++i) {
    const Peer to = peer(mine[static_cast<size_t>(i)], false);
    if (to.stage < 0) continue;
    // Proof that the receiver has posted this send's receive: a message it sent from that
    // receiving step or a later one has arrived here (it posts a step's receive first).
    int at = n;
    for (int k = i + 1; k < n && at == n; ++k) {
      const Peer from = peer(mine[static_cast<size_t>(k)], true);
      if (from.stage == to.stage && from.step >= to.step) at = k;
    }
    plan.join_at[static_cast<size_t>(i)] = at;
    for (int x = i; x < at; ++x) ++live[static_cast<size_t>(x)];
  }
  for (int l : live) plan.buffers = std::max(plan.buffers, l);
  return plan;
}

SendPlan train_sends(const ScheduleShape& s, int stage) {
  std::vector<std::vector<Step>> steps;
  for (int st = 0; st < s.stages; ++st) steps.push_back(stage_schedule(s, st));
  return plan_sends(s, steps, stage);
}

SendPlan eval_sends(const ScheduleShape& s, int stage) {
  // Forward passes only: no stage receives from a later step of the schedule's order, so
  // waiting for a send at the very next step cannot wait on the waiter (unlike training, where
  // a stage's first receive from its next stage can be many steps away). One buffer.
  SendPlan plan = plan_sends(
      s, std::vector<std::vector<Step>>(static_cast<size_t>(s.stages), forward_only_schedule(s)),
      stage);
  for (size_t i = 0; i < plan.join_at.size(); ++i)
    if (plan.join_at[i] >= 0) plan.join_at[i] = static_cast<int>(i) + 1;
  plan.buffers = plan.buffers > 0 ? 1 : 0;
  return plan;
}

double SimResult::bubble_fraction() const {
  if (busy.empty() || makespan <= 0) return 0;
  double work = 0;
  for (double b : busy) work += b;
  return 1.0 - work / (static_cast<double>(busy.size()) * makespan);
}

SimResult simulate(const ScheduleShape& s, const Timing& t) {
  validate(s);
  const int P = s.stages, V = s.stages * s.chunks, m = s.micro_batches;
  const double never = -1;
  // Finish time of each (kind, micro-batch, virtual stage); `never` until it has run.
  std::vector<double> done(static_cast<size_t>(2 * m * V), never);
  auto at = [&](Step::Kind kind, int mb, int vs) -> double& {
    return done[(static_cast<size_t>(kind) * m + static_cast<size_t>(mb)) * V +
                static_cast<size_t>(vs)];
  };
  std::vector<std::vector<Step>> plan(static_cast<size_t>(P));
  for (int st = 0; st < P; ++st) plan[static_cast<size_t>(st)] = stage_schedule(s, st);
  std::vector<size_t> next(static_cast<size_t>(P), 0);
  std::vector<double> free_at(static_cast<size_t>(P), 0);
  SimResult r;
  r.busy.assign(static_cast<size_t>(P), 0);
  ZT_CHECK(t.stage_forward.empty() || (t.stage_forward.size() == static_cast<size_t>(P) &&
                                       t.stage_backward.size() == static_cast<size_t>(P)),
           "per-stage times for {} stages", P);
  auto duration = [&](size_t stage, Step::Kind kind) {
    const bool f = kind == Step::Forward;
    const double whole = t.stage_forward.empty() ? (f ? t.forward : t.backward)
                                                 : (f ? t.stage_forward : t.stage_backward)[stage];
    return whole / s.chunks;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int st = 0; st < P; ++st) {
      const auto u = static_cast<size_t>(st);
      while (next[u] < plan[u].size()) {
        const Step& step = plan[u][next[u]];
        const int vs = virtual_stage(s, st, step.chunk);
        double ready = 0;
        if (step.kind == Step::Forward) {
          if (vs > 0) {
            const double prev = at(Step::Forward, step.micro_batch, vs - 1);
            if (prev == never) break;
            ready = prev + t.transfer;
          }
        } else {
          ZT_CHECK(at(Step::Forward, step.micro_batch, vs) != never,
                   "backward before forward: stage {} micro-batch {}", st, step.micro_batch);
          if (vs < V - 1) {
            const double later = at(Step::Backward, step.micro_batch, vs + 1);
            if (later == never) break;
            ready = later + t.transfer;
          }
        }
        const double dur = duration(u, step.kind);
        const double start = std::max(free_at[u], ready);
        free_at[u] = start + dur;
        at(step.kind, step.micro_batch, vs) = free_at[u];
        r.busy[u] += dur;
        r.makespan = std::max(r.makespan, free_at[u]);
        ++next[u];
        progress = true;
      }
    }
  }
  for (int st = 0; st < P; ++st)
    ZT_CHECK(next[static_cast<size_t>(st)] == plan[static_cast<size_t>(st)].size(),
             "pipeline schedule deadlocks: stage {} stops at step {} of {}", st,
             next[static_cast<size_t>(st)], plan[static_cast<size_t>(st)].size());
  return r;
}

}  // namespace zt::pipeline
