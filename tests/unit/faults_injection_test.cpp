// ZT_INJECT_FAULT's syntax and the hooks it makes: only the named rank, only the named step.
// (The faults themselves — a throw, a hang, an overflow, a killed save — are the failure tests'
// subject: tests/dist.)
#include "src/faults/fault_injection.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "src/comm/self_communicator.h"
#include "src/core/error.h"

namespace zt {
namespace {

TEST(FaultInjection, ParsesKindRankStep) {
  const Fault t = parse_fault("throw:3:5");
  EXPECT_EQ(t.kind, Fault::Throw);
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(t.step, 5);
  EXPECT_EQ(parse_fault("hang:1:3").kind, Fault::Hang);
  EXPECT_EQ(parse_fault("inf:0:2").kind, Fault::Inf);
  EXPECT_EQ(parse_fault("kill-in-save:1:4").kind, Fault::KillInSave);
  EXPECT_EQ(parse_fault("kill-in-write:1:4").kind, Fault::KillInWrite);
  EXPECT_EQ(parse_fault("slow-save:0:0").kind, Fault::SlowSave);
  const Fault p = parse_fault("kill-before-latest:0:4");
  EXPECT_EQ(p.kind, Fault::KillInPublish);
  EXPECT_EQ(p.point, PublishPoint::BeforeLatest);
  EXPECT_EQ(parse_fault("kill-after-exchange:0:4").point, PublishPoint::AfterExchange);
  EXPECT_EQ(parse_fault("kill-before-rename:0:4").point, PublishPoint::BeforeRename);
  EXPECT_EQ(parse_fault("kill-before-prune:0:4").point, PublishPoint::BeforePrune);
  EXPECT_EQ(parse_fault("stop:1:3").kind, Fault::Stop);
  EXPECT_EQ(parse_fault("diverge:1:3").kind, Fault::Diverge);
  EXPECT_THROW(parse_fault("throw"), InputError);
  EXPECT_THROW(parse_fault("explode:1:3"), InputError);
}

TEST(FaultInjection, HooksActOnlyOnTheRankAndStep) {
  const Fault f = parse_fault("throw:2:3");
  const TrainerHooks other = fault_hooks(f, 1);
  EXPECT_FALSE(other.mid_step || other.loss_gradient || other.save);
  const TrainerHooks h = fault_hooks(f, 2);
  ASSERT_TRUE(h.mid_step);
  EXPECT_NO_THROW(h.mid_step(2));
  try {
    h.mid_step(3);
    ADD_FAILURE() << "no throw in step 3";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "injected fault (ZT_INJECT_FAULT) in the middle of step 3");
  }
  const TrainerHooks inf = fault_hooks(parse_fault("inf:0:2"), 0);
  ASSERT_TRUE(inf.loss_gradient);
  EXPECT_EQ(inf.loss_gradient(1, 0.5f), 0.5f);
  EXPECT_TRUE(std::isinf(inf.loss_gradient(2, 0.5f)));
  const TrainerHooks save = fault_hooks(parse_fault("kill-in-save:0:4"), 0);
  ASSERT_TRUE(save.save);
  EXPECT_FALSE(save.save(3).after_shard) << "another iteration's save is left alone";
  EXPECT_TRUE(save.save(4).after_shard);
  const TrainerHooks write = fault_hooks(parse_fault("kill-in-write:1:4"), 1);
  EXPECT_FALSE(write.save(2).progress) << "another iteration's save is left alone";
  ASSERT_TRUE(write.save(4).progress);
  EXPECT_FALSE(write.save(4).after_shard) << "it kills during the write, not after it";
  write.save(4).progress(3, 3);  // the whole shard written: past the point it kills at
  const TrainerHooks slow = fault_hooks(parse_fault("slow-save:0:0"), 0);
  EXPECT_TRUE(slow.save(1).progress && slow.save(7).progress) << "step 0: every save";
  const TrainerHooks slow4 = fault_hooks(parse_fault("slow-save:0:4"), 0);
  EXPECT_FALSE(slow4.save(3).progress);
  EXPECT_TRUE(slow4.save(4).progress);
  const TrainerHooks publish = fault_hooks(parse_fault("kill-before-prune:0:4"), 0);
  EXPECT_FALSE(publish.mid_step) << "a publishing fault does nothing during the step";
  EXPECT_TRUE(publish.save(4).at_publish);
  EXPECT_FALSE(publish.save(4).after_shard);
}

TEST(FaultInjection, DivergeCallsABarrierOnTheWorldAtItsStepOnly) {
  comm::SelfCommunicator world(cpu_backend());
  const Fault f = parse_fault("diverge:0:3");
  EXPECT_FALSE(fault_hooks(f, 0).mid_step) << "nothing to diverge into without a world";
  const TrainerHooks h = fault_hooks(f, 0, &world);
  ASSERT_TRUE(h.mid_step);
  h.mid_step(2);
  EXPECT_EQ(world.stats().snapshot().at(comm::GroupKind::World, comm::CommOp::Barrier).calls, 0u);
  h.mid_step(3);
  EXPECT_EQ(world.stats().snapshot().at(comm::GroupKind::World, comm::CommOp::Barrier).calls, 1u);
}

}  // namespace
}  // namespace zt
