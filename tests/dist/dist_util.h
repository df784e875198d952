#pragma once
// Helpers for the multi-rank tests: host tensors of any dtype, element access through fp32.
#include <cstdint>
#include <memory>
#include <vector>

#include "src/comm/topology.h"
#include "src/core/half.h"
#include "src/core/tensor.h"
#include "tests/dist/dist_env.h"

namespace zt::dist {

// A host tensor owning its storage (test memory, not a device byte: no MemoryPool).
class HostTensor {
 public:
  HostTensor(DType dt, int64_t n)
      : storage_(static_cast<size_t>(n) * dtype_size(dt) / 4 + 1),
        t_(storage_.data(), Shape{n}, dt) {}
  Tensor& t() { return t_; }
  int64_t numel() const { return t_.numel(); }
  void set(int64_t i, float v) {
    switch (t_.dtype()) {
      case DType::F32:
        t_.as<float>()[i] = v;
        break;
      case DType::BF16:
        t_.as<bf16>()[i] = to_bf16(v);
        break;
      case DType::F16:
        t_.as<fp16>()[i] = to_fp16(v);
        break;
    }
  }
  float get(int64_t i) const {
    switch (t_.dtype()) {
      case DType::F32:
        return t_.as<float>()[i];
      case DType::BF16:
        return to_float(t_.as<bf16>()[i]);
      case DType::F16:
        return to_float(t_.as<fp16>()[i]);
    }
    return 0;
  }

 private:
  std::vector<uint32_t> storage_;
  Tensor t_;
};

// A small integer that every dtype holds exactly (sums of 8 stay exact too).
inline float value(int world_rank, int64_t i, int salt = 0) {
  return static_cast<float>((i * 7 + world_rank * 13 + salt * 5) % 17 - 8);
}

struct NamedGroup {
  std::string label;
  comm::Communicator* comm;
};

// The world plus the tp and dp groups of a Topology for every tp dividing the world size.
// Built once per process (collective: every rank calls it at the same point).
inline std::vector<NamedGroup> test_groups() {
  static std::vector<std::unique_ptr<comm::Topology>> topos;
  static std::vector<NamedGroup> groups;
  if (groups.empty()) {
    on_teardown([] {
      groups.clear();
      topos.clear();
    });
    groups.push_back({"world", &world()});
    for (int tp = 1; tp <= world().size(); tp *= 2) {
      if (world().size() % tp) continue;
      topos.push_back(std::make_unique<comm::Topology>(world(), tp));
      groups.push_back({fmt::format("tp{}.tp", tp), &topos.back()->tp()});
      groups.push_back({fmt::format("tp{}.dp", tp), &topos.back()->dp()});
    }
  }
  return groups;
}

inline constexpr DType kDTypes[] = {DType::F32, DType::BF16, DType::F16};
inline constexpr int64_t kSizes[] = {1, 7, 1023, 4099};

}  // namespace zt::dist
