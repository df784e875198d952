#pragma once
// A discrete-event model of one rank's training step: tasks on resources (the compute stream,
// one communication stream per group kind, the host copy engine), each resource running its
// tasks one at a time in the order they were added — as a CUDA stream, or the one thread that
// issues MPI calls, does — and each task starting once its resource is free and every task it
// depends on has finished. What waits on what is the dependency list, so overlap is whatever the
// schedule allows, not an assumption: a gather issued early hides behind the compute it runs
// beside, one issued late is exposed, and a pipeline's bubble is the time its stages wait.
#include <cstdint>
#include <string>
#include <vector>

#include "src/pipeline/schedule.h"

namespace zt::sim {

class Schedule {
 public:
  // A resource (stream) by name; the same name gives the same resource.
  int resource(const std::string& name);
  // Makes `alias` run on `target`'s stream: a resource whose work needs the other's hardware
  // (collectives that progress on the compute cores of a CPU rank).
  void share(const std::string& alias, const std::string& target);
  // A task of `ms` on `res` after every task in `deps` (ids returned by add). Deps may name tasks
  // added later (another stage's, in a pipeline), as long as the order is not circular.
  int add(int res, double ms, std::vector<int> deps = {});
  // Adds `dep` to the dependencies of `task`.
  void depend(int task, int dep);
  size_t size() const { return tasks_.size(); }

  struct Result {
    std::vector<double> start, finish;  // per task, ms
    std::vector<double> busy;           // per resource, ms
    double makespan = 0;
  };
  // Runs the schedule; throws zt::Error when it deadlocks (a resource's next task waits on one
  // that cannot start).
  Result run() const;
  const std::vector<std::string>& resource_names() const { return names_; }

 private:
  struct Task {
    int res;
    double ms;
    std::vector<int> deps;
  };
  std::vector<Task> tasks_;
  std::vector<std::string> names_;
  std::vector<int> target_;  // the resource a name runs on
};

// A pipeline's step (pipeline::stage_schedule's order on every stage: 1F1B, or interleaved with
// chunks > 1) as an event schedule: each stage's compute stream runs its steps in order, a
// forward after the previous virtual stage's forward of that micro-batch has arrived, a backward
// after the next virtual stage's backward has arrived and after its own forward; each hand-over
// is `transfer` ms on the sender's p2p stream (on its compute stream when !p2p_overlaps, as on
// CPU ranks). `forward`/`backward`: per stage, one micro-batch through all its chunks.
struct PipelineRun {
  double makespan = 0;
  double busy = 0;             // compute summed over the stages
  double bubble_fraction = 0;  // 1 - busy / (P · makespan)
};
PipelineRun pipeline_events(const pipeline::ScheduleShape& shape,
                            const std::vector<double>& forward, const std::vector<double>& backward,
                            double transfer, bool p2p_overlaps = true);

}  // namespace zt::sim
