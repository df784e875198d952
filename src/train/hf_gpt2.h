#pragma once
// Hugging Face GPT-2 naming and layout of zerotron's parameters: the one table `export` and
// `import` both use. GPT-2 keeps Linear weights as Conv1D [in, out]; zerotron (nn.Linear)
// keeps [out, in], so those are transposed on the way.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/model/gpt_config.h"

namespace zt {

struct HfTensor {
  std::string ours, theirs;
  bool transpose;
};
std::vector<HfTensor> gpt2_tensors(int layers);

// config.json of a GPT2LMHeadModel with this shape (`dtype`: "float32", "bfloat16", "float16").
nlohmann::json gpt2_config(const GptConfig& c, const std::string& dtype);

}  // namespace zt
