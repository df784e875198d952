#pragma once
// Merge table lookup: (left id, right id) -> (rank, merged id). An open-addressing table keyed by
// the packed pair; BPE encoding does one lookup per adjacent pair per merge round, so this is
// the second hottest thing after pre-tokenization and std::unordered_map's node chasing shows.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace zt::data {

struct Merge {
  int32_t rank;  // lower merges first; the line number in merges.txt
  int32_t id;    // the merged token
};

class PairMap {
 public:
  PairMap() = default;
  explicit PairMap(size_t expected) {
    slots_.resize(std::bit_ceil(expected * 2 + 16), Slot{kEmpty, {}});
    mask_ = slots_.size() - 1;
  }
  static uint64_t key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  // Returns false (and keeps the first) when the pair is already present.
  bool insert(int32_t a, int32_t b, Merge m) {
    const uint64_t k = key(a, b);
    for (size_t i = hash(k) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].key == k) return false;
      if (slots_[i].key == kEmpty) {
        slots_[i] = Slot{k, m};
        ++size_;
        return true;
      }
    }
  }
  const Merge* find(int32_t a, int32_t b) const {
    if (slots_.empty()) return nullptr;
    const uint64_t k = key(a, b);
    for (size_t i = hash(k) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].key == k) return &slots_[i].value;
      if (slots_[i].key == kEmpty) return nullptr;
    }
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};  // ids are non-negative, so never a real key
  struct Slot {
    uint64_t key;
    Merge value;
  };
  static size_t hash(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return static_cast<size_t>(k);
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace zt::data
