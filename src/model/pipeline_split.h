#pragma once
// Which decoder layers each pipeline stage and model chunk holds: the one layer -> stage map that
// the model, the checkpoints (reshape across layouts), the planner and the simulator read.
// megatron-core's meaning (get_num_layers_to_build, get_transformer_layer_offset): with
// `first_stage_layers` / `last_stage_layers` set (> 0) the first / last stage holds that many
// layers and the rest split evenly over the stages between; otherwise every stage holds
// num_layers / stages. A stage's layers split evenly over its `chunks` model chunks, chunk c of
// stage s being virtual stage c·stages + s; virtual stages hold consecutive layers in their
// order. Pure arithmetic: no model, no options.
#include <string>

namespace zt {

struct PipelineSplit {
  int num_layers = 0;
  int stages = 1;
  int chunks = 1;              // model chunks per stage (the interleaved schedule when > 1)
  int first_stage_layers = 0;  // --decoder-first-pipeline-num-layers (0: even split)
  int last_stage_layers = 0;   // --decoder-last-pipeline-num-layers (0: even split)
  bool uneven() const { return first_stage_layers > 0 || last_stage_layers > 0; }
};

// Empty when the layers split as asked, else why not (one clause for an error line).
std::string split_problem(const PipelineSplit& s);

// The layers of virtual stage (stage, chunk): [first, first + count). Throws zt::InputError when
// split_problem is not empty.
struct LayerSpan {
  int first = 0;
  int count = 0;
};
LayerSpan virtual_stage_layers(const PipelineSplit& s, int stage, int chunk);
// Layers of stage `stage` over all its chunks.
int stage_layer_count(const PipelineSplit& s, int stage);

}  // namespace zt
