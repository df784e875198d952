#include "src/pipeline/exchange.h"

#include <algorithm>

namespace zt::pipeline {

std::vector<int> round_ends(const ScheduleShape& s, const std::vector<Step>& steps) {
  const int n = static_cast<int>(steps.size());
  // A stage that runs every forward before its first backward (Megatron-LM's
  // all_warmup_microbatches) has no steady phase: every step is a round.
  const auto first_backward = std::find_if(steps.begin(), steps.end(),
                                           [](const Step& x) { return x.kind == Step::Backward; });
  const bool steady = std::any_of(first_backward, steps.end(),
                                  [](const Step& x) { return x.kind == Step::Forward; });
  std::vector<int> end(steps.size());
  for (int i = 0; i < n;) {
    const auto u = static_cast<size_t>(i);
    const bool pair = s.chunks > 1 && steady && i + 1 < n && steps[u].kind == Step::Forward &&
                      steps[u + 1].kind == Step::Backward;
    const int e = i + (pair ? 2 : 1);
    for (; i < e; ++i) end[static_cast<size_t>(i)] = e;
  }
  return end;
}

std::vector<std::vector<P2pOp>> exchange_groups(const ScheduleShape& s,
                                                const std::vector<Step>& steps, int stage) {
  const std::vector<int> end = round_ends(s, steps);
  const int n = static_cast<int>(steps.size());
  auto receives = [&](int from, int to, std::vector<P2pOp>& out) {
    for (int k = from; k < to; ++k)
      if (step_receives(s, stage, steps[static_cast<size_t>(k)]))
        out.push_back(receive_of(s, stage, steps[static_cast<size_t>(k)]));
  };
  std::vector<std::vector<P2pOp>> groups;
  std::vector<P2pOp> g;
  if (n > 0) receives(0, end[0], g);
  if (!g.empty()) groups.push_back(std::move(g));
  for (int i = 0; i < n; i = end[static_cast<size_t>(i)]) {
    const int e = end[static_cast<size_t>(i)];
    g.clear();
    for (int k = i; k < e; ++k)
      if (step_sends(s, stage, steps[static_cast<size_t>(k)]))
        g.push_back(send_of(s, stage, steps[static_cast<size_t>(k)]));
    if (e < n) receives(e, end[static_cast<size_t>(e)], g);
    if (!g.empty()) groups.push_back(g);
  }
  return groups;
}

std::string check_exchange(const ScheduleShape& s) {
  std::vector<std::vector<std::vector<P2pOp>>> train, eval;
  for (int st = 0; st < s.stages; ++st) {
    train.push_back(exchange_groups(s, stage_schedule(s, st), st));
    eval.push_back(exchange_groups(s, forward_only_schedule(s), st));
  }
  std::string why = check_rendezvous(s, train);
  if (why.empty()) why = check_rendezvous(s, eval);
  return why;
}

SendPlan exchange_sends(const ScheduleShape& s, int stage, bool training) {
  SendPlan plan = training ? train_sends(s, stage) : eval_sends(s, stage);
  const std::vector<int> end =
      round_ends(s, training ? stage_schedule(s, stage) : forward_only_schedule(s));
  std::vector<int> live(end.size(), 0);
  for (size_t i = 0; i < end.size(); ++i) {
    int& at = plan.join_at[i];
    if (at < 0) continue;
    at = std::max(at, end[i]);
    for (int x = static_cast<int>(i); x < at && x < static_cast<int>(end.size()); ++x)
      ++live[static_cast<size_t>(x)];
  }
  plan.buffers = 0;
  for (int l : live) plan.buffers = std::max(plan.buffers, l);
  return plan;
}

}  // namespace zt::pipeline
