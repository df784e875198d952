#pragma once
// The fp32 master parameters of a saved checkpoint, as one rank of any tensor-parallel layout
// holds them: each parameter of `layout` found by name in the saved layout (whatever its tp, pp,
// dp and ZeRO stage) and read in runs of consecutive full-tensor elements, through the reader's
// block cache (reader.h). What generation loads; no optimizer state is read.
#include <cstdint>
#include <functional>

#include "src/checkpoint/reader.h"
#include "src/model/param_layout.h"

namespace zt {

// Receives elements [offset, offset + n) of the layout's flat order (host fp32, valid during the
// call).
using WeightSink = std::function<void(int64_t offset, const float* values, int64_t n)>;

// Every element of `layout`'s parameters, in order, in runs of at most `chunk` elements. Rows
// the checkpoint lacks (a wider vocabulary padding) are not sent: they stay as the sink's
// memory was. InputError when a tensor is missing or has another shape.
void read_weights(SavedCheckpoint& saved, const ParamLayout& layout, const WeightSink& sink,
                  int64_t chunk = int64_t{1} << 20);

}  // namespace zt
