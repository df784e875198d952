// Reading a Hugging Face tokenizer.json into BpeTokenizer. Only the byte-level BPE kind is read
// (GPT-2, GPT-NeoX, Llama 3, Qwen2, SmolLM): every key that changes ids is either reproduced
// exactly or refused, naming it, so a tokenizer that loads gives `tokenizers`' ids. Every value
// is type-checked before use: a hostile file ends in InputError, never in a JSON exception.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

#include "src/core/error.h"
#include "src/core/input_file.h"
#include "src/core/json_input.h"
#include "src/data/bpe_tokenizer.h"
#include "src/data/byte_unicode.h"
#include "src/data/normalize.h"

namespace zt::data {
namespace {

using nlohmann::json;

constexpr std::string_view kKinds =
    "zerotron reads byte-level BPE tokenizers (GPT-2, GPT-NeoX, Llama 3, Qwen2, SmolLM)";

// Reads one tokenizer.json, with `name` and a key path in every message.
struct Reader {
  std::string_view name;

  const json* member(const json& obj, std::string_view key) const {
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  }
  const json& object(const json& obj, std::string_view key, const std::string& path) const {
    const json* v = member(obj, key);
    ZT_REQUIRE(v && v->is_object(), "{}: {} must be a JSON object{}", name, path,
               v ? fmt::format(", got {}", json_type_name(*v)) : std::string(" and is missing"));
    return *v;
  }
  const json& array(const json& obj, std::string_view key, const std::string& path) const {
    const json* v = member(obj, key);
    ZT_REQUIRE(v && v->is_array(), "{}: {} must be a JSON array{}", name, path,
               v ? fmt::format(", got {}", json_type_name(*v)) : std::string(" and is missing"));
    return *v;
  }
  std::string string(const json& obj, std::string_view key, const std::string& path) const {
    const json* v = member(obj, key);
    ZT_REQUIRE(v && v->is_string(), "{}: {} must be a string{}", name, path,
               v ? fmt::format(", got {}", json_excerpt(*v)) : std::string(" and is missing"));
    return v->get<std::string>();
  }
  bool boolean(const json& obj, std::string_view key, const std::string& path, bool dflt) const {
    const json* v = member(obj, key);
    if (!v) return dflt;
    ZT_REQUIRE(v->is_boolean(), "{}: {} must be true or false, got {}", name, path,
               json_excerpt(*v));
    return v->get<bool>();
  }
  int64_t id(const json& v, const std::string& path) const {
    ZT_REQUIRE(v.is_number_integer(), "{}: {} must be an integer id, got {}", name, path,
               json_excerpt(v));
    return v.get<int64_t>();
  }
  std::string type(const json& obj, const std::string& path) const {
    ZT_REQUIRE(obj.is_object(), "{}: {} must be a JSON object, got {}", name, path,
               json_type_name(obj));
    return string(obj, "type", path + ".type");
  }
  [[noreturn]] void unsupported(const std::string& path, std::string_view value,
                                std::string_view why = {}) const {
    throw InputError(
        fmt::format("{}: {} '{}' is not supported{}; {}", name, path, excerpt(value), why, kKinds));
  }
};

// The pre-tokenizer as split rules plus ByteLevel's settings.
struct PreTokenizer {
  std::vector<SplitRule> rules;
  size_t prefix_stage = 0;
  bool prefix_space = false;
};

void read_stage(const Reader& r, const json& p, const std::string& path, PreTokenizer& out,
                bool& byte_level) {
  const std::string type = r.type(p, path);
  ZT_REQUIRE(!byte_level,
             "{}: {} ({}) comes after ByteLevel; zerotron splits only before the byte mapping",
             r.name, path, excerpt(type));
  if (type == "ByteLevel") {
    byte_level = true;
    out.prefix_stage = out.rules.size();
    out.prefix_space = r.boolean(p, "add_prefix_space", path + ".add_prefix_space", true);
    if (r.boolean(p, "use_regex", path + ".use_regex", true)) out.rules.push_back(SplitRule::kGpt2);
  } else if (type == "Split") {
    const json& pat = r.object(p, "pattern", path + ".pattern");
    const json* re = r.member(pat, "Regex");
    if (!re || !re->is_string())
      r.unsupported(path + ".pattern", json_excerpt(pat, 60),
                    " (only the Regex patterns of GPT-2, Llama 3 and Qwen2)");
    const auto rule = split_rule_of_regex(re->get<std::string>());
    if (!rule)
      r.unsupported(path + ".pattern.Regex", re->get<std::string>(),
                    " (only the Regex patterns of GPT-2, Llama 3 and Qwen2, compared exactly)");
    const std::string behavior = r.string(p, "behavior", path + ".behavior");
    // The three patterns match every character, so Isolated splits exactly at their matches.
    if (behavior != "Isolated") r.unsupported(path + ".behavior", behavior, " (only Isolated)");
    if (r.boolean(p, "invert", path + ".invert", false))
      r.unsupported(path + ".invert", "true", " (only false)");
    out.rules.push_back(*rule);
  } else if (type == "Digits") {
    out.rules.push_back(r.boolean(p, "individual_digits", path + ".individual_digits", false)
                            ? SplitRule::kDigits
                            : SplitRule::kDigitRuns);
  } else {
    r.unsupported(path + ".type", type);
  }
}

PreTokenizer read_pre_tokenizer(const Reader& r, const json& root) {
  const json* p = r.member(root, "pre_tokenizer");
  ZT_REQUIRE(p, "{}: pre_tokenizer is missing: a byte-level BPE tokenizer has a ByteLevel one; {}",
             r.name, kKinds);
  PreTokenizer out;
  bool byte_level = false;
  if (r.type(*p, "pre_tokenizer") == "Sequence") {
    const json& seq = r.array(*p, "pretokenizers", "pre_tokenizer.pretokenizers");
    for (size_t i = 0; i < seq.size(); ++i)
      read_stage(r, seq[i], fmt::format("pre_tokenizer.pretokenizers[{}]", i), out, byte_level);
  } else {
    read_stage(r, *p, "pre_tokenizer", out, byte_level);
  }
  ZT_REQUIRE(byte_level,
             "{}: pre_tokenizer has no ByteLevel step: BPE without the byte mapping; {}", r.name,
             kKinds);
  return out;
}

// Returns whether the text is put in NFC; no normalizer leaves it as it is.
bool read_normalizer(const Reader& r, const json& root) {
  const json* n = r.member(root, "normalizer");
  if (!n) return false;
  auto one = [&](const json& m, const std::string& path) {
    const std::string type = r.type(m, path);
    if (type != "NFC") r.unsupported(path + ".type", type, " (only NFC)");
  };
  if (r.type(*n, "normalizer") != "Sequence") {
    one(*n, "normalizer");
    return true;
  }
  // NFC once or more (it is idempotent); nothing else.
  const json& seq = r.array(*n, "normalizers", "normalizer.normalizers");
  for (size_t i = 0; i < seq.size(); ++i) one(seq[i], fmt::format("normalizer.normalizers[{}]", i));
  return !seq.empty();
}

void read_decoder(const Reader& r, const json& root) {
  const json* d = r.member(root, "decoder");
  if (!d) return;
  const std::string type = r.type(*d, "decoder");
  if (type != "ByteLevel") r.unsupported("decoder.type", type, " (only ByteLevel)");
}

// The template's tokens before and after the text ($A) of a single sequence.
void read_template(const Reader& r, const json& t, const std::string& path,
                   std::vector<int32_t>& prefix, std::vector<int32_t>& suffix, int64_t vocab) {
  const json& single = r.array(t, "single", path + ".single");
  const json& specials = r.object(t, "special_tokens", path + ".special_tokens");
  bool seen_text = false;
  for (size_t i = 0; i < single.size(); ++i) {
    const std::string at = fmt::format("{}.single[{}]", path, i);
    const json& item = single[i];
    if (const json* s = r.member(item, "Sequence")) {
      const std::string which = r.string(*s, "id", at + ".Sequence.id");
      if (which != "A") r.unsupported(at + ".Sequence.id", which, " (only A)");
      ZT_REQUIRE(!seen_text, "{}: {} repeats the sequence", r.name, at);
      seen_text = true;
      continue;
    }
    const json* s = r.member(item, "SpecialToken");
    ZT_REQUIRE(s, "{}: {} must be a Sequence or a SpecialToken, got {}", r.name, at,
               json_excerpt(item));
    const std::string tok = r.string(*s, "id", at + ".SpecialToken.id");
    const json* entry = r.member(specials, tok);
    ZT_REQUIRE(entry, "{}: {} names '{}', which {}.special_tokens does not define", r.name, at,
               excerpt(tok), path);
    const json& ids =
        r.array(*entry, "ids", fmt::format("{}.special_tokens.{}.ids", path, excerpt(tok)));
    for (const auto& idj : ids) {
      const int64_t id = r.id(idj, fmt::format("{}.special_tokens.{}.ids[]", path, excerpt(tok)));
      ZT_REQUIRE(id >= 0 && id < vocab,
                 "{}: {}.special_tokens.{} has id {}, outside the vocab [0, {})", r.name, path,
                 excerpt(tok), id, vocab);
      (seen_text ? suffix : prefix).push_back(static_cast<int32_t>(id));
    }
  }
  ZT_REQUIRE(seen_text, "{}: {}.single has no Sequence A (the text)", r.name, path);
}

void read_post_processor(const Reader& r, const json& root, std::vector<int32_t>& prefix,
                         std::vector<int32_t>& suffix, int64_t vocab) {
  const json* p = r.member(root, "post_processor");
  if (!p) return;
  auto one = [&](const json& q, const std::string& path) {
    const std::string type = r.type(q, path);
    if (type == "ByteLevel") return;  // offsets only
    if (type != "TemplateProcessing")
      r.unsupported(path + ".type", type, " (only TemplateProcessing and ByteLevel)");
    ZT_REQUIRE(prefix.empty() && suffix.empty(), "{}: {} is a second TemplateProcessing", r.name,
               path);
    read_template(r, q, path, prefix, suffix, vocab);
  };
  if (r.type(*p, "post_processor") == "Sequence") {
    const json& seq = r.array(*p, "processors", "post_processor.processors");
    for (size_t i = 0; i < seq.size(); ++i)
      one(seq[i], fmt::format("post_processor.processors[{}]", i));
  } else {
    one(*p, "post_processor");
  }
}

}  // namespace

BpeTokenizer BpeTokenizer::from_hf_file(const std::string& path) {
  std::error_code dir_ec;
  const std::string tokenizer_json = std::filesystem::is_directory(path, dir_ec)
                                         ? (std::filesystem::path(path) / "tokenizer.json").string()
                                         : path;
  // Llama 3's tokenizer.json is 9 MB; a 256k-token one about 20 MB.
  constexpr size_t kMaxBytes = size_t{256} << 20;
  const std::string text = read_input_file(tokenizer_json, kMaxBytes, "--tokenizer-model");
  // Megatron's HuggingFaceTokenizer takes eod from AutoTokenizer's eos_token, which
  // tokenizer_config.json beside the file names.
  std::string eos;
  std::error_code ec;
  const auto config = std::filesystem::path(tokenizer_json).parent_path() / "tokenizer_config.json";
  if (std::filesystem::is_regular_file(config, ec)) {
    const std::string where = config.string();
    const json c =
        parse_json_input(read_input_file(where, 64 << 20, "tokenizer_config.json"), where,
                         JsonLimits{32, size_t{16} << 20});  // chat templates are long strings
    if (c.is_object() && c.contains("eos_token")) {
      const json& e = c["eos_token"];
      if (e.is_string())
        eos = e.get<std::string>();
      else if (e.is_object() && e.contains("content") && e["content"].is_string())
        eos = e["content"].get<std::string>();
      else
        ZT_REQUIRE(e.is_null(), "{}: eos_token must be a string or {{\"content\": ...}}, got {}",
                   where, json_excerpt(e));
    }
  }
  return from_hf_json(text, tokenizer_json, eos);
}

BpeTokenizer BpeTokenizer::from_hf_json(std::string_view text, std::string_view name,
                                        std::string_view eos_token) {
  const Reader r{name};
  const json root = parse_json_input(text, name);
  ZT_REQUIRE(root.is_object(), "{}: expected a tokenizer.json object, got {}", name,
             json_type_name(root));
  const json& model = r.object(root, "model", "model");
  const std::string kind = r.string(model, "type", "model.type");
  if (kind != "BPE") r.unsupported("model.type", kind, " (only BPE)");
  const bool nfc_text = read_normalizer(r, root);
  const PreTokenizer pre = read_pre_tokenizer(r, root);
  read_decoder(r, root);
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const json* v = r.member(model, key);
    if (v && !(v->is_string() && v->get_ref<const std::string&>().empty()))
      r.unsupported(fmt::format("model.{}", key), json_excerpt(*v), " (only null)");
  }
  if (const json* d = r.member(model, "dropout")) {
    ZT_REQUIRE(d->is_number(), "{}: model.dropout must be a number or null, got {}", name,
               json_excerpt(*d));
    if (d->get<double>() != 0.0)
      r.unsupported("model.dropout", json_excerpt(*d), " (only null: it is random)");
  }
  // byte_fallback and unk_token never act: every byte has a token, which is checked below.
  r.boolean(model, "byte_fallback", "model.byte_fallback", false);

  BpeTokenizer t;
  t.nfc_ = nfc_text;
  t.rules_ = pre.rules;
  t.prefix_stage_ = pre.prefix_stage;
  t.prefix_space_ = pre.prefix_space;
  t.ignore_merges_ = r.boolean(model, "ignore_merges", "model.ignore_merges", false);

  // The vocabulary: byte-level spellings from the model, plain UTF-8 from added_tokens.
  const json& vocab = r.object(model, "vocab", "model.vocab");
  const json* added = r.member(root, "added_tokens");
  ZT_REQUIRE(!added || added->is_array(), "{}: added_tokens must be a JSON array, got {}", name,
             json_type_name(*added));
  const size_t n_added = added ? added->size() : 0;
  const int64_t max_ids = static_cast<int64_t>(vocab.size() + n_added);
  std::vector<int8_t> filled;  // 0 none, 1 model vocab, 2 added token
  auto claim = [&](int64_t id, int8_t how, std::string_view tok, const std::string& path) {
    ZT_REQUIRE(id >= 0 && id < max_ids, "{}: {} '{}' has id {}, outside [0, {}) for {} tokens",
               name, path, excerpt(tok), id, max_ids, max_ids);
    if (static_cast<size_t>(id) >= filled.size()) {
      filled.resize(static_cast<size_t>(id) + 1, 0);
      t.id_to_bytes_.resize(static_cast<size_t>(id) + 1);
    }
    // An added token may repeat a model token's id (GPT-2's <|endoftext|>), not another's.
    ZT_REQUIRE(filled[id] != how, "{}: {} '{}' has id {}, which another token has", name, path,
               excerpt(tok), id);
    const bool first = filled[id] == 0;
    filled[id] = static_cast<int8_t>(filled[id] | how);
    return first;
  };
  std::unordered_map<std::string, int32_t> bytes_to_id;
  bytes_to_id.reserve(vocab.size());
  for (const auto& [tok, idj] : vocab.items()) {
    const int64_t id = r.id(idj, fmt::format("model.vocab['{}']", excerpt(tok)));
    auto bytes = vocab_string_to_bytes(tok);
    ZT_REQUIRE(bytes.has_value(),
               "{}: model.vocab token '{}' is not a byte-level spelling (BPE without the byte "
               "mapping); {}",
               name, excerpt(tok), kKinds);
    claim(id, 1, tok, "model.vocab token");
    t.id_to_bytes_[id] = *bytes;
    bytes_to_id.emplace(std::move(*bytes), static_cast<int32_t>(id));
  }
  for (int b = 0; b < 256; ++b) {
    auto it = bytes_to_id.find(std::string(1, static_cast<char>(b)));
    ZT_REQUIRE(it != bytes_to_id.end(),
               "{}: model.vocab has no token for byte 0x{:02X} ('{}'); a byte-level BPE vocab "
               "needs all 256",
               name, b, bytes_to_vocab_string(std::string(1, static_cast<char>(b))));
    t.byte_id_[b] = it->second;
  }

  std::vector<bool> normalized_pass;
  for (size_t i = 0; i < n_added; ++i) {
    const json& a = (*added)[i];
    const std::string path = fmt::format("added_tokens[{}]", i);
    ZT_REQUIRE(a.is_object(), "{}: {} must be a JSON object, got {}", name, path,
               json_type_name(a));
    const json* idj = r.member(a, "id");
    ZT_REQUIRE(idj, "{}: {}.id is missing", name, path);
    const int64_t id = r.id(*idj, path + ".id");
    std::string content = r.string(a, "content", path + ".content");
    ZT_REQUIRE(!content.empty(), "{}: {}.content is empty", name, path);
    if (r.boolean(a, "single_word", path + ".single_word", false))
      r.unsupported(path + ".single_word", "true", " (only false)");
    const bool special = r.boolean(a, "special", path + ".special", false);
    // Without a normalizer, matching before or after normalization is the same; the two passes
    // stay apart because they also differ in order (unnormalized tokens are matched first).
    const bool normalized = r.boolean(a, "normalized", path + ".normalized", !special);
    const bool lstrip = r.boolean(a, "lstrip", path + ".lstrip", false);
    const bool rstrip = r.boolean(a, "rstrip", path + ".rstrip", false);
    // `tokenizers` matches a normalized token after normalizing the text; one whose content
    // NFC would change is left out rather than normalized here.
    ZT_REQUIRE(!(normalized && nfc_text) || nfc_is_identity(content),
               "{}: {}.content '{}' is not in NFC, which normalizer applies", name, path,
               excerpt(content));
    claim(id, 2, content, path);
    t.id_to_bytes_[id] = content;  // decodes as its text
    if (content == eos_token || (eos_token.empty() && special && !t.eod_ &&
                                 (content == kEndOfText || content == "<|end_of_text|>" ||
                                  content == "</s>" || content == "<eos>")))
      t.eod_ = static_cast<int32_t>(id);
    t.added_.push_back({std::move(content), static_cast<int32_t>(id), lstrip, rstrip});
    normalized_pass.push_back(normalized);
  }
  for (size_t id = 0; id < filled.size(); ++id)
    ZT_REQUIRE(filled[id], "{}: no token has id {} (ids must run from 0 to {} without gaps)", name,
               id, filled.size() - 1);
  ZT_REQUIRE(eos_token.empty() || t.eod_, "{}: eos_token '{}' is not one of its added tokens", name,
             excerpt(eos_token));
  // Two added tokens with the same text: `tokenizers` keeps one; refuse rather than guess which.
  {
    std::unordered_map<std::string_view, size_t> seen;
    for (size_t i = 0; i < t.added_.size(); ++i)
      ZT_REQUIRE(seen.emplace(t.added_[i].content, i).second,
                 "{}: added_tokens[{}] repeats the content '{}'", name, i,
                 excerpt(t.added_[i].content));
  }
  for (size_t i = 0; i < t.added_.size(); ++i) {
    const int pass = normalized_pass[i] ? 1 : 0;
    t.added_by_byte_[pass][static_cast<uint8_t>(t.added_[i].content[0])].push_back(
        static_cast<uint32_t>(i));
    t.has_added_[pass] = true;
  }
  for (int pass = 0; pass < 2; ++pass) {
    int first = -1, firsts = 0;
    for (int b = 0; b < 256; ++b)
      if (!t.added_by_byte_[pass][b].empty()) {
        first = b;
        ++firsts;
      }
    t.added_first_[pass] = firsts == 1 ? first : -1;
  }
  for (auto& pass : t.added_by_byte_)
    for (auto& list : pass)
      std::stable_sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
        return t.added_[a].content.size() > t.added_[b].content.size();
      });

  const json& merges = r.array(model, "merges", "model.merges");
  t.merges_ = PairMap(merges.size());
  auto id_of = [&](std::string_view s, size_t i) {
    auto bytes = vocab_string_to_bytes(s);
    ZT_REQUIRE(bytes.has_value(), "{}: model.merges[{}]: '{}' is not a byte-level token", name, i,
               excerpt(s));
    auto it = bytes_to_id.find(*bytes);
    ZT_REQUIRE(it != bytes_to_id.end(), "{}: model.merges[{}]: token '{}' is not in model.vocab",
               name, i, excerpt(s));
    return std::pair{it->second, std::move(*bytes)};
  };
  for (size_t i = 0; i < merges.size(); ++i) {
    const json& m = merges[i];
    std::string left, right;
    if (m.is_string()) {  // "a b", the older form
      const auto& s = m.get_ref<const std::string&>();
      const size_t sp = s.find(' ');
      ZT_REQUIRE(sp != std::string::npos && sp > 0 && sp + 1 < s.size() &&
                     s.find(' ', sp + 1) == std::string::npos,
                 "{}: model.merges[{}]: expected two tokens separated by one space, got '{}'", name,
                 i, excerpt(s));
      left = s.substr(0, sp);
      right = s.substr(sp + 1);
    } else {  // ["a", "b"], the newer form
      ZT_REQUIRE(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(),
                 "{}: model.merges[{}] must be \"a b\" or [\"a\", \"b\"], got {}", name, i,
                 json_excerpt(m));
      left = m[0].get<std::string>();
      right = m[1].get<std::string>();
    }
    auto [a, abytes] = id_of(left, i);
    auto [b, bbytes] = id_of(right, i);
    auto merged = bytes_to_id.find(abytes + bbytes);
    ZT_REQUIRE(merged != bytes_to_id.end(),
               "{}: model.merges[{}]: merged token of '{}' and '{}' is not in model.vocab", name, i,
               excerpt(left), excerpt(right));
    // `tokenizers` would keep the last rank of a repeated pair, GPT-2's files the first: refuse.
    ZT_REQUIRE(t.merges_.insert(a, b, Merge{static_cast<int32_t>(i), merged->second}),
               "{}: model.merges[{}] repeats the pair '{}' '{}'", name, i, excerpt(left),
               excerpt(right));
  }
  read_post_processor(r, root, t.prefix_ids_, t.suffix_ids_,
                      static_cast<int64_t>(t.id_to_bytes_.size()));
  if (t.ignore_merges_) t.word_id_ = std::move(bytes_to_id);
  return t;
}

}  // namespace zt::data
