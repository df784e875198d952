#pragma once
// meta.json of a checkpoint iteration: what it records and how a reader checks it. A checkpoint
// may come from anywhere, so every field is checked for its type and range (one line naming the
// file and the field) before any of it sizes an allocation or names a file.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/dtype.h"
#include "src/data/sample_skips.h"
#include "src/model/gpt_config.h"
#include "src/model/pipeline_split.h"
#include "src/zero/loss_scaler.h"

namespace zt {

// A meta.json's text (file `where`) parsed with the shared bounded reader: nesting (meta.json's
// own is 3 deep) and string lengths capped, errors quoting a short excerpt. InputError otherwise.
nlohmann::json parse_meta_json(std::string_view text, const std::string& where);

// The layout a checkpoint is saved under, as its meta.json and shard headers record it: what a
// save writes, an import produces and a load reads back.
struct CheckpointLayout {
  GptConfig model;
  int tp = 1, dp = 1, stage = 0;
  // Pipeline stages and model chunks per stage (layout fields pipeline_model_parallel_size and
  // virtual_pipeline_model_parallel_size, Megatron's names; absent before pipelines: 1).
  int pp = 1, chunks = 1;
  // The first / last stage's layers of an uneven split (layout fields
  // decoder_first_pipeline_num_layers / decoder_last_pipeline_num_layers, written when set;
  // absent: 0, an even split).
  int first_stage_layers = 0, last_stage_layers = 0;
  // Expert parallelism (layout field expert_model_parallel_size, Megatron's name, written where
  // above 1; absent: 1): dp index D's files hold ep rank D % ep's experts, partitioned over the
  // dp / ep ranks holding the same experts. A model without experts records 1.
  int ep = 1;
  PipelineSplit split() const {
    return {model.num_layers, pp, chunks, first_stage_layers, last_stage_layers};
  }
  // The iteration its files record, and ZeRO's partition unit (--reduce-bucket-size of the run
  // that saved it, or will load it): what a reshaping load needs to find every element in the
  // stage 1-3 shards.
  int64_t iteration = 0, partition_unit = 1;
};
// The model and layout of `meta` (file `where`), checked.
CheckpointLayout read_layout(const nlohmann::json& meta, const std::string& where);

// The training loop's part of meta.json: where the data streams stand, the loss scaler, the seed
// (dropout and the data order are pure functions of the seed and the sample index, so these are
// the whole random state) and the settings the numbers depend on (training_settings).
struct TrainingRecord {
  int64_t consumed_train_samples = 0, consumed_valid_samples = 0;
  LossScaler::State scaler{};
  int64_t seed = 0;
  nlohmann::json settings;
  // The learning-rate schedule's steps (the applied updates); recorded only where it differs
  // from the iteration, so a run without skipped steps writes what earlier versions wrote.
  int64_t lr_steps = 0;
  // Written only when a run skipped samples, so other runs write what earlier versions wrote.
  data::SampleSkips skipped_train_samples;
};
// Everything meta.json holds. An import records no training (no loss scaler, seed or settings:
// zero samples consumed). `shards`: file name -> {bytes, header_crc32}.
struct MetaRecord {
  CheckpointLayout layout;
  DType precision = DType::F32;
  int64_t adam_step = 0;
  std::optional<TrainingRecord> training;
  nlohmann::json shards;
  // An import's bos_token_id and eos_token_id from config.json (hf_token_ids), for an export to
  // write back; null when there are none.
  nlohmann::json token_ids;
};
// meta.json's "skipped_train_samples" (none when absent), checked: at most
// SampleSkips::kMaxRanges sorted, disjoint, non-empty [begin, end) pairs.
data::SampleSkips skipped_samples(const nlohmann::json& meta, const std::string& where);
// meta.json's text for `r`: the one place it is assembled.
std::string meta_json(const MetaRecord& r);

nlohmann::json model_to_json(const GptConfig& c);
// Checked: positive sizes within bounds, dropouts in [0, 1).
GptConfig model_from_json(const nlohmann::json& j, const std::string& where);

// An integer field of `j` in [lo, hi]; InputError naming `where` and `key` otherwise.
int64_t int_field(const nlohmann::json& j, const std::string& key, int64_t lo, int64_t hi,
                  const std::string& where);

// One line per setting that differs between a checkpoint's record and this run's ("--lr was
// 0.0003, now 0.0001"); empty when they agree or the checkpoint has no record.
std::vector<std::string> changed_settings(const nlohmann::json& saved, const nlohmann::json& now);
// The same for the model's settings that may change on a load (dropout, a shorter sequence).
std::vector<std::string> changed_model_settings(const GptConfig& saved, const GptConfig& now);

const char* zerotron_version();

}  // namespace zt
