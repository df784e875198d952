// The data-parallel gradient reduction's numerics in half precision, checked bitwise through
// every ZeRO stage's own reducer (ZeroOptimizer, dp = world, tp = 1).
//
// What the stages do today (the reducers in src/zero/all_reduce_grads.cpp and
// reduce_scatter_grads.cpp; the communicator's part in src/comm/mpi_communicator.cpp):
//   - The model hands each gradient span over in fp32 staging (accumulated in fp32 across the
//     ops that produce it), rounded once into the half gradient.
//   - Stages 0-1 round each micro-batch's span into the rank's full half gradient,
//     g = round(g + span) (fp32 add, one rounding), and reduce once, after the last
//     micro-batch: all-reduce (stage 0, constant-size buckets) or reduce-scatter (stage 1).
//   - Stages 2-3 round each micro-batch's span to half, reduce-scatter each unit as soon as all
//     of its spans are in, and add the reduced part to the half shard, g = round(g + part).
//   - The reduction itself: on MpiCommunicator (CPU backend) a half tensor is widened into an
//     fp32 staging buffer, summed with MPI_SUM on fp32 and rounded once back to half; the wire
//     carries fp32 (CommStats counts the paper's 2-byte elements). NcclCommunicator (CUDA)
//     hands NCCL the half tensor (ncclBfloat16 / ncclHalf), whose ring adds in, or rounds to,
//     the half type at every hop: with dp >= 3 that is the "half ring" below, which this test
//     tells apart from the MPI result; it is not checked here (no GPU).
// So with one micro-batch per rank every stage gives round(sum_r round(slot_r)); with several,
// stages 0-1 give round(sum_r local_r) where local_r rounds after each micro-batch, and stages
// 2-3 give the rounded running sum of per-micro-batch reduced gradients.
//
// The check feeds known fp32 block gradients, steps once with AdamW's beta1 = 0 (so Adam's m is
// the reduced gradient, widened exactly: m = 0 * m + 1 * g, unscaled, unclipped) and compares m
// with the formulas above evaluated here, element by element, bitwise. The slot values are
// random fp32 (24-bit significands, so the rounding to half matters) of magnitude 2^-6..1: every
// half value in play is then a multiple of 2^-13 (bf16) or 2^-16 (fp16) below 16 (3 micro-batches
// x 4 ranks), at most 20 significant bits, so the fp32 sums over 4 ranks are exact in any order and
// the expectation does not depend on MPI's reduction order. The test also counts the elements where
// the plausible alternatives (summing in half rank by rank, as a half-precision ring does; rounding
// only once after fp32 accumulation of all micro-batches) differ, and requires some: it can tell
// them apart.
#include <gtest/gtest.h>
#include <algorithm>

#include <cstdint>
#include <string>
#include <vector>

#include "src/core/half.h"
#include "src/model/gpt_config.h"
#include "src/model/param_layout.h"
#include "src/zero/partition.h"
#include "src/zero/zero_optimizer.h"
#include "tests/dist/dist_env.h"

namespace zt {
namespace {

constexpr int64_t kUnitElems = 3000;  // several reduce buckets / units per layer

GptConfig model() {
  GptConfig c;
  c.num_layers = 2;
  c.hidden = 32;
  c.heads = 4;
  c.seq_length = 16;
  c.vocab_size = 64;
  c.padded_vocab_size = 64;
  return c;
}

// The fp32 gradient rank r's model would hand over for layout element e in micro-batch k.
float slot_value(int r, int k, int64_t e) {
  uint64_t s =
      (static_cast<uint64_t>(r) * 1000003u + static_cast<uint64_t>(k)) * 0x9E3779B97F4A7C15ull +
      static_cast<uint64_t>(e) * 0xBF58476D1CE4E5B9ull + 1;
  s ^= s >> 31;
  s *= 0x94D049BB133111EBull;
  s ^= s >> 29;
  const float u = static_cast<float>(s >> 40) / static_cast<float>(uint64_t{1} << 24);  // [0, 1)
  const float mag = 1.0f / 64 + u * (1.0f - 1.0f / 64);
  return (s & 1) ? -mag : mag;
}

template <typename H>
float rnd(float x) {
  return to_float(from_float<H>(x));
}

struct Expectation {
  std::vector<float> stage01, stage23;  // the reduced gradient, widened, layout order
  int64_t differs_half_ring = 0;        // elements where summing in half rank by rank differs
  int64_t differs_round_once = 0;       // where one rounding of the fp32 total differs
};

template <typename H>
Expectation expect(int64_t n, int ranks, int micro) {
  Expectation x;
  x.stage01.resize(static_cast<size_t>(n));
  x.stage23.resize(static_cast<size_t>(n));
  std::vector<float> local(static_cast<size_t>(ranks));
  for (int64_t e = 0; e < n; ++e) {
    float g23 = 0, total = 0;
    for (int k = 0; k < micro; ++k) {
      float sum = 0;  // exact in fp32: see the header
      for (int r = 0; r < ranks; ++r) sum += rnd<H>(slot_value(r, k, e));
      g23 = rnd<H>(g23 + rnd<H>(sum));
    }
    for (int r = 0; r < ranks; ++r) {
      float g = 0;
      for (int k = 0; k < micro; ++k) {
        g = rnd<H>(g + slot_value(r, k, e));
        total += slot_value(r, k, e);
      }
      local[static_cast<size_t>(r)] = g;
    }
    float sum = 0, ring = local[0];
    for (int r = 0; r < ranks; ++r) sum += local[static_cast<size_t>(r)];
    for (int r = 1; r < ranks; ++r) ring = rnd<H>(ring + local[static_cast<size_t>(r)]);
    const float g01 = rnd<H>(sum);
    x.stage01[static_cast<size_t>(e)] = g01;
    x.stage23[static_cast<size_t>(e)] = g23;
    x.differs_half_ring += ring != g01;
    x.differs_round_once += rnd<H>(total) != g01;
  }
  return x;
}

// One step of `stage`'s reducer on the slot values; Adam's m (this rank's part, with its
// layout offsets) compared with `want`. Returns the number of differing elements.
int64_t mismatches(int stage, DType working, int micro, bool overlap,
                   const std::vector<float>& want) {
  const GptConfig c = model();
  const ParamLayout layout = ParamLayout::gpt(c);
  AdamConfig adam;
  adam.beta1 = 0;  // m = the gradient
  adam.clip_grad = 0;
  ZeroConfig z;
  z.stage = stage;
  z.dp = &dist::world();
  z.world = &dist::world();
  z.reduce_bucket_elems = kUnitElems;
  z.allgather_bucket_elems = kUnitElems;
  z.overlap_comm = overlap;
  ZeroOptimizer opt(layout, working, adam, dist::pool(), 1234, z);
  const int rank = dist::world().rank();
  opt.zero_grad();
  for (int k = 0; k < micro; ++k) {
    opt.begin_microbatch(k == micro - 1);
    // Backward order: the last parameter first, each in the model's chunks of whole rows.
    const auto& params = layout.params();
    for (auto p = params.rbegin(); p != params.rend(); ++p) {
      const int64_t step = p->chunk_rows(opt.max_span()) * p->row_len();
      const int64_t block_begin = layout.blocks()[static_cast<size_t>(p->block)].begin;
      for (int64_t at = (p->numel() - 1) / step * step; at >= 0; at -= step) {
        const Span span{p->block, p->offset - block_begin + at, std::min(step, p->numel() - at)};
        float* g = opt.open_grads(span);
        for (int64_t i = 0; i < span.len; ++i) g[i] = slot_value(rank, k, p->offset + at + i);
        opt.close_grads(span);
      }
    }
  }
  const StepResult s = opt.step(1e-3, 1.0);
  EXPECT_FALSE(s.skipped);
  const float* m = opt.owned_state()[1].f32();
  int64_t bad = 0;
  if (stage == 0) {
    for (int64_t e = 0; e < layout.numel(); ++e) bad += m[e] != want[static_cast<size_t>(e)];
    return bad;
  }
  const Partition part(layout, dist::world().size(), rank, kUnitElems);
  int64_t seen = 0;
  for (const ShardSegment& seg : part.segments())
    for (int64_t j = 0; j < seg.len; ++j, ++seen)
      bad += m[seg.shard_offset + j] != want[static_cast<size_t>(seg.layout_offset + j)];
  EXPECT_GT(seen, 0);
  return bad;
}

template <typename H>
void check(DType working) {
  const int ranks = dist::world().size();
  const int64_t n = ParamLayout::gpt(model()).numel();
  const std::string dt(dtype_name(working));
  for (int micro : {1, 3}) {
    const Expectation x = expect<H>(n, ranks, micro);
    if (micro == 1) {
      EXPECT_EQ(x.stage01, x.stage23) << "one micro-batch: every stage computes the same";
    } else {
      EXPECT_NE(x.stage01, x.stage23) << "the two accumulation orders must be told apart";
    }
    // The alternatives must differ from the expectation somewhere, or a match proves nothing.
    if (ranks >= 3) {
      EXPECT_GT(x.differs_half_ring, 0) << dt;
    }
    if (ranks * micro >= 2) {
      EXPECT_GT(x.differs_round_once, 0) << dt;
    }
    for (int stage = 0; stage <= 3; ++stage)
      for (bool overlap : {true, false}) {
        const auto& want = stage <= 1 ? x.stage01 : x.stage23;
        EXPECT_EQ(mismatches(stage, working, micro, overlap, want), 0)
            << dt << " stage " << stage << ", " << micro << " micro-batch(es), dp " << ranks
            << (overlap ? ", overlap" : "");
      }
    if (dist::world().rank() == 0)
      std::printf(
          "%s dp %d, %d micro-batch(es): %lld elements; a half ring would differ on %lld, one "
          "rounding of the fp32 total on %lld\n",
          dt.c_str(), ranks, micro, static_cast<long long>(n),
          static_cast<long long>(x.differs_half_ring),
          static_cast<long long>(x.differs_round_once));
  }
}

TEST(HalfGradReduction, Bf16IsTheFp32SumOfHalfValuesRoundedOnce) {
  check<bf16>(DType::BF16);
}
TEST(HalfGradReduction, Fp16IsTheFp32SumOfHalfValuesRoundedOnce) {
  check<fp16>(DType::F16);
}

}  // namespace
}  // namespace zt
