#include "src/data/mock_data.h"

#include <vector>

#include "kernels/common/dropout.h"

namespace zt {

void MockData::sample(int64_t index, int32_t* tokens, int32_t* targets) const {
  const uint64_t s = mix64(seed_ ^ 0x6d6f636bull, static_cast<uint64_t>(index));
  const int32_t counting = vocab_ - 1;  // tokens 0..vocab-2; vocab-1 is the end of document
  // A document boundary somewhere in the sample (or none), and two random starting tokens.
  const int boundary = static_cast<int>(mix64(s, 0) % static_cast<uint64_t>(seq_ + 1));
  int32_t a = static_cast<int32_t>(mix64(s, 1) % static_cast<uint64_t>(counting));
  int32_t b = static_cast<int32_t>(mix64(s, 2) % static_cast<uint64_t>(counting));
  auto token = [&](int p) -> int32_t {
    if (p < boundary) return static_cast<int32_t>((a + p) % counting);
    if (p == boundary) return eod();
    return static_cast<int32_t>((b + p - boundary - 1) % counting);
  };
  for (int p = 0; p < seq_; ++p) {
    tokens[p] = token(p);
    targets[p] = token(p + 1);
  }
}

}  // namespace zt
