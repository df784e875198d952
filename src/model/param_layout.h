#pragma once
// ParamLayout: every parameter of this rank (its tensor-parallel shard) as a named view into one
// flat buffer, in forward order, grouped into blocks (embedding, each layer, final layernorm).
// The same layout indexes the parameter, gradient and optimizer-state buffers, and it is what
// ZeRO partitions, what checkpoints name and what the planner counts.
#include <cstdint>
#include <string>
#include <vector>

#include "src/core/tensor.h"
#include "src/model/gpt_config.h"

namespace zt {

enum class ParamInit : uint8_t { Normal, Zeros, Ones };

struct ParamSpec {
  std::string name;
  Shape shape;         // this rank's shape
  int block = 0;       // index into ParamLayout::blocks
  int64_t offset = 0;  // first element in the flat buffer
  bool weight_decay = false;
  bool tp_replicated = true;  // identical on every tensor-parallel rank
  ParamInit init = ParamInit::Zeros;
  float init_std = 0;
  int64_t numel() const { return shape.numel(); }
};

struct BlockRange {
  std::string name;
  int64_t begin = 0;  // elements
  int64_t end = 0;
  int64_t numel() const { return end - begin; }
};

class ParamLayout {
 public:
  // The GPT layout (tp = 1: the whole model).
  static ParamLayout gpt(const GptConfig& config);

  const std::vector<ParamSpec>& params() const { return params_; }
  const std::vector<BlockRange>& blocks() const { return blocks_; }
  int64_t numel() const { return numel_; }
  const ParamSpec& find(const std::string& name) const;
  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  // Block indices of the GPT layout.
  static constexpr int kEmbeddingBlock = 0;
  static int layer_block(int layer) { return 1 + layer; }
  int final_block() const { return num_blocks() - 1; }

 private:
  void begin_block(std::string name);
  void add(std::string name, Shape shape, ParamInit init, float std, bool weight_decay);
  std::vector<ParamSpec> params_;
  std::vector<BlockRange> blocks_;
  int64_t numel_ = 0;
};

// Deterministic GPT-2 initialisation of an fp32 flat buffer laid out by `layout`: each element
// is a pure function of (seed, parameter name, element index), so any layout reproduces it.
void init_parameters(const ParamLayout& layout, uint64_t seed, float* flat);

}  // namespace zt
