#include "src/pipeline/schedule.h"

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>

#include <fmt/format.h>

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
  // megatron-core's get_pp_rank_microbatches (micro-batch groups of P per chunk, its default):
  // with m = P the later stages too run a steady phase, unlike Megatron-LM's older rule of every
  // forward first whenever m = P.
  int warmup = 0;
  if (s.chunks == 1)
    warmup = std::min(s.stages - stage - 1, s.micro_batches);
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

bool sends_complete(const ScheduleShape& s, const std::vector<std::vector<Step>>& steps,
                    const std::vector<SendPlan>& plans) {
  const int P = s.stages, V = s.stages * s.chunks, m = s.micro_batches;
  // Per message (kind, micro-batch, receiving virtual stage): its receive posted, it sent.
  const auto messages = static_cast<size_t>(2 * m * V);
  std::vector<char> posted(messages, 0), sent(messages, 0);
  auto id = [&](Step::Kind kind, int mb, int vs) {
    return (static_cast<size_t>(kind) * static_cast<size_t>(m) + static_cast<size_t>(mb)) *
               static_cast<size_t>(V) +
           static_cast<size_t>(vs);
  };
  // The message step x of `stage` receives, or sends; messages.size() when none.
  auto in = [&](int stage, const Step& x) {
    const int vs = virtual_stage(s, stage, x.chunk);
    if (x.kind == Step::Forward) return vs > 0 ? id(x.kind, x.micro_batch, vs) : messages;
    return vs < V - 1 ? id(x.kind, x.micro_batch, vs) : messages;
  };
  auto out = [&](int stage, const Step& x) {
    const int vs = virtual_stage(s, stage, x.chunk);
    if (x.kind == Step::Forward) return vs < V - 1 ? id(x.kind, x.micro_batch, vs + 1) : messages;
    return vs > 0 ? id(x.kind, x.micro_batch, vs - 1) : messages;
  };
  // Per stage and step: the earlier steps whose sends it joins.
  std::vector<std::vector<std::vector<int>>> joins(static_cast<size_t>(P));
  for (int st = 0; st < P; ++st) {
    const auto u = static_cast<size_t>(st);
    joins[u].resize(steps[u].size() + 1);
    for (size_t i = 0; i < plans[u].join_at.size(); ++i)
      if (plans[u].join_at[i] >= 0)
        joins[u][static_cast<size_t>(plans[u].join_at[i])].push_back(static_cast<int>(i));
  }
  std::vector<size_t> next(static_cast<size_t>(P), 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int st = 0; st < P; ++st) {
      const auto u = static_cast<size_t>(st);
      for (; next[u] <= steps[u].size(); ++next[u], progress = true) {
        const bool end = next[u] == steps[u].size();
        if (!end) {
          const size_t msg = in(st, steps[u][next[u]]);
          if (msg < messages) {
            posted[msg] = 1;
            if (!sent[msg]) break;
          }
        }
        bool blocked = false;
        for (int j : joins[u][next[u]])
          blocked |= !posted[out(st, steps[u][static_cast<size_t>(j)])];
        if (blocked) break;
        if (end) continue;
        if (const size_t msg = out(st, steps[u][next[u]]); msg < messages) sent[msg] = 1;
      }
    }
  }
  for (int st = 0; st < P; ++st)
    if (next[static_cast<size_t>(st)] <= steps[static_cast<size_t>(st)].size()) return false;
  return true;
}

namespace {

// Each send joined at its proof or when the `buffers`-th send after it needs its buffer.
SendPlan bound_sends(SendPlan plan, int buffers) {
  std::vector<size_t> sends;
  for (size_t i = 0; i < plan.join_at.size(); ++i)
    if (plan.join_at[i] >= 0) sends.push_back(i);
  for (size_t k = 0; k + static_cast<size_t>(buffers) < sends.size(); ++k) {
    int& at = plan.join_at[sends[k]];
    at = std::min(at, static_cast<int>(sends[k + static_cast<size_t>(buffers)]));
  }
  std::vector<int> live(plan.join_at.size(), 0);
  for (size_t i = 0; i < plan.join_at.size(); ++i)
    for (int x = static_cast<int>(i); x >= 0 && x < plan.join_at[i]; ++x)
      ++live[static_cast<size_t>(x)];
  plan.buffers = 0;
  for (int l : live) plan.buffers = std::max(plan.buffers, l);
  return plan;
}

std::vector<SendPlan> all_train_sends(const ScheduleShape& s) {
  std::vector<std::vector<Step>> steps;
  for (int st = 0; st < s.stages; ++st) steps.push_back(stage_schedule(s, st));
  std::vector<SendPlan> proven;
  int most = 0;
  for (int st = 0; st < s.stages; ++st) {
    proven.push_back(plan_sends(s, steps, st));
    most = std::max(most, proven.back().buffers);
  }
  // Interleaved: one buffer can complete (m = P) but makes a stage wait for its receiver's
  // compute in the warm-up; two never add to the bubble (pipeline_schedule_test).
  for (int k = s.chunks > 1 ? 2 : 1; k < most; ++k) {
    std::vector<SendPlan> bounded;
    for (const SendPlan& p : proven) bounded.push_back(bound_sends(p, k));
    if (sends_complete(s, steps, bounded)) return bounded;
  }
  return proven;
}

}  // namespace

SendPlan train_sends(const ScheduleShape& s, int stage) {
  // The planner asks for every stage of a shape in turn, and each answer needs every stage's.
  static std::mutex mu;
  static std::map<std::tuple<int, int, int>, std::vector<SendPlan>> cache;
  const std::lock_guard<std::mutex> lock(mu);
  auto [it, fresh] = cache.try_emplace({s.stages, s.micro_batches, s.chunks});
  if (fresh) it->second = all_train_sends(s);
  return it->second.at(static_cast<size_t>(stage));
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

bool step_receives(const ScheduleShape& s, int stage, const Step& x) {
  const int vs = virtual_stage(s, stage, x.chunk), V = s.stages * s.chunks;
  return x.kind == Step::Forward ? vs > 0 : vs < V - 1;
}

bool step_sends(const ScheduleShape& s, int stage, const Step& x) {
  const int vs = virtual_stage(s, stage, x.chunk), V = s.stages * s.chunks;
  return x.kind == Step::Forward ? vs < V - 1 : vs > 0;
}

namespace {
// Edge e joins virtual stages e and e + 1.
int message_id(const ScheduleShape& s, int micro_batch, int edge, bool gradient) {
  return (micro_batch * s.stages * s.chunks + edge) * 2 + (gradient ? 1 : 0);
}
}  // namespace

P2pOp receive_of(const ScheduleShape& s, int stage, const Step& x) {
  const int P = s.stages, vs = virtual_stage(s, stage, x.chunk);
  if (x.kind == Step::Forward)
    return {false, (stage + P - 1) % P, message_id(s, x.micro_batch, vs - 1, false)};
  return {false, (stage + 1) % P, message_id(s, x.micro_batch, vs, true)};
}

P2pOp send_of(const ScheduleShape& s, int stage, const Step& x) {
  const int P = s.stages, vs = virtual_stage(s, stage, x.chunk);
  if (x.kind == Step::Forward)
    return {true, (stage + 1) % P, message_id(s, x.micro_batch, vs, false)};
  return {true, (stage + P - 1) % P, message_id(s, x.micro_batch, vs - 1, true)};
}

bool send_pairs_with_next_receive(const ScheduleShape& s, int stage, const std::vector<Step>& steps,
                                  size_t i) {
  return i + 1 < steps.size() && step_sends(s, stage, steps[i]) &&
         step_receives(s, stage, steps[i + 1]);
}

std::vector<std::vector<P2pOp>> p2p_groups(const ScheduleShape& s, const std::vector<Step>& steps,
                                           int stage, bool paired) {
  std::vector<std::vector<P2pOp>> groups;
  bool posted = false;  // the current step's receive went out with the previous send
  for (size_t i = 0; i < steps.size(); ++i) {
    if (step_receives(s, stage, steps[i]) && !posted)
      groups.push_back({receive_of(s, stage, steps[i])});
    posted = false;
    if (!step_sends(s, stage, steps[i])) continue;
    groups.push_back({send_of(s, stage, steps[i])});
    if (paired && send_pairs_with_next_receive(s, stage, steps, i)) {
      groups.back().push_back(receive_of(s, stage, steps[i + 1]));
      posted = true;
    }
  }
  return groups;
}

std::string check_paired_p2p(const ScheduleShape& s) {
  std::vector<std::vector<std::vector<P2pOp>>> train, eval;
  for (int st = 0; st < s.stages; ++st) {
    train.push_back(p2p_groups(s, stage_schedule(s, st), st, true));
    eval.push_back(p2p_groups(s, forward_only_schedule(s), st, true));
  }
  std::string why = check_rendezvous(s, train);
  if (why.empty()) why = check_rendezvous(s, eval);
  return why;
}

std::string check_rendezvous(const ScheduleShape& s,
                             const std::vector<std::vector<std::vector<P2pOp>>>& groups) {
  const int P = s.stages;
  ZT_CHECK(groups.size() == static_cast<size_t>(P), "{} stages' groups for {} stages",
           groups.size(), P);
  // Where each operation's match is: the k-th send a -> b meets b's k-th receive from a.
  struct Where {
    int group = -1, op = -1;
  };
  auto channel = [P](int from, int to) { return static_cast<size_t>(from * P + to); };
  std::vector<std::vector<Where>> sends(static_cast<size_t>(P * P)), recvs(sends.size());
  std::vector<std::vector<std::vector<Where>>> match(static_cast<size_t>(P));
  for (int r = 0; r < P; ++r) {
    const auto& g = groups[static_cast<size_t>(r)];
    match[static_cast<size_t>(r)].resize(g.size());
    for (size_t k = 0; k < g.size(); ++k) {
      match[static_cast<size_t>(r)][k].resize(g[k].size());
      for (size_t o = 0; o < g[k].size(); ++o) {
        const P2pOp& op = g[k][o];
        (op.send ? sends[channel(r, op.peer)] : recvs[channel(op.peer, r)])
            .push_back({static_cast<int>(k), static_cast<int>(o)});
      }
    }
  }
  for (int a = 0; a < P; ++a)
    for (int b = 0; b < P; ++b) {
      const auto& out = sends[channel(a, b)];
      const auto& in = recvs[channel(a, b)];
      if (out.size() != in.size())
        return fmt::format("stage {} sends {} messages to stage {}, which receives {}", a,
                           out.size(), b, in.size());
      for (size_t k = 0; k < out.size(); ++k) {
        const P2pOp& x = groups[static_cast<size_t>(a)][static_cast<size_t>(out[k].group)]
                               [static_cast<size_t>(out[k].op)];
        const P2pOp& y = groups[static_cast<size_t>(b)][static_cast<size_t>(in[k].group)]
                               [static_cast<size_t>(in[k].op)];
        if (x.message != y.message)
          return fmt::format(
              "message {} from stage {} to {} is matched by its receive of message {}", k, a, b,
              y.message);
        match[static_cast<size_t>(a)][static_cast<size_t>(out[k].group)]
             [static_cast<size_t>(out[k].op)] = in[k];
        match[static_cast<size_t>(b)][static_cast<size_t>(in[k].group)]
             [static_cast<size_t>(in[k].op)] = out[k];
      }
    }
  std::vector<size_t> at(static_cast<size_t>(P), 0);
  std::vector<std::vector<char>> done(static_cast<size_t>(P));
  auto enter = [&](int r) {
    const auto& g = groups[static_cast<size_t>(r)];
    if (at[static_cast<size_t>(r)] < g.size())
      done[static_cast<size_t>(r)].assign(g[at[static_cast<size_t>(r)]].size(), 0);
  };
  for (int r = 0; r < P; ++r) enter(r);
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < P; ++r) {
      const auto u = static_cast<size_t>(r);
      if (at[u] >= groups[u].size()) continue;
      const auto& group = groups[u][at[u]];
      for (size_t o = 0; o < group.size(); ++o) {
        if (done[u][o]) continue;
        const int peer = group[o].peer;
        const Where w = match[u][at[u]][o];
        if (at[static_cast<size_t>(peer)] != static_cast<size_t>(w.group)) continue;
        done[u][o] = 1;
        done[static_cast<size_t>(peer)][static_cast<size_t>(w.op)] = 1;
        progress = true;
      }
      if (std::all_of(done[u].begin(), done[u].end(), [](char d) { return d != 0; })) {
        ++at[u];
        enter(r);
        progress = true;
      }
    }
  }
  std::string stuck;
  for (int r = 0; r < P; ++r) {
    const auto u = static_cast<size_t>(r);
    if (at[u] >= groups[u].size()) continue;
    std::string ops;
    for (const P2pOp& op : groups[u][at[u]])
      ops += fmt::format("{}{} {} stage {}", ops.empty() ? "" : " + ", op.send ? "send" : "recv",
                         op.send ? "to" : "from", op.peer);
    stuck += fmt::format("{}stage {} at group {} of {} ({})", stuck.empty() ? "" : "; ", r, at[u],
                         groups[u].size(), ops);
  }
  return stuck.empty() ? std::string() : "deadlock: " + stuck;
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
