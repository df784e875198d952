#pragma once
// Published model shapes for `estimate` / `simulate --preset NAME`: the values of each model's
// Hugging Face config.json, applied as the training flags they correspond to (flags given on
// the command line win). docs/design/llama.md cites them.
#include <string>
#include <string_view>
#include <vector>

#include "src/config/options.h"

namespace zt {

struct ModelPreset {
  const char* name;
  int layers, hidden, heads, kv_heads, ffn, vocab, max_positions;
  double rope_theta, norm_eps;
  int experts = 0, topk = 0;  // a mixture of experts: every layer's MLP (0: dense)
};

const std::vector<ModelPreset>& model_presets();
// The names, "a|b|c", for help and errors.
std::string model_preset_names();
// Sets the preset's flags in `o` except those given on the line (`line.has`); refuses an unknown
// name with the list (zt::InputError).
void apply_model_preset(std::string_view name, const TrainFlags& line, TrainOptions& o);

}  // namespace zt
