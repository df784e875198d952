#include "src/data/bpe_tokenizer.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <optional>

#include "src/core/error.h"
#include "src/core/input_file.h"
#include "src/core/json_input.h"
#include "src/data/bpe_merge.h"
#include "src/data/byte_unicode.h"
#include "src/data/file_util.h"
#include "src/data/normalize.h"
#include "src/data/pretokenize.h"
#include "src/data/unicode.h"

namespace zt::data {

BpeTokenizer BpeTokenizer::from_files(const std::string& vocab_json,
                                      const std::string& merges_txt) {
  // GPT-2's files are 1.0 and 0.5 MB; a 256k-token vocabulary is about 10 MB.
  constexpr size_t kMaxBytes = size_t{256} << 20;
  return from_strings(read_input_file(vocab_json, kMaxBytes, "--vocab-file"),
                      read_input_file(merges_txt, kMaxBytes, "--merge-file"), vocab_json,
                      merges_txt);
}

BpeTokenizer load_tokenizer(std::string_view type, const std::string& vocab_json,
                            const std::string& merges_txt, const std::string& tokenizer_model) {
  if (type == "HuggingFaceTokenizer") {
    ZT_REQUIRE(!tokenizer_model.empty() && vocab_json.empty() && merges_txt.empty(),
               "--tokenizer-type HuggingFaceTokenizer takes --tokenizer-model (a tokenizer.json), "
               "not --vocab-file/--merge-file");
    return BpeTokenizer::from_hf_file(tokenizer_model);
  }
  ZT_REQUIRE(type == "GPT2BPETokenizer",
             "--tokenizer-type {} is not supported (GPT2BPETokenizer or HuggingFaceTokenizer)",
             excerpt(type));
  ZT_REQUIRE(!vocab_json.empty() && !merges_txt.empty() && tokenizer_model.empty(),
             "--tokenizer-type GPT2BPETokenizer takes --vocab-file and --merge-file, not "
             "--tokenizer-model");
  return BpeTokenizer::from_files(vocab_json, merges_txt);
}

BpeTokenizer BpeTokenizer::from_strings(std::string_view vocab_json, std::string_view merges_txt,
                                        std::string_view vocab_name, std::string_view merges_name) {
  BpeTokenizer t;
  // A vocabulary is one flat object of token strings, read without building a JSON document.
  std::vector<std::pair<std::string, int64_t>> entries;
  parse_flat_json_object(
      vocab_json, vocab_name, 4096, [&](std::string& tok, const nlohmann::json& idj) {
        ZT_REQUIRE(idj.is_number_integer(), "{}: token '{}' has a non-integer id {}", vocab_name,
                   excerpt(tok), json_excerpt(idj));
        entries.emplace_back(std::move(tok), idj.get<int64_t>());
      });
  ZT_REQUIRE(!entries.empty(), "{}: expected a JSON object mapping token strings to ids",
             vocab_name);
  const size_t n = entries.size();
  t.id_to_bytes_.resize(n);
  std::vector<uint32_t> entry_of(n, UINT32_MAX);
  for (size_t e = 0; e < n; ++e) {
    const auto& [tok, id] = entries[e];
    ZT_REQUIRE(id >= 0 && id < static_cast<int64_t>(n) && entry_of[id] == UINT32_MAX,
               "{}: token '{}' has id {}; ids must be distinct and in [0, {})", vocab_name,
               excerpt(tok), id, n);
    entry_of[id] = static_cast<uint32_t>(e);
    // Added tokens need not be byte spellings; they decode as their own UTF-8 text.
    t.id_to_bytes_[id] = vocab_string_to_bytes(tok).value_or(tok);
    if (tok == kEndOfText) t.eod_ = static_cast<int32_t>(id);
  }
  // Token bytes -> id, the lower id winning. Two tokens can share bytes only as a byte spelling
  // and the same bytes as a plain added token, so a second token with the same string, or a
  // third with the same bytes, is a token listed twice.
  struct Owner {
    int32_t id;
    bool shared;
  };
  std::unordered_map<std::string_view, Owner> bytes_to_id;
  bytes_to_id.reserve(n);
  for (size_t id = 0; id < n; ++id) {
    auto [it, fresh] = bytes_to_id.try_emplace(t.id_to_bytes_[id], Owner{int32_t(id), false});
    if (fresh) continue;
    const std::string& tok = entries[entry_of[id]].first;
    ZT_REQUIRE(!it->second.shared && tok != entries[entry_of[it->second.id]].first,
               "{}: token '{}' appears more than once", vocab_name, excerpt(tok));
    it->second.shared = true;
  }
  auto find_bytes = [&](std::string_view bytes) -> std::optional<int32_t> {
    auto it = bytes_to_id.find(bytes);
    if (it == bytes_to_id.end()) return std::nullopt;
    return it->second.id;
  };
  for (int b = 0; b < 256; ++b) {
    const std::string byte(1, static_cast<char>(b));
    const auto id = find_bytes(byte);
    ZT_REQUIRE(id.has_value(),
               "{}: no token for byte 0x{:02X} ('{}'); a byte-level BPE vocab needs all 256",
               vocab_name, b, bytes_to_vocab_string(byte));
    t.byte_id_[b] = *id;
  }

  t.merges_ = PairMap(n);
  size_t line_no = 0, start = 0;
  int32_t rank = 0;
  auto id_of = [&](std::string_view s, size_t line) {
    auto bytes = vocab_string_to_bytes(s);
    ZT_REQUIRE(bytes.has_value(), "{}:{}: '{}' is not a byte-level token", merges_name, line,
               excerpt(s));
    const auto id = find_bytes(*bytes);
    ZT_REQUIRE(id.has_value(), "{}:{}: token '{}' is not in {}", merges_name, line, excerpt(s),
               vocab_name);
    return std::pair{*id, std::move(*bytes)};
  };
  while (start < merges_txt.size()) {
    size_t end = merges_txt.find('\n', start);
    if (end == std::string_view::npos) end = merges_txt.size();
    std::string_view line = merges_txt.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_no == 1 && line.starts_with("#version"))) continue;
    const size_t sp = line.find(' ');
    ZT_REQUIRE(sp != std::string_view::npos && sp > 0 && sp + 1 < line.size() &&
                   line.find(' ', sp + 1) == std::string_view::npos,
               "{}:{}: expected two tokens separated by one space, got '{}'", merges_name, line_no,
               excerpt(line));
    auto [a, abytes] = id_of(line.substr(0, sp), line_no);
    auto [b, bbytes] = id_of(line.substr(sp + 1), line_no);
    const auto merged = find_bytes(abytes + bbytes);
    ZT_REQUIRE(merged.has_value(), "{}:{}: merged token of '{}' is not in {}", merges_name, line_no,
               excerpt(line), vocab_name);
    // A repeated pair keeps its first (lowest) rank; files written by BPE training have none.
    t.merges_.insert(a, b, Merge{rank++, *merged});
  }
  return t;
}

void BpeTokenizer::encode_word(std::string_view word, EncodeCache& cache,
                               std::vector<int32_t>& out) const {
  if (word.size() == 1) {
    out.push_back(byte_id_[static_cast<uint8_t>(word[0])]);
    return;
  }
  if (auto it = cache.map_.find(word); it != cache.map_.end()) {
    out.insert(out.end(), it->second.begin(), it->second.end());
    return;
  }
  auto& s = cache.scratch_;
  s.clear();
  if (auto it = ignore_merges_ ? word_id_.find(std::string(word)) : word_id_.end();
      it != word_id_.end()) {
    s.push_back(it->second);
  } else {
    for (char c : word) s.push_back(byte_id_[static_cast<uint8_t>(c)]);
    bpe_merge(merges_, s);
  }
  out.insert(out.end(), s.begin(), s.end());
  if (cache.map_.size() >= cache.max_entries_)
    cache.map_.clear();  // bounded memory on huge corpora
  cache.map_.emplace(std::string(word), s);
}

void BpeTokenizer::encode_pieces(std::string_view text, size_t stage, EncodeCache& cache,
                                 std::vector<int32_t>& out) const {
  if (stage == prefix_stage_ && prefix_space_ && text.front() != ' ') {
    std::string spaced;
    spaced.reserve(text.size() + 1);
    spaced += ' ';
    spaced += text;
    split_pieces(spaced, stage, cache, out);
  } else {
    split_pieces(text, stage, cache, out);
  }
}

void BpeTokenizer::split_pieces(std::string_view text, size_t stage, EncodeCache& cache,
                                std::vector<int32_t>& out) const {
  if (stage == rules_.size()) {
    encode_word(text, cache, out);
    return;
  }
  const SplitRule rule = rules_[stage];
  // The common case, one rule and no prefix space, goes straight to BPE.
  const bool last = stage + 1 == rules_.size() && !(prefix_space_ && prefix_stage_ == stage + 1);
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = next_piece(rule, text, pos);
    if (last)
      encode_word(text.substr(pos, end - pos), cache, out);
    else
      encode_pieces(text.substr(pos, end - pos), stage + 1, cache, out);
    pos = end;
  }
}

void BpeTokenizer::encode_text(std::string_view text, EncodeCache& cache,
                               std::vector<int32_t>& out) const {
  if (!text.empty()) encode_pieces(text, 0, cache, out);
}

void BpeTokenizer::encode_added(std::string_view text, int pass, EncodeCache& cache,
                                std::vector<int32_t>& out) const {
  auto between = [&](std::string_view seg) {
    if (pass == 0)
      encode_normalized(seg, cache, out);
    else
      encode_text(seg, cache, out);
  };
  const auto& by_byte = added_by_byte_[pass];
  const size_t n = text.size();
  size_t seg = 0;
  const int only = added_first_[pass];
  for (size_t i = 0; i < n;) {
    if (only >= 0) {  // all start with one byte ('<' in every family's specials): skip to it
      const void* p = std::memchr(text.data() + i, only, n - i);
      if (!p) break;
      i = static_cast<size_t>(static_cast<const char*>(p) - text.data());
    }
    const AddedToken* hit = nullptr;
    for (uint32_t k : by_byte[static_cast<uint8_t>(text[i])])
      if (text.substr(i).starts_with(added_[k].content)) {
        hit = &added_[k];
        break;
      }
    if (!hit) {
      ++i;
      continue;
    }
    size_t start = i, stop = i + hit->content.size();
    // lstrip/rstrip: the token swallows the whitespace beside it, within the text around it.
    while (hit->lstrip && start > seg) {
      size_t q = start - 1;
      while (q > seg && (static_cast<uint8_t>(text[q]) & 0xC0) == 0x80) --q;
      const CodePoint c = decode_utf8(text, q);
      if (q + c.len != start || char_class(c.cp) != kSpace) break;
      start = q;
    }
    while (hit->rstrip && stop < n) {
      const CodePoint c = decode_utf8(text, stop);
      if (char_class(c.cp) != kSpace) break;
      stop += c.len;
    }
    between(text.substr(seg, start - seg));
    out.push_back(hit->id);
    seg = i = stop;
  }
  between(text.substr(seg));
}

void BpeTokenizer::encode_normalized(std::string_view text, EncodeCache& cache,
                                     std::vector<int32_t>& out) const {
  auto rest = [&](std::string_view t) {
    if (has_added_[1])
      encode_added(t, 1, cache, out);
    else
      encode_text(t, cache, out);
  };
  if (nfc_ && !nfc_is_identity(text)) {
    std::string normalized;
    nfc(text, normalized);
    rest(normalized);
  } else {
    rest(text);
  }
}

void BpeTokenizer::encode(std::string_view text, EncodeCache& cache,
                          std::vector<int32_t>& out) const {
  out.insert(out.end(), prefix_ids_.begin(), prefix_ids_.end());
  if (has_added_[0])
    encode_added(text, 0, cache, out);
  else
    encode_normalized(text, cache, out);
  out.insert(out.end(), suffix_ids_.begin(), suffix_ids_.end());
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text) const {
  EncodeCache cache;
  std::vector<int32_t> out;
  encode(text, cache, out);
  return out;
}

std::string BpeTokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (int32_t id : ids) {
    ZT_REQUIRE(id >= 0 && id < vocab_size(), "token id {} is outside the vocab (size {})", id,
               vocab_size());
    out += id_to_bytes_[id];
  }
  return out;
}

}  // namespace zt::data
