#include "src/planner/event_sim.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "src/core/error.h"

namespace zt::sim {

int Schedule::resource(const std::string& name) {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return target_[i];
  names_.push_back(name);
  target_.push_back(static_cast<int>(names_.size() - 1));
  return target_.back();
}

void Schedule::share(const std::string& alias, const std::string& target) {
  const int t = resource(target);
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == alias) {
      ZT_CHECK(std::none_of(tasks_.begin(), tasks_.end(),
                            [&](const Task& k) { return k.res == static_cast<int>(i); }),
               "resource '{}' shared after tasks were added to it", alias);
      target_[i] = t;
      return;
    }
  names_.push_back(alias);
  target_.push_back(t);
}

int Schedule::add(int res, double ms, std::vector<int> deps) {
  ZT_CHECK(res >= 0 && static_cast<size_t>(res) < names_.size(), "unknown resource {}", res);
  tasks_.push_back({res, std::max(0.0, ms), std::move(deps)});
  return static_cast<int>(tasks_.size() - 1);
}

void Schedule::depend(int task, int dep) {
  tasks_.at(static_cast<size_t>(task)).deps.push_back(dep);
}

Schedule::Result Schedule::run() const {
  const size_t n = tasks_.size(), R = names_.size();
  // Each resource's queue in issue order.
  std::vector<std::vector<int>> queue(R);
  for (size_t i = 0; i < n; ++i)
    queue[static_cast<size_t>(tasks_[i].res)].push_back(static_cast<int>(i));
  std::vector<size_t> head(R, 0);
  std::vector<double> free_at(R, 0.0);
  Result r;
  r.start.assign(n, -1);
  r.finish.assign(n, -1);
  r.busy.assign(R, 0.0);
  std::vector<char> done(n, 0);
  size_t finished = 0;
  while (finished < n) {
    bool progressed = false;
    for (size_t q = 0; q < R; ++q) {
      while (head[q] < queue[q].size()) {
        const int id = queue[q][head[q]];
        const Task& t = tasks_[static_cast<size_t>(id)];
        double ready = free_at[q];
        bool ok = true;
        for (int d : t.deps) {
          ZT_CHECK(d >= 0 && static_cast<size_t>(d) < n, "task {} depends on unknown task {}", id,
                   d);
          if (!done[static_cast<size_t>(d)]) {
            ok = false;
            break;
          }
          ready = std::max(ready, r.finish[static_cast<size_t>(d)]);
        }
        if (!ok) break;
        r.start[static_cast<size_t>(id)] = ready;
        r.finish[static_cast<size_t>(id)] = ready + t.ms;
        free_at[q] = ready + t.ms;
        r.busy[q] += t.ms;
        done[static_cast<size_t>(id)] = 1;
        ++head[q];
        ++finished;
        progressed = true;
        r.makespan = std::max(r.makespan, ready + t.ms);
      }
    }
    ZT_CHECK(progressed, "event schedule deadlocks: {} of {} tasks cannot start", n - finished, n);
  }
  return r;
}

PipelineRun pipeline_events(const pipeline::ScheduleShape& shape,
                            const std::vector<double>& forward, const std::vector<double>& backward,
                            double transfer, bool p2p_overlaps) {
  pipeline::validate(shape);
  const int P = shape.stages, V = P * shape.chunks;
  ZT_CHECK(forward.size() == static_cast<size_t>(P) && backward.size() == static_cast<size_t>(P),
           "pipeline_events: {} stages, {} forward and {} backward times", P, forward.size(),
           backward.size());
  Schedule s;
  std::vector<int> compute, p2p;
  for (int st = 0; st < P; ++st) {
    const std::string c = "compute " + std::to_string(st), t = "p2p " + std::to_string(st);
    if (!p2p_overlaps) s.share(t, c);
    compute.push_back(s.resource(c));
    p2p.push_back(s.resource(t));
  }
  // (kind, micro-batch, virtual stage) -> its compute task, and its outgoing transfer.
  std::map<std::tuple<int, int, int>, int> task, sent;
  double busy = 0;
  for (int st = 0; st < P; ++st) {
    const double f = forward[static_cast<size_t>(st)] / shape.chunks;
    const double b = backward[static_cast<size_t>(st)] / shape.chunks;
    for (const pipeline::Step& p : pipeline::stage_schedule(shape, st)) {
      const int vs = pipeline::virtual_stage(shape, st, p.chunk);
      const bool fw = p.kind == pipeline::Step::Forward;
      const int id = s.add(compute[static_cast<size_t>(st)], fw ? f : b);
      busy += fw ? f : b;
      task[{fw ? 0 : 1, p.micro_batch, vs}] = id;
      if ((fw && vs < V - 1) || (!fw && vs > 0))
        sent[{fw ? 0 : 1, p.micro_batch, vs}] = s.add(p2p[static_cast<size_t>(st)], transfer, {id});
    }
  }
  for (const auto& [key, id] : task) {
    const auto [kind, mb, vs] = key;
    if (kind == 0 && vs > 0) s.depend(id, sent.at({0, mb, vs - 1}));
    if (kind == 1 && vs < V - 1) s.depend(id, sent.at({1, mb, vs + 1}));
    if (kind == 1) s.depend(id, task.at({0, mb, vs}));
  }
  PipelineRun r;
  r.makespan = s.run().makespan;
  r.busy = busy;
  r.bubble_fraction = r.makespan > 0 ? std::max(0.0, 1 - busy / (P * r.makespan)) : 0;
  return r;
}

}  // namespace zt::sim
