#pragma once
// The gradient shard of stages 2-3 on the NVMe tier (grad_tier: the optimizer on NVMe, from a
// device of its own): each unit's reduced part, in the kept gradient's type, in whole pages of
// a swap file per rank (unit_pages.h). Backward adds each micro-batch's part as it completes
// (the step's first addition writes the part; later ones read it, add and write it back, with
// accumulate_f32's rounding, as the host tier adds); the step reads the shard back by range.
// Every page read is checked against its checksum.
#include <cstdint>
#include <optional>
#include <vector>

#include "src/core/async_io.h"
#include "src/core/io_buffer.h"
#include "src/core/memory_pool.h"
#include "src/core/swap_file.h"
#include "src/zero/optimizer_states.h"
#include "src/zero/partition.h"
#include "src/zero/unit_pages.h"

namespace zt {

class SwappedGrads {
 public:
  SwappedGrads(const StateTierConfig& cfg, const Partition& part, DType type, MemoryPool& host);
  ~SwappedGrads();
  // A new step: every part reads as zeros until added to.
  void zero();
  // Adds unit `unit`'s part (part_len fp32 elements in host memory).
  void add(int unit, const float* part);
  // Shard elements [offset, offset + len) into host memory, in the kept type.
  void read(int64_t offset, int64_t len, void* dst);
  uint64_t file_bytes() const { return file_ ? file_->file_bytes() : 0; }
  // The swap file's bytes and the host buffer's (category NvmeBuffers), for the plan.
  static uint64_t file_bytes(const Partition& part, DType type);
  static size_t buffer_bytes(const Partition& part, DType type);

 private:
  void hold(int unit);  // buf_ becomes the unit's part as the file has it
  void wait_writes();

  const Partition& part_;
  DType type_;
  size_t e_;
  UnitPages pages_;          // the file's layout
  std::vector<bool> added_;  // per unit: added to in this step
  // Destroyed in reverse: the file (waiting for its requests) before the ring and the buffer.
  IoBuffer buf_;
  AsyncIo io_;
  std::optional<SwapFile> file_;
  std::vector<AsyncIo::Ticket> writes_;  // the held unit's, in flight
  int held_ = -1;                        // the unit buf_ holds, or -1
};

}  // namespace zt
