// zerotron export --load DIR --output model.safetensors [--bf16]: the newest checkpoint of DIR,
// consolidated (every tensor-parallel and ZeRO shard re-assembled) into one safetensors file with
// Hugging Face GPT-2 names and layout, plus a config.json beside it, so
// transformers.GPT2LMHeadModel.from_pretrained(<that directory>) loads it. One process, no MPI.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "apps/cli_flags.h"
#include "src/core/half.h"
#include "src/train/checkpoint.h"

namespace zt::app {
namespace {

// One exported tensor: zerotron's name, Hugging Face's, and whether nn.Linear's [out, in] must
// become GPT-2's Conv1D [in, out].
struct Mapping {
  std::string ours, theirs;
  bool transpose;
};

std::vector<Mapping> gpt2_names(int layers) {
  std::vector<Mapping> m = {{"embedding.word", "transformer.wte.weight", false},
                            {"embedding.position", "transformer.wpe.weight", false}};
  for (int i = 0; i < layers; ++i) {
    const std::string z = "layers." + std::to_string(i) + ".",
                      h = "transformer.h." + std::to_string(i) + ".";
    for (const auto& [a, b, t] : std::vector<std::tuple<const char*, const char*, bool>>{
             {"ln1.weight", "ln_1.weight", false},
             {"ln1.bias", "ln_1.bias", false},
             {"attn.qkv.weight", "attn.c_attn.weight", true},
             {"attn.qkv.bias", "attn.c_attn.bias", false},
             {"attn.proj.weight", "attn.c_proj.weight", true},
             {"attn.proj.bias", "attn.c_proj.bias", false},
             {"ln2.weight", "ln_2.weight", false},
             {"ln2.bias", "ln_2.bias", false},
             {"mlp.fc.weight", "mlp.c_fc.weight", true},
             {"mlp.fc.bias", "mlp.c_fc.bias", false},
             {"mlp.proj.weight", "mlp.c_proj.weight", true},
             {"mlp.proj.bias", "mlp.c_proj.bias", false}})
      m.push_back({z + a, h + b, t});
  }
  m.push_back({"final_ln.weight", "transformer.ln_f.weight", false});
  m.push_back({"final_ln.bias", "transformer.ln_f.bias", false});
  return m;
}

}  // namespace

int export_model(Args args) {
  const std::vector<FlagSpec> specs = {
      {"--load", "DIR", "checkpoint directory (its newest complete iteration)", true},
      {"--output", "FILE", "safetensors file to write; config.json goes beside it", true},
      {"--bf16", "", "write bf16 instead of fp32"},
  };
  auto flags = ParsedFlags::parse("export", specs, args);
  if (!flags) return 0;
  nlohmann::json meta;
  const std::string iter_dir = latest_iteration_dir(flags->str("--load"), meta);
  const GptConfig c = config_from_json(meta.at("model"));
  const auto whole = read_whole_tensors(iter_dir, meta);
  const bool bf16 = flags->has("--bf16");
  const size_t elem = bf16 ? 2 : 4;

  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "pt"},
                            {"source", "zerotron " + iter_dir},
                            {"iteration", std::to_string(meta.at("iteration").get<int>())}};
  std::vector<std::vector<char>> blobs;
  size_t offset = 0;
  for (const Mapping& m : gpt2_names(c.num_layers)) {
    const auto it = whole.find(m.ours);
    ZT_REQUIRE(it != whole.end(), "checkpoint '{}' has no tensor '{}'", iter_dir, m.ours);
    const Shape& s = it->second.shape;
    const std::vector<float>& v = it->second.v[0];  // master weights
    // Drop the vocabulary padding: Hugging Face's wte has exactly vocab_size rows.
    const int64_t rows = m.ours == "embedding.word" ? c.vocab_size : (s.rank() == 2 ? s[0] : s[0]);
    const int64_t cols = s.rank() == 2 ? s[1] : 1;
    std::vector<float> out(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < cols; ++k)
        out[static_cast<size_t>(m.transpose ? k * rows + r : r * cols + k)] =
            v[static_cast<size_t>(r * cols + k)];
    std::vector<int64_t> shape;
    if (s.rank() == 1)
      shape = {rows};
    else if (m.transpose)
      shape = {cols, rows};
    else
      shape = {rows, cols};
    std::vector<char> blob(out.size() * elem);
    if (bf16)
      for (size_t i = 0; i < out.size(); ++i) {
        const uint16_t b = to_bf16(out[i]).bits;
        std::memcpy(blob.data() + 2 * i, &b, 2);
      }
    else
      std::memcpy(blob.data(), out.data(), blob.size());
    header[m.theirs] = {{"dtype", bf16 ? "BF16" : "F32"},
                        {"shape", shape},
                        {"data_offsets", {offset, offset + blob.size()}}};
    offset += blob.size();
    blobs.push_back(std::move(blob));
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned
  const std::string output = flags->str("--output");
  {
    std::ofstream out(output, std::ios::binary | std::ios::trunc);
    ZT_REQUIRE(out.good(), "cannot write --output '{}'", output);
    const uint64_t n = text.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto& b : blobs) out.write(b.data(), static_cast<std::streamsize>(b.size()));
    ZT_REQUIRE(out.good(), "writing '{}' failed", output);
  }
  const nlohmann::json config = {{"architectures", {"GPT2LMHeadModel"}},
                                 {"model_type", "gpt2"},
                                 {"vocab_size", c.vocab_size},
                                 {"n_positions", c.seq_length},
                                 {"n_embd", c.hidden},
                                 {"n_layer", c.num_layers},
                                 {"n_head", c.heads},
                                 {"n_inner", c.ffn_hidden()},
                                 {"activation_function", "gelu_new"},  // GeLU, tanh approximation
                                 {"layer_norm_epsilon", 1e-5},
                                 {"resid_pdrop", c.hidden_dropout},
                                 {"attn_pdrop", c.attention_dropout},
                                 {"embd_pdrop", 0.0},  // zerotron has no embedding dropout
                                 {"tie_word_embeddings", true},
                                 {"bos_token_id", c.vocab_size - 1},
                                 {"eos_token_id", c.vocab_size - 1},
                                 {"torch_dtype", bf16 ? "bfloat16" : "float32"}};
  const std::filesystem::path config_path =
      std::filesystem::path(output).parent_path() / "config.json";
  std::ofstream(config_path) << config.dump(2) << "\n";
  fmt::print("zerotron: exported {} tensors ({} bytes, {}) of iteration {} to {} and {}\n",
             blobs.size(), offset, bf16 ? "bf16" : "fp32", meta.at("iteration").get<int>(), output,
             config_path.string());
  return 0;
}

}  // namespace zt::app
