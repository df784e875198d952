// The batched point-to-point exchange (src/pipeline/exchange.h) under NCCL's rules, as
// schedule.h's rendezvous model runs them (no buffering, one stream per communicator, the k-th
// send between two stages matching the k-th receive): every schedule shape completes with its
// messages matched as meant, training and evaluation; interleaving with more micro-batches than
// stages needs the four-message rounds (one send and one receive per step fail there).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "src/pipeline/exchange.h"

namespace zt::pipeline {
namespace {

TEST(PipelineExchange, EveryShapeCompletesWithoutBuffering) {
  for (int P : {2, 3, 4, 8})
    for (int v : {1, 2, 3, 4})
      for (int mult : {1, 2, 3, 8}) {
        const ScheduleShape s{P, P * mult, v};
        EXPECT_EQ(check_exchange(s), "")
            << P << " stages, " << s.micro_batches << " micro-batches, " << v << " chunks";
      }
}

// Where the one-send-one-receive pairing deadlocks (interleaved, m > P), the exchange does not,
// and its steady phase batches four messages: both sends of a forward-backward round and both
// receives of the next.
TEST(PipelineExchange, InterleavedSteadyRoundsBatchFourMessages) {
  const ScheduleShape s{4, 8, 2};
  EXPECT_NE(check_paired_p2p(s), "");
  EXPECT_EQ(check_exchange(s), "");
  for (int st = 0; st < s.stages; ++st) {
    size_t most = 0;
    for (const auto& g : exchange_groups(s, stage_schedule(s, st), st))
      most = std::max(most, g.size());
    EXPECT_EQ(most, 4u) << "stage " << st;
  }
}

// 1F1B, an interleaved stage that runs every forward first, and evaluation: every step is a round
// of its own, so each batch is a step's send with the next step's receive, the pairing
// schedule.h models (p2p_groups).
TEST(PipelineExchange, SingleStepRoundsAreTheSendReceivePairing) {
  // Interleaved with m = P: stage 0, whose warm-up (megatron-core's min((P - 1)·2 + (v - 1)·P,
  // v·m) = 8) is every forward.
  for (const ScheduleShape& s : {ScheduleShape{4, 8, 1}, ScheduleShape{4, 4, 2}})
    for (int st = 0; st < (s.chunks > 1 ? 1 : s.stages); ++st)
      for (const auto& steps : {stage_schedule(s, st), forward_only_schedule(s)}) {
        const std::vector<int> ends = round_ends(s, steps);
        for (size_t i = 0; i < ends.size(); ++i) EXPECT_EQ(ends[i], static_cast<int>(i) + 1);
        const auto want = p2p_groups(s, steps, st, true);
        const auto got = exchange_groups(s, steps, st);
        ASSERT_EQ(got.size(), want.size());
        for (size_t g = 0; g < got.size(); ++g) {
          ASSERT_EQ(got[g].size(), want[g].size());
          for (size_t k = 0; k < got[g].size(); ++k) {
            EXPECT_EQ(got[g][k].send, want[g][k].send);
            EXPECT_EQ(got[g][k].peer, want[g][k].peer);
            EXPECT_EQ(got[g][k].message, want[g][k].message);
          }
        }
      }
}

// A send is joined only after the batch that issues it (the end of its round), and the plan's
// send buffers cover the sends unjoined at every step.
TEST(PipelineExchange, SendsAreJoinedAfterTheirRound) {
  for (const ScheduleShape& s : {ScheduleShape{2, 6, 2}, ScheduleShape{4, 8, 2},
                                 ScheduleShape{4, 12, 4}, ScheduleShape{3, 9, 1}})
    for (int st = 0; st < s.stages; ++st)
      for (bool training : {true, false}) {
        const auto steps = training ? stage_schedule(s, st) : forward_only_schedule(s);
        const std::vector<int> ends = round_ends(s, steps);
        const SendPlan p = exchange_sends(s, st, training);
        ASSERT_EQ(p.join_at.size(), steps.size());
        std::vector<int> live(steps.size(), 0);
        for (size_t i = 0; i < steps.size(); ++i) {
          EXPECT_EQ(p.join_at[i] >= 0, step_sends(s, st, steps[i]));
          if (p.join_at[i] < 0) continue;
          EXPECT_GE(p.join_at[i], ends[i]);
          for (int x = static_cast<int>(i); x < p.join_at[i] && x < static_cast<int>(live.size());
               ++x)
            ++live[static_cast<size_t>(x)];
        }
        EXPECT_EQ(p.buffers, *std::max_element(live.begin(), live.end()));
      }
}

}  // namespace
}  // namespace zt::pipeline
