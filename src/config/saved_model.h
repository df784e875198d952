#pragma once
// A run that loads a checkpoint takes the saved model as its model options (Megatron-LM's
// --use-checkpoint-args, here always on): every model option not given on the command line or in
// --config is set from the checkpoint, so loading an imported Llama needs none of its
// architecture flags, and a given flag that names another model is refused, all such flags in
// one line.
#include <string>
#include <string_view>
#include <vector>

#include "src/config/options.h"
#include "src/model/gpt_config.h"

namespace zt {

// Sets the model options of `o` that `given` (flags without "--") does not name from `saved`,
// the model of the checkpoint `where`: shape, architecture, sequence length and dropout. Throws
// InputError with one line naming every given flag whose value the load cannot take (another
// shape or architecture, a sequence longer than the checkpoint's); dropout, a shorter sequence,
// the rotary base, the norm epsilon and the init std may differ (the load warns).
void take_saved_model(const GptConfig& saved, const std::vector<std::string>& given,
                      std::string_view where, TrainOptions& o);

}  // namespace zt
