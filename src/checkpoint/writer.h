#pragma once
// A complete checkpoint written without a trainer, for any layout, from a function that gives
// any run of any full tensor's elements: `zerotron import` turns Hugging Face weights into a
// checkpoint at iteration 0 this way. Every shard file of the layout is written in turn, in
// chunks of at most kChunkElems, so memory does not grow with the model. Adam moments are zero.
#include <cstdint>
#include <functional>
#include <string>

#include "src/checkpoint/meta.h"
#include "src/model/param_layout.h"

namespace zt {

// Elements [f, f + n) of the full tensor `p.name` (zerotron's shape and row-major order) into
// `dst`. Rows of the vocabulary padding are never asked for: they are written as zeros.
using FullTensorSource = std::function<void(const ParamSpec& p, int64_t f, int64_t n, float* dst)>;

// Writes DIR/iter_0000000 (and `latest`) through the same atomic publish as a training save,
// holding DIR's lock. `lay.model.padded_vocab_size` must be the layout's; `lay.pp` and
// `lay.chunks` must be 1, `lay.iteration` 0.
// `token_ids`: what meta.json records as the model's special tokens (MetaRecord::token_ids).
void write_checkpoint(const std::string& dir, const CheckpointLayout& lay,
                      const FullTensorSource& source,
                      const nlohmann::json& token_ids = nlohmann::json());

}  // namespace zt
