#pragma once
// The optimizer and schedule settings (and the tokenizer files) a run's numbers depend on: what a
// checkpoint records so that a resumed run is told what it changed (meta.json "settings", compared
// by changed_settings in src/checkpoint/meta.h).
#include <cstdint>
#include <nlohmann/json.hpp>

#include "src/config/options.h"

namespace zt {

nlohmann::json training_settings(const TrainOptions& o, int64_t global_batch);

}  // namespace zt
