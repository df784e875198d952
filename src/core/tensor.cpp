#include "src/core/tensor.h"

namespace zt {

std::string Shape::str() const {
  std::string s = "[";
  for (int i = 0; i < n_; ++i) s += (i ? ", " : "") + std::to_string(d_[static_cast<size_t>(i)]);
  return s + "]";
}

}  // namespace zt
