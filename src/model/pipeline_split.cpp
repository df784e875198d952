#include "src/model/pipeline_split.h"

#include <fmt/format.h>

#include "src/core/error.h"

namespace zt {

std::string split_problem(const PipelineSplit& s) {
  if (s.stages < 1 || s.chunks < 1) return "pipeline sizes must be >= 1";
  if (s.first_stage_layers < 0 || s.last_stage_layers < 0)
    return "the first and last stage's layers must not be negative";
  if (!s.uneven()) {
    if (s.num_layers % (s.stages * s.chunks) != 0)
      return fmt::format(
          "--num-layers {} does not divide into {} pipeline stages x {} model chunks", s.num_layers,
          s.stages, s.chunks);
    return "";
  }
  const int first = s.first_stage_layers, last = s.last_stage_layers;
  const int middle = s.stages - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
  if (s.stages < 2)
    return "--decoder-first/last-pipeline-num-layers need --pipeline-model-parallel-size > 1";
  const int rest = s.num_layers - first - last;
  if (rest < 0 || (middle == 0 && rest != 0))
    return fmt::format(
        "--num-layers {} cannot hold {} layers on the first stage and {} on the last with {} "
        "stages",
        s.num_layers, first, last, s.stages);
  if (middle > 0 && (rest == 0 || rest % middle != 0))
    return fmt::format(
        "the {} layers left after the first stage's {} and the last stage's {} do not divide "
        "evenly over the {} stages between",
        rest, first, last, middle);
  for (int layers : {first, last, middle > 0 ? rest / middle : 0})
    if (layers % s.chunks != 0)
      return fmt::format("a stage's {} layers do not divide into {} model chunks", layers,
                         s.chunks);
  return "";
}

namespace {
// Layers of stage `stage`.
int stage_layers(const PipelineSplit& s, int stage) {
  if (stage == 0 && s.first_stage_layers > 0) return s.first_stage_layers;
  if (stage == s.stages - 1 && s.last_stage_layers > 0) return s.last_stage_layers;
  const int middle =
      s.stages - (s.first_stage_layers > 0 ? 1 : 0) - (s.last_stage_layers > 0 ? 1 : 0);
  return (s.num_layers - s.first_stage_layers - s.last_stage_layers) / middle;
}
}  // namespace

LayerSpan virtual_stage_layers(const PipelineSplit& s, int stage, int chunk) {
  const std::string why = split_problem(s);
  ZT_REQUIRE(why.empty(), "{}", why);
  ZT_CHECK(stage >= 0 && stage < s.stages && chunk >= 0 && chunk < s.chunks,
           "virtual stage (stage {}, chunk {}) outside {} stages x {} chunks", stage, chunk,
           s.stages, s.chunks);
  // Every chunk of a round (one per stage) holds its stage's layers / chunks, rounds in order.
  int round = 0;
  for (int st = 0; st < s.stages; ++st) round += stage_layers(s, st) / s.chunks;
  int first = chunk * round;
  for (int st = 0; st < stage; ++st) first += stage_layers(s, st) / s.chunks;
  return {first, stage_layers(s, stage) / s.chunks};
}

int stage_layer_count(const PipelineSplit& s, int stage) {
  return virtual_stage_layers(s, stage, 0).count * s.chunks;
}

}  // namespace zt
