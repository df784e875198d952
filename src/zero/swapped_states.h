#pragma once
// The NVMe tier of OptimizerStates (optimizer_states.h): the shard's fp32 master parameters and
// Adam moments in one swap file per rank (src/core/swap_file.h: unlinked on creation, a checksum
// per chunk verified on every read), chunk c holding master, m and v of shard elements
// [c·C, (c+1)·C) back to back (C: --sub-group-size). A step streams the chunks through three
// host buffers (category NvmeBuffers): chunk k+1 is read and chunk k−1 written while chunk k is
// updated. A chunk never written reads as zeros (Adam's moments start so).
#include <memory>

#include "src/zero/optimizer_states.h"

namespace zt {

std::unique_ptr<OptimizerStates> make_swapped_states(const StateTierConfig& cfg, int64_t numel,
                                                     const DeviceContext& ctx);

// The swap file's bytes and the host buffers' bytes for `numel` shard elements (the plan).
uint64_t swapped_states_file_bytes(int64_t numel, int64_t chunk_elems);
size_t swapped_states_buffer_bytes(int64_t numel, int64_t chunk_elems);

}  // namespace zt
