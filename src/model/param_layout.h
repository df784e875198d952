#pragma once
// ParamLayout: every parameter of this rank (its tensor-parallel shard) as a named view into one
// flat buffer, in forward order, grouped into blocks (embedding, each layer, final layernorm).
// The same layout indexes the parameter, gradient and optimizer-state buffers, and it is what
// ZeRO partitions, what checkpoints name and what the planner counts.
//
// Each parameter also says how it relates to the full (tp = 1) tensor: its full shape, how it
// is split, and full_index(), the map from a local element to the full tensor's element. Every
// TP rank's layout has the same names, order and sizes (the splits are even), so rank r's
// shard of every tensor sits at the same offset on every rank.
#include <cstdint>
#include <string>
#include <vector>

#include "src/core/tensor.h"
#include "src/model/gpt_config.h"
#include "src/model/pipeline_split.h"

namespace zt {

enum class ParamInit : uint8_t { Normal, Zeros, Ones };

// Rows per chunk when `rows` rows of `row_len` elements are cut into chunks of whole rows of at
// most `max_elems` elements (one row where a row is longer). The model produces gradients and
// acquires parameters by this one rule, and ZeRO partitions by it, so a chunk never straddles
// two partition units.
// With `align` > 1 (a stack of experts, `align` rows each) a chunk holds whole experts where one
// fits, else a divisor of an expert's rows, so no chunk straddles two experts.
inline int64_t chunk_rows(int64_t rows, int64_t row_len, int64_t max_elems, int64_t align = 1) {
  int64_t r = max_elems / row_len;
  r = r < 1 ? 1 : (r > rows ? rows : r);
  if (align <= 1) return r;
  if (r >= align) return r - r % align;
  while (align % r != 0) --r;
  return r;
}

// How a parameter is divided over the tensor-parallel group.
enum class TpSplit : uint8_t {
  Replicated,    // whole on every rank (layernorms, row-parallel biases, position embedding)
  OutputRows,    // column-parallel weight/bias: dim 0 split, in `row_groups` equal groups
  InputColumns,  // row-parallel weight: dim 1 split
  VocabRows,     // word embedding: dim 0 (padded vocabulary) split
};

struct ParamSpec {
  std::string name;
  Shape shape;         // this rank's shape
  Shape full_shape;    // the whole tensor's shape (= shape at tp = 1)
  int block = 0;       // index into ParamLayout::blocks
  int64_t offset = 0;  // first element in the flat buffer
  bool weight_decay = false;
  bool tp_replicated = true;  // identical on every tensor-parallel rank
  TpSplit split = TpSplit::Replicated;
  // OutputRows only: dim 0 is stacked tensors of these full row counts, each split separately
  // (empty: one tensor). The fused QKV weight is q|k|v ({h, g·d, g·d} with g key/value groups of
  // d channels), so a rank's shard holds the q rows of its heads, then the k and v rows of its
  // groups; SwiGLU's first weight is gate|up ({f, f}), so a rank holds matching halves.
  std::vector<int64_t> group_rows;
  // A stack of experts ([E, rows, cols] held as E·rows rows): this rank's rows of one expert, so
  // chunks hold whole experts (zt::chunk_rows); 1 for every other parameter. Within an expert
  // the rows split as `split` and `group_rows` say for one expert's matrix.
  int64_t expert_rows = 1;
  // A routed expert's parameter (parameter group "expert"): held by the expert-parallel rank its
  // experts belong to, whose stack starts at element full_offset of the full tensor, and
  // partitioned by ZeRO over the ranks holding the same experts. Every other parameter is dense.
  bool expert = false;
  int64_t full_offset = 0;
  int tp_size = 1;
  int tp_rank = 0;
  ParamInit init = ParamInit::Zeros;
  float init_std = 0;
  int64_t numel() const { return shape.numel(); }
  int64_t full_numel() const { return full_shape.numel(); }
  // The stacked row groups of an OutputRows split (one for every other parameter): how many,
  // and group g's first full row and full row count. Every group's rows divide by tp, so group
  // g's rows on a rank start at full_group_begin(g) / tp_size.
  int num_row_groups() const {
    return group_rows.empty() ? 1 : static_cast<int>(group_rows.size());
  }
  int64_t full_group_rows(int g) const;
  int64_t full_group_begin(int g) const;
  // The group holding local row `r` (`local`: rows of this rank's shard, else full rows).
  int row_group_of(int64_t r, bool local) const;
  // The full tensor's row-major element index of local element `i` (i in [0, numel())).
  int64_t full_index(int64_t i) const;
  // A parameter as rows: dim 0 of a matrix (a word embedding's vocabulary entries, a weight's
  // output features); a vector is one row.
  int64_t row_len() const { return shape.rank() >= 2 ? numel() / shape[0] : numel(); }
  int64_t rows() const { return numel() / row_len(); }
  int64_t chunk_rows(int64_t max_elems) const {
    return zt::chunk_rows(rows(), row_len(), max_elems, expert_rows);
  }
};

struct BlockRange {
  std::string name;
  int64_t begin = 0;  // elements
  int64_t end = 0;
  int64_t numel() const { return end - begin; }
};

// The part of the model one pipeline stage holds (Megatron-LM's layout). With `chunks` model
// chunks per stage (the interleaved schedule), chunk c of stage s is virtual stage c·size + s;
// which layers each holds is pipeline_split.h's (evenly k = L / (size·chunks) each, or the
// first / last stage's own counts). The first stage also holds the embedding; the last the final
// layernorm and either the untied output layer or, when size > 1, its own copy of the word
// embedding for the tied head (same name and values: initialisation is by name, and the two
// copies' gradients are summed between the stages every step).
struct PipelinePart {
  int size = 1;
  int rank = 0;
  int chunks = 1;
  int first_stage_layers = 0, last_stage_layers = 0;  // PipelineSplit's (0: even)
  bool first() const { return rank == 0; }
  bool last() const { return rank == size - 1; }
  int virtual_stage(int chunk) const { return chunk * size + rank; }
  PipelineSplit split(const GptConfig& config) const {
    return {config.num_layers, size, chunks, first_stage_layers, last_stage_layers};
  }
  // Layers of chunk `chunk`, in forward order.
  std::vector<int> layers(const GptConfig& config, int chunk) const;
};
// Throws zt::InputError when the layers do not divide over size·chunks virtual stages.
void validate_pipeline(const GptConfig& config, const PipelinePart& part);

// Expert parallelism's rank (docs/design/moe.md): rank `rank` of config.expert_parallel holds
// experts [rank·E/ep, (rank + 1)·E/ep) of every stack.
struct ExpertPart {
  int rank = 0;
};

class ParamLayout {
 public:
  // The GPT layout of tensor-parallel rank `tp_rank` of `tp_size` (tp = 1: the whole model),
  // holding pipeline part `part` (default: every layer) and expert-parallel rank `ep`'s experts.
  // Throws zt::InputError when the shape does not split (validate_tensor_parallel,
  // validate_pipeline).
  static ParamLayout gpt(const GptConfig& config, int tp_size = 1, int tp_rank = 0,
                         const PipelinePart& part = {}, ExpertPart ep = {});

  const std::vector<ParamSpec>& params() const { return params_; }
  const std::vector<BlockRange>& blocks() const { return blocks_; }
  int64_t numel() const { return numel_; }
  // Elements of the replicated parameters (counted once per rank).
  int64_t replicated_numel() const;
  int tp_size() const { return tp_size_; }
  int tp_rank() const { return tp_rank_; }
  const PipelinePart& pipeline() const { return part_; }
  int ep_size() const { return ep_size_; }
  int ep_rank() const { return ep_rank_; }
  // Whether any parameter is a routed expert's (ParamSpec::expert).
  bool has_experts() const;
  const ParamSpec& find(const std::string& name) const;
  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  // Block indices of the GPT layout; -1 where this pipeline part does not hold the block.
  int embedding_block() const { return block_index("embedding"); }
  int layer_block(int layer) const { return block_index("layers." + std::to_string(layer)); }
  int final_block() const { return block_index("final_ln"); }
  // The last stage's copy of the word embedding (size > 1 only).
  int head_block() const { return block_index("head"); }
  // The untied output layer (--untie-embeddings-and-output-weights; the last stage).
  int output_block() const { return block_index("output_layer"); }
  int block_index(const std::string& name) const;

 private:
  void begin_block(std::string name);
  void add(std::string name, Shape full, TpSplit split, ParamInit init, float std,
           bool weight_decay, std::vector<int64_t> group_rows = {});
  // A stack of this expert-parallel rank's `experts` of `all` matrices [rows, cols], each split
  // over tp as one of them is.
  void add_experts(std::string name, int experts, int all, Shape one, TpSplit split, float std,
                   std::vector<int64_t> group_rows = {});
  std::vector<ParamSpec> params_;
  std::vector<BlockRange> blocks_;
  int64_t numel_ = 0;
  int tp_size_ = 1;
  int tp_rank_ = 0;
  int ep_size_ = 1;
  int ep_rank_ = 0;
  PipelinePart part_;
};

// Deterministic GPT-2 initialisation of an fp32 flat buffer laid out by `layout`: each element
// is a pure function of (seed, parameter name, element index in the FULL tensor), so every
// layout — any tp rank's shard included — holds exactly its slice of the tp = 1 values.
void init_parameters(const ParamLayout& layout, uint64_t seed, float* flat);
// Elements [first, first + count) of one parameter, the same values init_parameters gives them:
// a partitioned owner initialises its shard without materialising the whole model.
void init_parameter_range(const ParamSpec& p, uint64_t seed, int64_t first, int64_t count,
                          float* dst);

}  // namespace zt
