// The planner predicts what a real run measures: for several layouts in fp32, bf16 and fp16, every
// MemoryPool category the plan covers (buffers included) and the dp/tp/pp bytes per step from
// CommStats are equal — computed by the same layout, partition and byte-count code, so exactly,
// not within a tolerance; with pipeline parallelism every rank checks its own stage's plan. And
// the buffers stay the same bytes when the model grows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "kernels/backend.h"
#include "src/comm/nccl_groups.h"
#include "src/comm/scalar_reducer.h"
#include "src/comm/topology.h"
#include "src/planner/memory_plan.h"
#include "src/planner/train_plan.h"
#include "src/train/trainer.h"
#include "tests/dist/dist_env.h"
#include "tests/support/train_options.h"

namespace zt {
namespace {

struct Case {
  int tp = 1, stage = 0;
  DType working = DType::F32;
  bool ckpt = false, pa = false, cpu = false;
  int accumulation = 1;  // micro-batches per step
  bool sequence_parallel = false;
  int pp = 1;
  int layers_per_virtual_stage = 0;  // > 0: the interleaved schedule
  bool fp32_grads = false;           // --accumulate-allreduce-grads-in-fp32
  int layers = 0;                    // 0: 4 with a pipeline, else 3
  int first = 0, last = 0;           // --decoder-first/last-pipeline-num-layers
  bool llama = false;                // the Llama-shaped model (set_llama)
  bool cast = false;                 // --working-params cast (stage 0, half)
  int cp = 1;                        // --context-parallel-size
  int kv_groups = 0;                 // the Llama shape's key/value groups (0: its 4)
  bool a2a = false;                  // --cp-comm-type a2a (else the ring, p2p)
  int experts = 0;                   // --num-experts (every other layer MoE, top-2)
  double capacity = 0;               // --moe-expert-capacity-factor
  bool shared = false;               // a gated shared expert beside the routed ones
  int ep = 1;                        // --expert-model-parallel-size
  int topk = 2;                      // --moe-router-topk (= experts: every token to every one)
};

// Rope, RMSNorm, SwiGLU at Megatron's default width, 4 key/value groups of 8 heads, an untied
// output layer, no linear biases.
void set_llama(TrainOptions& o) {
  o.num_attention_heads = 8;
  test::set_llama_shape(o, 4);
}

constexpr DType F32 = DType::F32, BF16 = DType::BF16, F16 = DType::F16;

// The small GPT of every planner case at one layout and precision over `dp` data-parallel
// ranks, `accumulation` micro-batches of 2 a step, small buckets. The plan is a step that
// updates: a skipped fp16 step (overflow at the default initial scale of 2^32) all-gathers no
// updated parameters, so stages 1-2 would move half the planned dp bytes.
TrainOptions layout_options(int tp, int pp, int stage, DType working, int layers, int dp,
                            int accumulation) {
  TrainOptions o = test::small_gpt(0.1, 2);
  o.num_layers = layers;
  o.micro_batch_size = 2;
  o.global_batch_size = 2 * dp * accumulation;
  o.zero_stage = stage;
  o.bf16 = working == BF16;
  o.fp16 = working == F16;
  if (o.fp16) o.initial_loss_scale = 1024;
  o.tensor_model_parallel_size = tp;
  o.pipeline_model_parallel_size = pp;
  o.reduce_bucket_size = 2000;
  return o;
}

void expect_equal(size_t measured, size_t planned, const char* what, int i) {
  EXPECT_EQ(measured, planned) << what << ", case " << i;
}

TEST(Planner, PredictsMeasuredMemoryAndCommunication) {
  const int world = dist::world().size();
  // fp16 plans and measures as bf16 does (2-byte working precision, fp32 staging of its
  // reductions on MPI); its cases cover every stage, tp 1 and 2, and each activation policy so
  // that a category that forgot fp16 cannot hide behind the bf16 cases.
  const Case cases[] = {
      {1, 0, F32, false, false, false, 1},
      {1, 1, BF16, false, false, false, 2},
      {1, 2, BF16, true, false, false, 1},
      {1, 3, BF16, false, false, false, 2},
      {2, 3, BF16, true, true, false, 1},
      {2, 2, F32, true, true, true, 2},
      {2, 0, BF16, false, false, false, 1},
      {1, 0, F16, false, false, false, 2},
      {1, 1, F16, true, false, false, 1},
      {2, 2, F16, true, true, true, 1},
      {2, 3, F16, true, true, false, 2},
      {1, 3, F16, false, false, false, 1},
      // sequence parallelism, with each activation policy
      {2, 0, BF16, false, false, false, 2, true},
      {2, 1, F32, true, false, false, 1, true},
      {2, 3, F16, true, true, false, 1, true},
      {2, 2, BF16, true, true, true, 2, true},
      // pipeline parallelism: 1F1B and interleaved, each activation policy
      {1, 0, F32, false, false, false, 2, false, 2},
      {1, 1, BF16, true, false, false, 3, false, 2},
      {2, 1, BF16, false, false, false, 2, true, 2},
      {2, 1, F16, true, true, false, 2, false, 2},
      {2, 0, BF16, true, true, true, 2, true, 2},
      {1, 1, BF16, false, false, false, 4, false, 2, 1},
      {2, 1, F32, true, false, false, 2, true, 2, 1},
      {1, 0, BF16, false, false, false, 2, false, 4},
      {1, 1, F16, true, false, false, 5, false, 4},
      {1, 1, BF16, true, true, true, 4, false, 4},
      // fp32 gradients under half parameters, every stage, tp and pp
      {1, 0, BF16, false, false, false, 2, false, 1, 0, true},
      {1, 1, F16, false, false, false, 2, false, 1, 0, true},
      {2, 2, BF16, true, true, false, 2, false, 1, 0, true},
      {1, 3, BF16, false, false, false, 2, false, 1, 0, true},
      {2, 3, F16, true, false, false, 1, true, 1, 0, true},
      {1, 1, BF16, false, false, false, 2, false, 2, 0, true},
      // the Llama-shaped model: every stage, tp 1 and 2, sequence
      // parallelism, the activation policies, pp 2 (the untied head on the
      // last stage), each precision
      {1, 0, F32, false, false, false, 2, false, 1, 0, false, 0, 0, 0, true},
      {1, 1, BF16, true, false, false, 1, false, 1, 0, false, 0, 0, 0, true},
      {2, 2, F16, true, true, true, 2, false, 1, 0, false, 0, 0, 0, true},
      {2, 3, BF16, true, true, false, 2, false, 1, 0, false, 0, 0, 0, true},
      {1, 3, F32, false, false, false, 1, false, 1, 0, false, 0, 0, 0, true},
      {2, 0, BF16, false, false, false, 1, true, 1, 0, false, 0, 0, 0, true},
      {2, 3, F32, true, false, false, 2, true, 1, 0, false, 0, 0, 0, true},
      {1, 1, BF16, true, true, false, 2, false, 2, 0, false, 0, 0, 0, true},
      {2, 0, F32, false, false, false, 3, true, 2, 0, false, 0, 0, 0, true},
      {2, 1, F16, true, true, true, 2, false, 2, 0, false, 0, 0, 0, true},
      // pipeline chunks of 2 layers (checkpoints past the kept input), uneven
      // splits
      {1, 1, BF16, true, false, false, 4, false, 2, 2, false, 8},
      {1, 1, BF16, true, false, false, 3, false, 2, 0, false, 5, 1, 0},
      {2, 1, BF16, true, true, true, 2, false, 2, 0, false, 5, 0, 1},
      {1, 0, F32, false, false, false, 4, false, 4, 0, false, 6, 1, 1},
      {1, 1, F16, true, false, false, 5, false, 4, 0, false, 6, 3, 0},
      // stage 0 without a working copy: dp, tp with sequence parallelism and
      // Pa, pp, fp32 gradients, the Llama shape
      {1, 0, BF16, false, false, false, 2, false, 1, 0, false, 0, 0, 0, false, true},
      {2, 0, F16, true, true, false, 1, false, 1, 0, false, 0, 0, 0, false, true},
      {2, 0, BF16, false, false, false, 2, true, 1, 0, false, 0, 0, 0, false, true},
      {1, 0, BF16, true, false, false, 2, false, 2, 0, true, 0, 0, 0, false, true},
      {2, 0, BF16, false, false, false, 2, false, 1, 0, false, 0, 0, 0, true, true},
      {1, 0, F16, false, false, false, 2, false, 2, 0, false, 0, 0, 0, true, true},
      // context parallelism, the ring and the all-to-all: alone (cp 2 and 4), with dp x ZeRO, tp
      // and sequence parallelism, pp and the activation policies, the Llama shape
      {.tp = 1, .stage = 0, .working = F32, .accumulation = 2, .cp = 2},
      {.tp = 1, .stage = 0, .working = F32, .accumulation = 2, .cp = 2, .a2a = true},
      {.tp = 1, .stage = 3, .working = BF16, .ckpt = true, .accumulation = 1, .cp = 2},
      {.tp = 1, .stage = 2, .working = F16, .accumulation = 2, .cp = 4},
      {.tp = 1, .stage = 2, .working = F16, .accumulation = 2, .cp = 4, .a2a = true},
      {.tp = 2,
       .stage = 1,
       .working = BF16,
       .accumulation = 1,
       .sequence_parallel = true,
       .llama = true,
       .cp = 2,
       .a2a = true},
      {.tp = 2, .stage = 3, .working = F32, .ckpt = true, .pa = true, .accumulation = 2, .cp = 2},
      {.tp = 1, .stage = 1, .working = BF16, .ckpt = true, .accumulation = 2, .pp = 2, .cp = 2},
      {.tp = 1, .stage = 0, .working = BF16, .accumulation = 1, .llama = true, .cp = 2},
      {.tp = 1, .stage = 3, .working = BF16, .ckpt = true, .llama = true, .cp = 2, .a2a = true},
      // fewer key/value heads than context ranks: 2 groups at cp 4, one per tensor-parallel
      // rank at tp 2 x cp 2 (the all-to-all's shared heads; the ring's own)
      {.tp = 1,
       .stage = 1,
       .working = F32,
       .accumulation = 2,
       .llama = true,
       .cp = 4,
       .kv_groups = 2,
       .a2a = true},
      {.tp = 1,
       .stage = 1,
       .working = F32,
       .accumulation = 2,
       .llama = true,
       .cp = 4,
       .kv_groups = 2},
      {.tp = 2,
       .stage = 0,
       .working = BF16,
       .ckpt = true,
       .llama = true,
       .cp = 2,
       .kv_groups = 2,
       .a2a = true},
      {.tp = 2, .stage = 0, .working = BF16, .ckpt = true, .llama = true, .cp = 2, .kv_groups = 2},
      // mixtures of experts: the router, the experts' scratch and rows, the combine weights'
      // all-reduce over tp
      {.tp = 2,
       .stage = 1,
       .working = BF16,
       .sequence_parallel = true,
       .llama = true,
       .experts = 4},
      {.tp = 1, .stage = 3, .working = F32, .ckpt = true, .accumulation = 2, .experts = 4},
      {.tp = 2,
       .stage = 0,
       .working = F32,
       .ckpt = true,
       .pa = true,
       .cpu = true,
       .experts = 3,
       .capacity = 1.0},
      {.tp = 1,
       .stage = 1,
       .working = F16,
       .accumulation = 2,
       .pp = 2,
       .llama = true,
       .experts = 4},
      {.tp = 2, .stage = 2, .working = BF16, .accumulation = 2, .experts = 4, .capacity = 1.25},
      {.tp = 2,
       .stage = 1,
       .working = F32,
       .ckpt = true,
       .sequence_parallel = true,
       .experts = 4,
       .shared = true},
      // expert parallelism: every token to every expert, so the all-to-alls' bytes are the
      // plan's exactly; the experts' states over the ranks holding the same experts
      {.tp = 1, .stage = 1, .working = F32, .accumulation = 2, .experts = 4, .ep = 2, .topk = 4},
      {.tp = 1, .stage = 0, .working = BF16, .experts = 4, .ep = 4, .topk = 4},
      {.tp = 1, .stage = 3, .working = F32, .ckpt = true, .experts = 4, .ep = 2, .topk = 4},
      {.tp = 2,
       .stage = 2,
       .working = BF16,
       .accumulation = 2,
       .sequence_parallel = true,
       .experts = 4,
       .ep = 2,
       .topk = 4},
      {.tp = 1,
       .stage = 1,
       .working = F32,
       .pp = 2,
       .experts = 4,
       .capacity = 1.0,
       .ep = 2,
       .topk = 4},
      // context parallelism's sum of each MoE layer's choices per expert, with and without ep
      {.tp = 1, .stage = 1, .working = BF16, .ckpt = true, .cp = 2, .experts = 4},
      {.tp = 1, .stage = 3, .working = F32, .cp = 2, .experts = 4, .ep = 2, .topk = 4}};
  for (int i = 0; i < static_cast<int>(std::size(cases)); ++i) {
    const Case& k = cases[i];
    if (world % (k.tp * k.pp * k.cp) != 0) continue;
    const int dp = world / (k.tp * k.pp * k.cp);
    if (dp * k.cp % k.ep != 0) continue;
    TrainOptions o =
        layout_options(k.tp, k.pp, k.stage, k.working, k.layers > 0 ? k.layers : (k.pp > 1 ? 4 : 3),
                       dp, k.accumulation);
    o.decoder_first_pipeline_num_layers = k.first;
    o.decoder_last_pipeline_num_layers = k.last;
    o.lr = 1e-4;
    o.log_interval = 100;
    o.num_layers_per_virtual_pipeline_stage = k.layers_per_virtual_stage;
    o.checkpoint_activations = k.ckpt;
    o.partition_activations = k.pa;
    o.cpu_checkpointing = k.cpu;
    o.sequence_parallel = k.sequence_parallel;
    o.accumulate_allreduce_grads_in_fp32 = k.fp32_grads;
    if (k.llama) set_llama(o);
    if (k.kv_groups > 0) o.num_query_groups = k.kv_groups;
    if (k.cast) o.working_params = "cast";
    o.context_parallel_size = k.cp;
    o.cp_comm_type = k.a2a ? "a2a" : "p2p";
    o.num_experts = k.experts;
    o.moe_router_topk = k.topk;
    o.expert_model_parallel_size = k.ep;
    o.moe_ffn_hidden_size = 48;
    o.moe_layer_freq = 2;
    o.moe_aux_loss_coeff = 0.01;
    o.moe_expert_capacity_factor = k.capacity;
    o.moe_shared_expert_intermediate_size = k.shared ? 40 : 0;
    o.moe_shared_expert_gate = k.shared;
    o.param_persistence_threshold = 200;
    validate_train_options(o, dp);
    comm::Topology topo(dist::world(), k.tp, k.pp, nullptr, k.cp, k.ep);
    Trainer t(o, dist::pool(), topo);
    const StepMetrics m = t.run(false).back();
    // This rank's own peaks (the metrics hold the maximum over ranks, i.e. over stages).
    const MemCounters measured = dist::pool().counters();

    // The plan from the options, as `train` and `estimate` make it, for this rank's stage.
    PlanInput in = plan_input_from(o, dp);
    in.staged_half_reductions = true;  // the CPU backend's MPI
    in.cuda = false;
    in.stage = topo.pp_rank();
    EXPECT_EQ(in.model.padded_vocab_size, t.config().padded_vocab_size) << "case " << i;
    const MemoryPlan p = plan_memory(in);
    if (topo.tp_rank() == 0 && topo.dp().rank() == 0)
      std::printf(
          "case %d%s%s cp %d%s tp %d dp %d pp %d (this rank: stage %d) ZeRO %d %s%s%s%s%s: params "
          "%zu/%zu "
          "grads "
          "%zu/%zu "
          "optimizer %zu/%zu activations %zu/%zu checkpoints %zu/%zu host %zu/%zu buffers "
          "%zu/%zu dp bytes %llu/%llu tp bytes %llu/%llu pp bytes %llu/%llu "
          "(measured/planned)\n",
          i, k.llama ? " llama" : "", k.experts > 0 ? " moe" : "", k.cp, k.a2a ? " a2a" : "", k.tp,
          dp, k.pp, topo.pp_rank(), k.stage, std::string(dtype_name(k.working)).c_str(),
          k.ckpt ? (k.cpu ? " Pa+cpu" : (k.pa ? " Pa" : " ckpt")) : "",
          k.sequence_parallel ? " sp" : "", k.layers_per_virtual_stage > 0 ? " interleaved" : "",
          k.cast ? " cast" : "", measured.peak[0], p.params, measured.peak[1], p.grads,
          measured.peak[2], p.optimizer, measured.peak[3], p.activations, measured.peak[4],
          p.checkpoints, measured.peak[5], p.host_checkpoints, measured.peak[6], p.buffers,
          static_cast<unsigned long long>(m.comm_bytes_dp),
          static_cast<unsigned long long>(p.comm_dp),
          static_cast<unsigned long long>(m.comm_bytes_tp),
          static_cast<unsigned long long>(p.comm_tp),
          static_cast<unsigned long long>(m.comm_bytes_pp),
          static_cast<unsigned long long>(p.comm_pp));
    EXPECT_FALSE(m.skipped) << "case " << i;
    auto cat = [&](MemCategory c) { return measured.peak[static_cast<size_t>(c)]; };
    expect_equal(cat(MemCategory::Params), p.params, "params", i);
    expect_equal(cat(MemCategory::Grads), p.grads, "grads", i);
    expect_equal(cat(MemCategory::Optimizer), p.optimizer, "optimizer", i);
    expect_equal(cat(MemCategory::Activations), p.activations, "activations", i);
    expect_equal(cat(MemCategory::Checkpoints), p.checkpoints, "checkpoints", i);
    expect_equal(cat(MemCategory::HostCheckpoints), p.host_checkpoints, "host checkpoints", i);
    expect_equal(cat(MemCategory::Buffers), p.buffers, "buffers", i);
    expect_equal(m.comm_bytes_dp, p.comm_dp, "dp bytes", i);
    expect_equal(m.comm_bytes_tp, p.comm_tp, "tp bytes", i);
    expect_equal(m.comm_bytes_pp, p.comm_pp, "pp bytes", i);
    expect_equal(m.comm_bytes_cp, p.comm_cp, "cp bytes", i);
    expect_equal(m.comm_bytes_ep, p.comm_ep, "ep bytes", i);
  }
}

// --async-save's host snapshot: what a rank that writes a shard holds (the fp32 master and Adam
// moments it owns; at stage 0 only data-parallel rank 0 writes), as the plan says, through saves
// in the middle of the run and at its end; nothing without --async-save.
TEST(Planner, CountsTheAsyncSaveSnapshot) {
  const int world = dist::world().size();
  struct Async {
    int tp, pp, stage;
    DType working;
  };
  const Async cases[] = {{1, 1, 0, F32},  {1, 1, 1, BF16}, {2, 1, 3, F32},
                         {1, 2, 1, BF16}, {2, 1, 0, F16},  {1, 1, 2, F32}};
  for (int i = 0; i < static_cast<int>(std::size(cases)); ++i) {
    const Async& k = cases[i];
    if (world % (k.tp * k.pp) != 0) continue;
    const int dp = world / (k.tp * k.pp);
    for (bool async : {false, true}) {
      TrainOptions o = layout_options(k.tp, k.pp, k.stage, k.working, k.pp > 1 ? 4 : 3, dp, 2);
      o.train_iters = 3;
      o.save_interval = 1;
      o.save = dist::scratch_dir() + "zt_planner_async_" + std::to_string(world);
      o.async_save = async;
      validate_train_options(o, dp);
      comm::Topology topo(dist::world(), k.tp, k.pp);
      size_t measured = 0;
      {
        Trainer t(o, dist::pool(), topo);
        t.run(false);
        measured = dist::pool().counters().peak[static_cast<size_t>(MemCategory::HostSnapshot)];
      }
      PlanInput in = plan_input_from(o, dp);
      in.stage = topo.pp_rank();
      const MemoryPlan p = plan_memory(in);
      const bool writes = k.stage > 0 || topo.dp_rank() == 0;
      EXPECT_EQ(measured, writes ? p.host_snapshot : 0) << "case " << i << " async " << async;
      EXPECT_EQ(p.host_snapshot > 0, async) << "case " << i;
      if (async) {
        EXPECT_EQ(p.host_snapshot, p.optimizer * (k.stage == 0 && k.working == F32 ? 3 : 2) / 2)
            << "case " << i << ": the master and both moments";
      }
      if (topo.rank() == 0 && async)
        std::printf("async case %d tp %d pp %d dp %d ZeRO %d: host snapshot %zu/%zu bytes\n", i,
                    k.tp, k.pp, dp, k.stage, measured, p.host_snapshot);
    }
  }
}

// The CUDA paths' allocations on MPI ranks: cpu_staging_backend() stages through a host pool of
// its own as the CUDA backend does, so the device pool holds what the plan for --device cuda says,
// less what the CUDA backend takes for itself (backend_buffers). The scalar reducers (metrics,
// gradient norm) are in the host pool, not in the plan's device buffers; with two or more ranks
// they hold bytes, which a plan counting them on the device would show. fp32: MPI stages no
// reduction then, as NCCL stages none.
TEST(Planner, CudaPathsAllocateTheCudaPlan) {
  const int world = dist::world().size();
  for (int stage = 0; stage <= 3; ++stage) {
    TrainOptions o = layout_options(1, 1, stage, F32, 3, world, 1);
    o.log_interval = 100;
    o.param_persistence_threshold = 200;
    validate_train_options(o, world);
    MemoryPool device(make_staging_device_allocator()), host(make_host_allocator());
    const DeviceContext ctx(cpu_staging_backend(), device, host);
    auto device_world = dist::runtime().world(device);  // where NCCL's groups would be
    auto host_world = dist::runtime().world(host);
    comm::Topology topo(*device_world, 1, 1, host_world.get());
    Trainer t(o, ctx, topo);
    t.run(false);
    TrainOptions c = o;
    c.device = "cuda";
    const MemoryPlan p = plan_memory(plan_input_from(c, world));
    const std::string what = "stage " + std::to_string(stage);
    EXPECT_EQ(device.peak(MemCategory::Params), p.params) << what;
    EXPECT_EQ(device.peak(MemCategory::Grads), p.grads) << what;
    EXPECT_EQ(device.peak(MemCategory::Optimizer), p.optimizer) << what;
    EXPECT_EQ(device.peak(MemCategory::Activations), p.activations) << what;
    EXPECT_EQ(device.peak(MemCategory::Checkpoints), p.checkpoints) << what;
    EXPECT_EQ(device.peak(MemCategory::Buffers) + p.backend_buffers, p.buffers) << what;
    EXPECT_EQ(p.nccl_communicators, comm::nccl_communicators(1, world, 1, 0)) << what;
    EXPECT_EQ(p.nccl_bytes, comm::nccl_planned_bytes(p.nccl_communicators)) << what;
    if (world > 1) {
      EXPECT_GE(host.current(MemCategory::Buffers),
                comm::ScalarReducer::bytes(world, kNumMemCategories + 2) +
                    comm::ScalarReducer::bytes(world, 1))
          << what << ": the reducers are in the host pool";
    }
  }
}

// ZeRO-R's constant-size buffers: with the same bucket flags, a wider, deeper model with a larger
// vocabulary allocates exactly the same buffer bytes, in every stage and precision — and the
// planner says so too. (tp = 1: tensor parallelism's activation all-reduce is staged per [N, h].)
TEST(Planner, BuffersDoNotGrowWithTheModel) {
  const int dp = dist::world().size();
  struct Size {
    int layers, hidden, vocab;
  };
  const Size sizes[] = {{2, 32, 50}, {2, 64, 50}, {2, 32, 400}, {5, 32, 50}};
  for (const DType working : {F32, BF16, F16})
    for (int stage = 0; stage <= 4; ++stage) {
      // 4: stage 0 without a working copy (half only), whose cast buffer is bounded by the
      // bucket as the gradient's are.
      const bool cast = stage == 4;
      if (cast && working == F32) continue;
      size_t first = 0;
      for (const Size& z : sizes) {
        TrainOptions o = test::small_gpt(0.1, 1);
        o.num_layers = z.layers;
        o.hidden_size = z.hidden;
        o.vocab_size = z.vocab;
        o.micro_batch_size = 2;
        o.global_batch_size = 2 * dp;
        o.lr = 1e-4;
        o.log_interval = 100;
        o.zero_stage = cast ? 0 : stage;
        o.working_params = cast ? "cast" : "stored";
        o.bf16 = working == BF16;
        o.fp16 = working == F16;
        if (o.fp16) o.initial_loss_scale = 1024;
        o.reduce_bucket_size = 1500;
        o.param_persistence_threshold = 0;
        o.prefetch_bucket_size = 3000;  // stage 3: two units ahead, whatever the model
        comm::Topology topo(dist::world(), 1);
        Trainer t(o, dist::pool(), topo);
        const StepMetrics m = t.run(false).back();
        const size_t measured = m.memory_peak[static_cast<size_t>(MemCategory::Buffers)];
        PlanInput in;
        in.model = t.config();
        in.dp = dp;
        in.zero_stage = o.zero_stage;
        in.cast_params = cast;
        in.working = working;
        in.micro_batch = o.micro_batch_size;
        in.reduce_bucket_elems = o.reduce_bucket_size;
        in.param_persistence_threshold = o.param_persistence_threshold;
        in.prefetch_bucket_elems = o.prefetch_bucket_size;
        const std::string what = std::string(dtype_name(working)) + " stage " +
                                 (cast ? "0 cast" : std::to_string(stage)) + " layers " +
                                 std::to_string(z.layers) + " hidden " + std::to_string(z.hidden) +
                                 " vocab " + std::to_string(z.vocab);
        EXPECT_EQ(measured, plan_memory(in).buffers) << what;
        if (first == 0) first = measured;
        EXPECT_EQ(measured, first) << what << ": buffers grew with the model";
      }
    }
}

}  // namespace
}  // namespace zt
