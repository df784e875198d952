#pragma once
// Hugging Face GPT-2 naming and layout of zerotron's parameters: the one table `export` and
// `import` both use. GPT-2 keeps Linear weights as Conv1D [in, out]; zerotron (nn.Linear)
// keeps [out, in], so those are transposed on the way.
// The reading half (config.json and the safetensors header) takes files a user hands over to
// `zerotron import`: both are parsed with the bounded JSON reader and every field is checked, so
// any bytes end in InputError (tests/fuzz/safetensors_fuzz drives exactly these two functions).
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/dtype.h"
#include "src/model/gpt_config.h"

namespace zt {

// One Hugging Face tensor: zerotron's tensor `ours`, or its rows [row_begin, row_begin + rows)
// (rows -1: all of them) where zerotron stacks several of Hugging Face's tensors in one (Llama's
// q|k|v and gate|up), transposed where Hugging Face keeps [in, out].
struct HfTensor {
  std::string ours, theirs;
  bool transpose;
  int64_t row_begin = 0, rows = -1;
};
std::vector<HfTensor> gpt2_tensors(int layers);

// config.json of a GPT2LMHeadModel with this shape (`dtype`: "float32", "bfloat16", "float16").
nlohmann::json gpt2_config(const GptConfig& c, const std::string& dtype);

// The model a GPT2LMHeadModel config.json (its text; `where` names the file) describes, refused
// where zerotron's GPT differs (MLP width, activation, layernorm epsilon, untied head).
// padded_vocab_size is left to the caller (it follows the layout).
GptConfig gpt2_model_from_config(std::string_view text, const std::string& where);

// A config.json field that must be a positive integer below 2^24 (InputError naming `key`).
int hf_config_int(const nlohmann::json& c, const char* key, const std::string& where);
// A config.json field that must be absent or hold `want` (numbers compared as numbers); else
// InputError naming `key` and saying `why`.
void hf_config_is(const nlohmann::json& c, const char* key, const nlohmann::json& want,
                  const std::string& where, std::string_view why);

// One tensor of a safetensors file, inside the file's bytes.
struct SafetensorsTensor {
  std::string dtype;  // as the header spells it: "F32", "BF16", "F16", "I64", ...
  std::vector<int64_t> shape;
  const char* data = nullptr;  // the first element
  uint64_t bytes = 0;
  // Element i (row-major) as float; only where floating() (F32, BF16, F16).
  float at(int64_t i) const;
  bool floating() const { return dtype == "F32" || dtype == "BF16" || dtype == "F16"; }
};

// The tensors of a whole safetensors file (`file`: all its bytes): the 8-byte header length, the
// header (bounded JSON, at most 100 MiB), and for every entry a known dtype, a shape of
// non-negative dimensions and data_offsets [begin, end] inside the data whose length is the
// shape's. "__metadata__" is skipped. Throws InputError naming `where`.
std::map<std::string, SafetensorsTensor> read_safetensors(std::span<const char> file,
                                                          const std::string& where);

}  // namespace zt
