#pragma once
// Pipeline schedules: the order in which one pipeline stage runs the forward and backward passes
// of its micro-batches (Megatron-LM's forward_backward_pipelining_without_interleaving and
// _with_interleaving). Pure arithmetic, no communication: the trainer executes a stage's list in
// order (receiving a step's input from the previous virtual stage, sending its output to the
// next), the planner models the bubble with simulate(), and tests check both.
//
// A stage holds `chunks` model chunks (virtual stages, interleaving when > 1). Chunk c of stage s
// is virtual stage c·P + s, so the model's layers run through every stage once per chunk:
// virtual stage 0 holds the first layers (and the embedding), virtual stage v·P - 1 the last (and
// the head and the loss).
#include <cstdint>
#include <string>
#include <vector>

namespace zt::pipeline {

struct Step {
  enum Kind : uint8_t { Forward, Backward };
  Kind kind;
  int micro_batch;
  int chunk;
  bool operator==(const Step&) const = default;
};

struct ScheduleShape {
  int stages = 1;         // P
  int micro_batches = 1;  // m, per step and data-parallel rank
  int chunks = 1;         // v: model chunks per stage; > 1 is the interleaved schedule
};

// Throws zt::InputError for a shape no schedule exists for (sizes < 1; interleaving with
// m not a multiple of P, as Megatron-LM requires).
void validate(const ScheduleShape& s);

// The ordered steps of stage `stage`: every (micro-batch, chunk) forward and backward exactly
// once. 1F1B (chunks == 1): P - stage - 1 warm-up forwards, then one forward and one backward
// alternating, then the remaining backwards; at most P - stage micro-batches in flight.
// Interleaved: megatron-core 0.16's order (forward_backward_pipelining_with_interleaving with
// its default microbatch_group_size_per_vp_stage = P): warm-up min((P - stage - 1)·2 + (v - 1)·P,
// v·m) forwards, micro-batches taken in groups of P per chunk, each backward on the oldest
// micro-batch of the chunks in reverse. tests/fixtures/make_megatron_core_schedule.py ports its
// scheduling logic into a fixture of orders; pipeline_schedule_test compares them.
std::vector<Step> stage_schedule(const ScheduleShape& s, int stage);

// The virtual stage a step of `stage` runs as (its position in the model, 0 = first layers).
inline int virtual_stage(const ScheduleShape& s, int stage, int chunk) {
  return chunk * s.stages + stage;
}

// Most forward activations a stage holds at once under its schedule (for the memory plan: the
// first stage holds the most).
int max_in_flight(const ScheduleShape& s, int stage);

// Forward passes only (evaluation): every stage runs (micro-batch, chunk) in order.
std::vector<Step> forward_only_schedule(const ScheduleShape& s);

// When a stage may join (wait for) the point-to-point sends its steps make. A send completes
// only once its receiver has posted the matching receive; a stage that waited for that before
// the receiver got there could wait on a stage that waits on it. So a stage joins a send only
// once it holds proof the receive is posted: it posts each step's receive first and sends after
// computing, so a message the receiver sent from that step or a later one proves it. For each
// step of `stage` that sends (to the next virtual stage after a forward, the previous after a
// backward; `steps[stage]`: every stage's step list): the index of its own step at which the
// send is joined, right after that step's receive completes (steps.size(): after the last
// step), and the most sends it holds unjoined while a step computes (its send buffers). A join
// then never blocks on the schedule, only on the transfer.
struct SendPlan {
  std::vector<int> join_at;  // per step: -1 when it sends nothing
  int buffers = 0;
};
SendPlan plan_sends(const ScheduleShape& s, const std::vector<std::vector<Step>>& steps, int stage);
// Whether every stage runs its `steps[stage]` to the end under the exchange's rules with
// `plans[stage]`: a step posts its receive, waits until its sender has sent, joins the sends its
// plan joins there (each waits until the receiver has posted that receive), computes and sends.
// Every wait is on something that, once true, stays true, so when the run in which each stage
// goes as far as it can finishes, every interleaving of the stages does (MPI with synchronous
// sends; an eager send only completes earlier).
bool sends_complete(const ScheduleShape& s, const std::vector<std::vector<Step>>& steps,
                    const std::vector<SendPlan>& plans);
// Megatron-core frees a stage's output once it is sent (deallocate_pipeline_outputs): a stage
// keeps no sent output alive. Here a send completes asynchronously, so its buffer lives until its
// join: `train_sends` joins each send at plan_sends' proof or, earlier, when the stage's k-th
// next send needs a buffer, with k (the stage's send buffers) the smallest for which every
// stage's plans still complete (sends_complete), at least 2 when interleaved (one would make
// stages wait on their receivers with m = P) — 1 for every 1F1B shape and 2 for the interleaved
// ones tested, against up to (P-1)·2 + (v-1)·P + 1 on plan_sends' proofs alone. Computed once
// per shape.
// The training schedule's (stage_schedule of every stage) and the evaluation's
// (forward_only_schedule; each send joined at the next step: one buffer).
SendPlan train_sends(const ScheduleShape& s, int stage);
SendPlan eval_sends(const ScheduleShape& s, int stage);

// Point-to-point issue order. A step receives its input (forward: from the previous virtual
// stage; backward: its output's gradient from the next) unless it is the first (forward) or the
// last (backward) virtual stage, and sends its result the other way unless it is the last
// (forward) or first (backward). `message` names the (micro-batch, edge, direction), the same on
// both sides; `peer` is the other stage.
struct P2pOp {
  bool send = false;
  int peer = -1;
  int message = -1;
};
bool step_receives(const ScheduleShape& s, int stage, const Step& x);
bool step_sends(const ScheduleShape& s, int stage, const Step& x);
P2pOp receive_of(const ScheduleShape& s, int stage, const Step& x);
P2pOp send_of(const ScheduleShape& s, int stage, const Step& x);
// NCCL matches the messages between two ranks in issue order and runs a communicator's
// operations one after another on one stream, where each holds the stream until its peer's
// matching operation runs: a receive queued behind a send whose receiver is itself waiting in a
// send is never posted. So a stage issues each step's send in one group with the next step's
// receive (Megatron-LM's send_forward_recv_backward / batched isend-irecv): true when step i of
// `steps` sends and step i + 1 receives; the receive is then posted with the send, after step i
// computes, instead of when step i + 1 begins.
bool send_pairs_with_next_receive(const ScheduleShape& s, int stage, const std::vector<Step>& steps,
                                  size_t i);
// The stage's point-to-point operations in issue order, each inner list issued as one group:
// `paired` as above, else every operation alone (each step's receive when it begins, its send
// after it computes).
std::vector<std::vector<P2pOp>> p2p_groups(const ScheduleShape& s, const std::vector<Step>& steps,
                                           int stage, bool paired);
// Runs every stage's groups (`groups[stage]`) as NCCL would with no buffering: one group at a
// time per stage, an operation completing only when its peer's current group holds the
// matching one, the k-th send from a stage to another matching the other's k-th receive from it.
// Returns an empty string when every group completes, else why not (messages matched out of
// order, or the stages each group waits in).
std::string check_rendezvous(const ScheduleShape& s,
                             const std::vector<std::vector<std::vector<P2pOp>>>& groups);
// check_rendezvous of every stage's paired groups, training and evaluation. Empty for 1F1B (every
// shape pipeline_schedule_test tries) and for the interleaved schedule when the micro-batches
// equal the stages (every forward first); the interleaved schedule's steady phase with more
// micro-batches interleaves sends both ways that this pairing cannot order.
std::string check_paired_p2p(const ScheduleShape& s);

struct Timing {
  double forward = 1;   // seconds for one micro-batch through one whole stage (all its chunks)
  double backward = 2;  // the same for backward
  double transfer = 0;  // latency of one activation / gradient hand-over between stages
  // Per stage (P entries) where the stages differ (the first holds the embedding, the last the
  // head and the loss); empty: every stage takes forward / backward.
  std::vector<double> stage_forward, stage_backward;
};

struct SimResult {
  double makespan = 0;             // first step start to last step end, all stages
  std::vector<double> busy;        // per stage: time spent computing
  double bubble_fraction() const;  // idle / (P · makespan), averaged over the stages
};

// Runs every stage's schedule against the data dependencies (a forward needs the previous
// virtual stage's forward of that micro-batch; a backward the next virtual stage's backward and
// its own forward), each stage doing one step at a time in its order. Throws zt::Error when the
// schedules deadlock. For 1F1B with transfer 0 the bubble fraction is (P-1)/(m+P-1).
SimResult simulate(const ScheduleShape& s, const Timing& t);

}  // namespace zt::pipeline
