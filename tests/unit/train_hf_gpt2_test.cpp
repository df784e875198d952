// What `zerotron import` reads from the user, refused with one InputError whatever the bytes:
// the safetensors header (bounded JSON, dtype, shape, offsets inside the data) and config.json
// (bounded JSON, every field's type). Deep nesting used to overflow the stack when an error
// message dumped the value; a string where a number belongs escaped as a library exception.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "src/checkpoint/hf_gpt2.h"
#include "src/checkpoint/hf_llama.h"
#include "src/core/error.h"
#include "tests/support/tiny_gpt.h"

namespace zt {
namespace {

std::string safetensors(const std::string& header, size_t body_bytes) {
  std::string file(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(file.data(), &n, 8);
  return file + header + std::string(body_bytes, '\0');
}

void expect_refused(const std::string& file, const std::string& needle) {
  try {
    read_safetensors({file.data(), file.size()}, "m.safetensors");
    ADD_FAILURE() << "accepted; wanted: " << needle;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

const std::string kDeep = std::string(100000, '[') + "1" + std::string(100000, ']');

TEST(HfGpt2, ReadsAValidFile) {
  const std::string file = safetensors(
      R"({"__metadata__": {"format": "pt"}, "a": {"dtype": "F32", "shape": [2, 1], )"
      R"("data_offsets": [0, 8]}, "b": {"dtype": "I64", "shape": [], "data_offsets": [8, 16]}})",
      16);
  const auto t = read_safetensors({file.data(), file.size()}, "m.safetensors");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.at("a").shape, (std::vector<int64_t>{2, 1}));
  EXPECT_TRUE(t.at("a").floating());
  EXPECT_EQ(t.at("a").at(1), 0.0f);
  EXPECT_FALSE(t.at("b").floating());
  EXPECT_EQ(t.at("b").bytes, 8u);
}

TEST(HfGpt2, RefusesHostileSafetensors) {
  expect_refused("short", "is not a safetensors file (5 bytes)");
  std::string long_header = safetensors("{}", 0);
  long_header[0] = '\xff';  // claims 255 header bytes, holds 2
  expect_refused(long_header, "header length 255");
  expect_refused(safetensors(R"({"a": {"dtype": "F32", "shape": )" + kDeep + "}}", 0),
                 "nests deeper than 3 levels");
  expect_refused(
      safetensors(R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}})", 8),
      "has data_offsets [0, 12]");
  expect_refused(safetensors(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}})", 8),
                 "has data_offsets [4, 0]");
  expect_refused(
      safetensors(R"({"a": {"dtype": "F32", "shape": [65536, 65536, 65536, 65536, 65536], )"
                  R"("data_offsets": [0, 0]}})",
                  0),
      "bad dimension 65536");
  expect_refused(safetensors(R"({"a": {"dtype": "F32", "shape": [4, 4, 4], "data_offsets": )"
                             R"([0, 64]}})",
                             16),
                 "has more elements than the file has bytes");
  expect_refused(safetensors(R"({"a": {"dtype": "Q4", "shape": [1], "data_offsets": [0, 1]}})", 1),
                 "has no known dtype (got Q4)");
  expect_refused(safetensors(R"({"a": {"dtype": 5}})", 1), "has no known dtype (got 5)");
  expect_refused(safetensors(R"([1])", 0), "has no valid header");
}

TEST(HfGpt2, RefusesHostileConfig) {
  const std::string ok =
      R"({"n_embd": 8, "n_layer": 1, "n_head": 2, "vocab_size": 16, "n_positions": 4)";
  const GptConfig c = gpt2_model_from_config(ok + "}", "config.json");
  EXPECT_EQ(c.hidden, 8);
  EXPECT_EQ(c.hidden_dropout, 0.1f);  // GPT2Config's default
  auto refused = [&](const std::string& text, const std::string& needle) {
    try {
      gpt2_model_from_config(text, "config.json");
      ADD_FAILURE() << "accepted; wanted: " << needle;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  refused(ok + R"(, "n_inner": )" + kDeep + "}", "nests deeper than 32 levels");
  refused(ok + R"(, "n_inner": [[[[1]]]]})", "'n_inner' is [[[[1]]]]");
  refused(ok + R"(, "layer_norm_epsilon": "1e-5"})", "'layer_norm_epsilon' is 1e-5");
  refused(ok + R"(, "activation_function": 7})", "'activation_function' is 7");
  refused(ok + R"(, "tie_word_embeddings": 1})", "'tie_word_embeddings' is 1");
  refused(ok + R"(, "resid_pdrop": "x"})", "'resid_pdrop' must be a number in [0, 1), got x");
  refused(R"({"n_embd": 4.5})", "needs a positive integer 'n_embd' below 2^24, got 4.5");
  refused("[]", "must hold a JSON object, got array");
}

// config.json's bos_token_id and eos_token_id: what import records and export writes back.
TEST(HfConfig, TokenIdsAreCheckedAndWrittenBack) {
  const nlohmann::json ids =
      hf_token_ids(R"({"bos_token_id": 1, "eos_token_id": [2, 3], "x": 0})", 16, "import: 'c'");
  EXPECT_EQ(ids, nlohmann::json::parse(R"({"bos_token_id": 1, "eos_token_id": [2, 3]})"));
  EXPECT_EQ(hf_token_ids(R"({"bos_token_id": null})", 16, "import: 'c'"), nlohmann::json::object());
  // Ids outside the vocabulary are left out (transformers only warns of them); other types are
  // refused.
  for (const char* outside : {"16", "-1", "[1, 16]"})
    EXPECT_EQ(hf_token_ids(std::string(R"({"eos_token_id": )") + outside + "}", 16, "import: 'c'"),
              nlohmann::json::object())
        << outside;
  for (const char* bad : {"\"1\"", "[]", "1.5", "[1, \"2\"]"}) {
    try {
      hf_token_ids(std::string(R"({"eos_token_id": )") + bad + "}", 16, "import: 'c'");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(
                    "import: 'c': 'eos_token_id' must be a token id or a list of them, got ", 0),
                0u)
          << e.what();
    }
  }
  const GptConfig llama = test::tiny_llama(2);
  EXPECT_FALSE(hf_config(llama, "float32").contains("bos_token_id"));
  const nlohmann::json with = hf_config(llama, "float32", ids);
  EXPECT_EQ(with.at("bos_token_id"), 1);
  EXPECT_EQ(with.at("eos_token_id"), nlohmann::json::parse("[2, 3]"));
  const GptConfig gpt2 = test::tiny_gpt();  // GPT-2's default: the last token
  EXPECT_EQ(hf_config(gpt2, "float32").at("eos_token_id"), gpt2.vocab_size - 1);
  EXPECT_EQ(
      hf_config(gpt2, "float32", {{"bos_token_id", 5}, {"eos_token_id", 5}}).at("eos_token_id"), 5);
}

}  // namespace
}  // namespace zt
