#pragma once
// meta.json of a checkpoint iteration: what it records and how a reader checks it. A checkpoint
// may come from anywhere, so every field is checked for its type and range (one line naming the
// file and the field) before any of it sizes an allocation or names a file.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "src/config/options.h"
#include "src/model/gpt_config.h"

namespace zt {

// A meta.json's text (file `where`) parsed with the shared bounded reader: nesting (meta.json's
// own is 3 deep) and string lengths capped, errors quoting a short excerpt. InputError otherwise.
nlohmann::json parse_meta_json(std::string_view text, const std::string& where);

struct SavedLayout {
  GptConfig model;
  int tp = 1, dp = 1, stage = 0;
  // Pipeline stages and model chunks per stage (layout fields pipeline_model_parallel_size and
  // virtual_pipeline_model_parallel_size, Megatron's names; absent before pipelines: 1).
  int pp = 1, chunks = 1;
  int64_t iteration = 0, partition_unit = 1;
};
// The model and layout of `meta` (file `where`), checked.
SavedLayout saved_layout(const nlohmann::json& meta, const std::string& where);

nlohmann::json model_to_json(const GptConfig& c);
// Checked: positive sizes within bounds, dropouts in [0, 1).
GptConfig model_from_json(const nlohmann::json& j, const std::string& where);

// An integer field of `j` in [lo, hi]; InputError naming `where` and `key` otherwise.
int64_t int_field(const nlohmann::json& j, const std::string& key, int64_t lo, int64_t hi,
                  const std::string& where);

// The optimizer and schedule settings a run's numbers depend on, and the zerotron version: the
// reproducibility record.
nlohmann::json training_settings(const TrainOptions& o, int64_t global_batch);
// One line per setting that differs between a checkpoint's record and this run's ("--lr was
// 0.0003, now 0.0001"); empty when they agree or the checkpoint has no record.
std::vector<std::string> changed_settings(const nlohmann::json& saved, const nlohmann::json& now);

const char* zerotron_version();

}  // namespace zt
