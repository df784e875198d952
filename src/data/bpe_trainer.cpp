#include "src/data/bpe_trainer.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <queue>
#include <tuple>

#include "src/core/error.h"
#include "src/data/bpe_tokenizer.h"
#include "src/data/byte_unicode.h"
#include "src/data/file_util.h"
#include "src/data/pair_map.h"
#include "src/data/pretokenize.h"

namespace zt::data {
namespace {

using Word = std::vector<int32_t>;

struct Candidate {
  int64_t count;
  int32_t a, b;
  // priority_queue pops the largest: more frequent first, then the smaller pair.
  bool operator<(const Candidate& o) const {
    return std::tie(count, o.a, o.b) < std::tie(o.count, a, b);
  }
};

class PairCounts {
 public:
  int64_t& operator[](uint64_t k) { return counts_[k]; }
  int64_t get(uint64_t k) const {
    auto it = counts_.find(k);
    return it == counts_.end() ? 0 : it->second;
  }
  void erase(uint64_t k) { counts_.erase(k); }
  const auto& all() const { return counts_; }

 private:
  std::unordered_map<uint64_t, int64_t> counts_;
};

}  // namespace

void BpeTrainer::add_text(std::string_view text) {
  Pretokenizer p(text);
  std::string_view w;
  while (p.next(w)) {
    auto it = words_.find(std::string(w));
    if (it == words_.end())
      words_.emplace(std::string(w), 1);
    else
      ++it->second;
  }
}

BpeModel BpeTrainer::train(int32_t vocab_size, int64_t min_frequency) const {
  ZT_REQUIRE(vocab_size >= 257,
             "--vocab-size {} is too small: a byte-level BPE needs 256 byte tokens plus "
             "<|endoftext|>",
             vocab_size);
  BpeModel m;
  std::unordered_map<std::string, int32_t> token_id;
  std::array<int32_t, 256> byte_id{};
  for (int i = 0; i < 256; ++i) {
    const uint8_t b = byte_order()[i];
    m.tokens.emplace_back(1, static_cast<char>(b));
    token_id.emplace(m.tokens.back(), i);
    byte_id[b] = i;
  }

  // Sorted so word indices (and so every later step) do not depend on hash-map order.
  std::vector<std::pair<std::string_view, int64_t>> sorted(words_.begin(), words_.end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<Word> words(sorted.size());
  std::vector<int64_t> freq(sorted.size());
  PairCounts counts;
  std::unordered_map<uint64_t, std::vector<uint32_t>> where;
  for (size_t w = 0; w < sorted.size(); ++w) {
    for (char c : sorted[w].first) words[w].push_back(byte_id[static_cast<uint8_t>(c)]);
    freq[w] = sorted[w].second;
    for (size_t i = 0; i + 1 < words[w].size(); ++i) {
      const uint64_t k = PairMap::key(words[w][i], words[w][i + 1]);
      counts[k] += freq[w];
      auto& list = where[k];
      if (list.empty() || list.back() != w) list.push_back(static_cast<uint32_t>(w));
    }
  }
  std::priority_queue<Candidate> heap;
  for (const auto& [k, c] : counts.all())
    heap.push({c, static_cast<int32_t>(k >> 32), static_cast<int32_t>(k & 0xFFFFFFFF)});

  const auto target_tokens = static_cast<size_t>(vocab_size - 1);  // last id is <|endoftext|>
  std::vector<uint64_t> grown;
  while (m.tokens.size() < target_tokens && !heap.empty()) {
    const Candidate top = heap.top();
    heap.pop();
    const uint64_t key = PairMap::key(top.a, top.b);
    const int64_t now = counts.get(key);
    if (now != top.count) {  // stale entry: the pair lost occurrences to an earlier merge
      if (now > 0) heap.push({now, top.a, top.b});
      continue;
    }
    if (now < min_frequency) break;
    std::string merged = m.tokens[top.a] + m.tokens[top.b];
    int32_t id;
    if (auto it = token_id.find(merged); it != token_id.end()) {
      id = it->second;  // same bytes reached by another split: one token, two merges
    } else {
      id = static_cast<int32_t>(m.tokens.size());
      token_id.emplace(merged, id);
      m.tokens.push_back(std::move(merged));
    }
    m.merges.emplace_back(top.a, top.b);

    auto affected = std::move(where[key]);
    where.erase(key);
    std::sort(affected.begin(), affected.end());
    affected.erase(std::unique(affected.begin(), affected.end()), affected.end());
    grown.clear();
    Word next;
    for (uint32_t w : affected) {
      Word& s = words[w];
      next.clear();
      bool hit = false;
      for (size_t i = 0; i < s.size();) {
        if (i + 1 < s.size() && s[i] == top.a && s[i + 1] == top.b) {
          next.push_back(id);
          i += 2;
          hit = true;
        } else {
          next.push_back(s[i++]);
        }
      }
      if (!hit) continue;  // the list may hold words a previous merge already changed
      const int64_t f = freq[w];
      for (size_t i = 0; i + 1 < s.size(); ++i) counts[PairMap::key(s[i], s[i + 1])] -= f;
      for (size_t i = 0; i + 1 < next.size(); ++i) {
        const uint64_t k = PairMap::key(next[i], next[i + 1]);
        counts[k] += f;
        // Only pairs with the new token can gain count; only they need the word listed.
        if (next[i] == id || next[i + 1] == id) {
          auto& list = where[k];
          if (list.empty() || list.back() != w) list.push_back(w);
          grown.push_back(k);
        }
      }
      s.swap(next);
    }
    counts.erase(key);
    std::sort(grown.begin(), grown.end());
    grown.erase(std::unique(grown.begin(), grown.end()), grown.end());
    for (uint64_t k : grown)
      if (int64_t c = counts.get(k); c > 0)
        heap.push({c, static_cast<int32_t>(k >> 32), static_cast<int32_t>(k & 0xFFFFFFFF)});
  }
  m.eod = static_cast<int32_t>(m.tokens.size());
  m.tokens.emplace_back(kEndOfText);
  return m;
}

std::string vocab_json(const BpeModel& m) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (size_t id = 0; id < m.tokens.size(); ++id) {
    const bool special = static_cast<int32_t>(id) == m.eod;
    j[special ? m.tokens[id] : bytes_to_vocab_string(m.tokens[id])] = id;
  }
  return j.dump() + "\n";
}

std::string merges_txt(const BpeModel& m) {
  std::string out = "#version: 0.2\n";
  for (const auto& [a, b] : m.merges)
    out += bytes_to_vocab_string(m.tokens[a]) + " " + bytes_to_vocab_string(m.tokens[b]) + "\n";
  return out;
}

void write_bpe_files(const BpeModel& m, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  ZT_REQUIRE(!ec, "cannot create directory '{}': {}", dir, ec.message());
  write_file_atomic(dir + "/vocab.json", vocab_json(m));
  write_file_atomic(dir + "/merges.txt", merges_txt(m));
}

}  // namespace zt::data
