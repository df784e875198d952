// libFuzzer target for what `zerotron import` reads from the user: a Hugging Face GPT-2
// config.json and a safetensors file, through gpt2_model_from_config and read_safetensors (the
// functions the import command calls). Any bytes must end in a model and tensors or InputError;
// every element of every floating tensor the reader accepts is then read, so a tensor reaching
// outside the input is an AddressSanitizer report.
// Input: config.json, a 0 byte, the safetensors file. Run by scripts/fuzz.sh.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/checkpoint/hf_gpt2.h"
#include "src/core/error.h"

// Where the elements' sum goes, so the reads are not optimised away.
volatile float sink = 0;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  if (nul == std::string_view::npos) return 0;
  const std::string_view config = in.substr(0, nul), file = in.substr(nul + 1);
  try {
    const zt::GptConfig model = zt::gpt2_model_from_config(config, "fuzz/config.json");
    if (model.hidden % model.heads != 0) std::abort();
  } catch (const zt::InputError&) {
  }
  try {
    float sum = 0;
    for (const auto& [name, t] : zt::read_safetensors({file.data(), file.size()}, "fuzz/model")) {
      int64_t n = 1;
      for (int64_t d : t.shape) n *= d;
      if (t.data < file.data() || t.data + t.bytes > file.data() + file.size()) std::abort();
      if (t.floating())
        for (int64_t i = 0; i < n; ++i) sum += t.at(i);
    }
    sink = sum;
  } catch (const zt::InputError&) {
  }
  return 0;
}
