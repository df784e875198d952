#include "src/checkpoint/hf_gpt2.h"

#include <cmath>
#include <cstring>
#include <tuple>

#include "src/core/error.h"
#include "src/core/half.h"
#include "src/core/input_file.h"
#include "src/core/json_input.h"

namespace zt {
namespace {

double config_prob(const nlohmann::json& c, const char* key, const std::string& where) {
  const auto it = c.find(key);
  if (it == c.end() || it->is_null()) return 0.1;  // GPT2Config's default
  ZT_REQUIRE(it->is_number() && it->get<double>() >= 0 && it->get<double>() < 1,
             "import: '{}': '{}' must be a number in [0, 1), got {}", where, key,
             json_excerpt(*it));
  return it->get<double>();
}

// Bytes per element of each safetensors dtype.
size_t element_bytes(std::string_view dtype) {
  constexpr std::pair<std::string_view, size_t> kSizes[] = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
      {"U32", 4},  {"F32", 4}, {"I64", 8}, {"U64", 8},     {"F64", 8}};
  for (const auto& [name, size] : kSizes)
    if (name == dtype) return size;
  return 0;
}

}  // namespace

int hf_config_int(const nlohmann::json& c, const char* key, const std::string& where) {
  const auto it = c.find(key);
  ZT_REQUIRE(it != c.end() && it->is_number_integer() && it->get<int64_t>() > 0 &&
                 it->get<int64_t>() < (int64_t{1} << 24),
             "import: '{}' needs a positive integer '{}' below 2^24{}", where, key,
             it == c.end() ? "" : fmt::format(", got {}", json_excerpt(*it)));
  return static_cast<int>(it->get<int64_t>());
}

void hf_config_is(const nlohmann::json& c, const char* key, const nlohmann::json& want,
                  const std::string& where, std::string_view why) {
  const auto it = c.find(key);
  if (it == c.end()) return;
  const bool same = want.is_number_float() && it->is_number()
                        ? std::abs(it->get<double>() - want.get<double>()) < 1e-12
                        : *it == want;
  ZT_REQUIRE(same, "import: '{}': {}, '{}' is {}", where, why, key, json_excerpt(*it));
}

std::vector<HfTensor> gpt2_tensors(int layers) {
  std::vector<HfTensor> m = {{"embedding.word", "transformer.wte.weight", false},
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

nlohmann::json gpt2_config(const GptConfig& c, const std::string& dtype) {
  return {{"architectures", {"GPT2LMHeadModel"}},
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
          {"torch_dtype", dtype}};
}

GptConfig gpt2_model_from_config(std::string_view text, const std::string& where) {
  const nlohmann::json c = parse_json_input(text, where);
  ZT_REQUIRE(c.is_object(), "import: '{}' must hold a JSON object, got {}", where,
             json_type_name(c));
  GptConfig g;
  g.hidden = hf_config_int(c, "n_embd", where);
  g.num_layers = hf_config_int(c, "n_layer", where);
  g.heads = hf_config_int(c, "n_head", where);
  g.vocab_size = hf_config_int(c, "vocab_size", where);
  g.seq_length = hf_config_int(c, "n_positions", where);
  g.padded_vocab_size = g.vocab_size;
  g.hidden_dropout = static_cast<float>(config_prob(c, "resid_pdrop", where));
  g.attention_dropout = static_cast<float>(config_prob(c, "attn_pdrop", where));
  ZT_REQUIRE(g.hidden % g.heads == 0, "import: '{}': n_head must divide n_embd", where);
  if (const auto it = c.find("n_inner"); it != c.end() && !it->is_null())
    hf_config_is(c, "n_inner", int64_t{4} * g.hidden, where, "zerotron's MLP is 4 x n_embd wide");
  hf_config_is(c, "activation_function", "gelu_new", where,
               "zerotron computes GeLU with the tanh approximation (gelu_new)");
  hf_config_is(c, "layer_norm_epsilon", 1e-5, where, "zerotron's layernorm epsilon is 1e-5");
  hf_config_is(c, "tie_word_embeddings", true, where,
               "zerotron ties the output head to the word embedding");
  return g;
}

float SafetensorsTensor::at(int64_t i) const {
  if (dtype == "F32") {
    float v = 0;
    std::memcpy(&v, data + 4 * i, 4);
    return v;
  }
  if (dtype == "BF16") {
    bf16 v;
    std::memcpy(&v.bits, data + 2 * i, 2);
    return to_float(v);
  }
  fp16 v;
  std::memcpy(&v.bits, data + 2 * i, 2);
  return to_float(v);
}

std::map<std::string, SafetensorsTensor> read_safetensors(std::span<const char> file,
                                                          const std::string& where) {
  ZT_REQUIRE(file.size() >= 8, "import: '{}' is not a safetensors file ({} bytes)", where,
             file.size());
  uint64_t header_len = 0;
  std::memcpy(&header_len, file.data(), 8);
  ZT_REQUIRE(header_len <= file.size() - 8 && header_len <= (uint64_t{100} << 20),
             "import: '{}' is not a safetensors file (header length {})", where, header_len);
  // Names are short; a tensor entry nests its shape and offsets two levels down.
  const nlohmann::json header =
      parse_json_input(std::string_view(file.data() + 8, header_len), where + " (header)",
                       JsonLimits{.max_depth = 3, .max_string = 4096});
  ZT_REQUIRE(header.is_object(), "import: '{}' has no valid header (a JSON object)", where);
  const char* body = file.data() + 8 + header_len;
  const uint64_t body_len = file.size() - 8 - header_len;
  std::map<std::string, SafetensorsTensor> out;
  for (const auto& [name, e] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string what = fmt::format("import: '{}': tensor '{}'", where, excerpt(name));
    ZT_REQUIRE(e.is_object(), "{} is not an object", what);
    SafetensorsTensor t;
    const auto dt = e.find("dtype");
    ZT_REQUIRE(dt != e.end() && dt->is_string() && element_bytes(dt->get<std::string>()) > 0,
               "{} has no known dtype{}", what,
               dt == e.end() ? "" : fmt::format(" (got {})", json_excerpt(*dt)));
    t.dtype = dt->get<std::string>();
    const auto shape = e.find("shape");
    ZT_REQUIRE(shape != e.end() && shape->is_array() && shape->size() <= 8,
               "{} needs a shape: an array of at most 8 dimensions", what);
    uint64_t elements = 1;
    for (const auto& d : *shape) {
      ZT_REQUIRE(d.is_number_unsigned() && d.get<uint64_t>() <= body_len,
                 "{} has a bad dimension {} (the file holds {} data bytes)", what, json_excerpt(d),
                 body_len);
      t.shape.push_back(static_cast<int64_t>(d.get<uint64_t>()));
      // Every factor is at most body_len < 2^63, so the product is checked before it overflows.
      ZT_REQUIRE(d.get<uint64_t>() == 0 || elements <= body_len / d.get<uint64_t>(),
                 "{} has more elements than the file has bytes", what);
      elements *= d.get<uint64_t>();
    }
    const auto off = e.find("data_offsets");
    ZT_REQUIRE(off != e.end() && off->is_array() && off->size() == 2 &&
                   (*off)[0].is_number_unsigned() && (*off)[1].is_number_unsigned(),
               "{} needs data_offsets [begin, end]", what);
    const uint64_t begin = (*off)[0].get<uint64_t>(), end = (*off)[1].get<uint64_t>();
    t.bytes = elements * element_bytes(t.dtype);  // <= body_len * 8: no overflow
    ZT_REQUIRE(begin <= end && end <= body_len && end - begin == t.bytes,
               "{} has data_offsets [{}, {}], but its {} {} elements take {} bytes and the data "
               "holds {}",
               what, begin, end, elements, t.dtype, t.bytes, body_len);
    t.data = body + begin;
    out.emplace(name, std::move(t));
  }
  return out;
}

}  // namespace zt
