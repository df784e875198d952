#pragma once
// DeepSpeed's meanings of its config keys where a key is not simply one training option's (those
// are the JSON keys of options.inc): the batch identity train_batch_size = micro x
// gradient_accumulation_steps x data-parallel size (any two give the third, all three must
// agree), "auto" (the flag's value), fp16.initial_scale_power (a scale of 2^p, 16 when a
// DeepSpeed config leaves it out), the optimizer and scheduler sections, and the keys of features
// zerotron lacks: ignored with one warning each, as DeepSpeed ignores what it does not know, or
// refused where ignoring them would change the math. docs/deepspeed.md lists them.
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "src/config/options.h"

namespace zt {

class DeepSpeedKeys {
 public:
  // Sets the training option of `flag` (without "--") from the text the flag would take.
  using SetOption = std::function<void(std::string_view flag, const std::string& text)>;
  DeepSpeedKeys(ConfigDialect dialect, std::string where, SetOption set);

  // Handles flattened `key` = `value` where DeepSpeed gives it a meaning of its own ("auto", a
  // key without an option, a value an option's check would misread). Returns false for a key
  // left to the options' table. Throws InputError naming the key when it cannot be ignored.
  bool take(const std::string& key, const nlohmann::json& value);
  // A key set through the options' table (the batch identity and the scale need to know).
  void given(const std::string& key) { given_.insert(key); }
  // A key neither this nor the table knows: refused by zerotron's reader, warned by DeepSpeed's.
  void unknown(const std::string& key);
  // After the last key: the batch identity's derived member and DeepSpeed's defaults.
  void finish(TrainOptions& o) const;
  // One line per key ignored (each section once).
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  void warn(const std::string& section, const std::string& why);
  void refuse_unless(bool neutral, const std::string& key, const nlohmann::json& value,
                     std::string_view why) const;
  void set_number(std::string_view flag, const std::string& key, const nlohmann::json& v) const;
  bool optimizer_key(const std::string& key, const nlohmann::json& value);
  bool scheduler_key(const std::string& key, const nlohmann::json& value);
  ConfigDialect dialect_;
  std::string where_;
  SetOption set_;
  bool has(const std::string& key) const { return given_.count(key) + auto_.count(key) != 0; }
  // Keys set (through the table or here), keys given as "auto", sections warned.
  std::set<std::string> given_, auto_, warned_;
  std::string param_nvme_path_;  // zero_optimization.offload_param.nvme_path
  std::vector<std::string> warnings_;
  std::string scheduler_type_, warmup_type_;
  double cos_min_ratio_ = 0;
};

// train_batch_size without train_micro_batch_size_per_gpu leaves the micro batch to the
// data-parallel size (DeepSpeed's micro = train_batch_size / (accumulation x dp)): sets it now,
// for `dp` ranks. Throws InputError when it does not divide. No-op otherwise.
void resolve_micro_batch(TrainOptions& o, int dp);

}  // namespace zt
