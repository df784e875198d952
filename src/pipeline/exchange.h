#pragma once
// How a pipeline stage groups its point-to-point messages (the rules of schedule.h's model:
// NCCL matches messages in issue order, one stream per communicator, no buffering to rely on).
//
// A stage's steps are cut into rounds; after the last step of a round computes, the stage issues
// one batch: every send of the round's steps and every receive of the next round's steps
// (Communicator::batch_async: one ncclGroupStart/End on NCCL; on MPI every receive and send
// posted nonblocking, each waited on its own). The first round's receives go out alone before it.
// - 1F1B: every step is a round, so a batch is a step's send with the next step's receive
//   (Megatron-LM's send_forward_recv_backward / send_backward_recv_forward).
// - Interleaved: a steady-phase forward and the backward after it form one round, so its batch
//   holds up to four operations, the forward's output to the next stage, the backward's input
//   gradient to the previous one and both receives of the next round (Megatron-LM's
//   send_forward_backward_recv_forward_backward in forward_backward_pipelining_with_interleaving,
//   whose warm-up of 2(P - s - 1) + (v - 1)P forwards leaves room for the coupling); warm-up and
//   cool-down steps are rounds of their own (send_forward_recv_forward,
//   send_backward_recv_backward).
#include <string>
#include <vector>

#include "src/pipeline/schedule.h"

namespace zt::pipeline {

// Per step of `steps`: the index one past the last step of its round.
std::vector<int> round_ends(const ScheduleShape& s, const std::vector<Step>& steps);
// The stage's batches in issue order (each inner list one batch: sends first, in step order,
// then receives, in step order).
std::vector<std::vector<P2pOp>> exchange_groups(const ScheduleShape& s,
                                                const std::vector<Step>& steps, int stage);
// check_rendezvous of every stage's batches, training and evaluation: empty when they complete
// with no buffering and match their messages as meant.
std::string check_exchange(const ScheduleShape& s);
// When the stage joins its sends (schedule.h's plan_sends), never before the batch that issues a
// send has gone out: at the end of its round at the earliest.
SendPlan exchange_sends(const ScheduleShape& s, int stage, bool training);

}  // namespace zt::pipeline
