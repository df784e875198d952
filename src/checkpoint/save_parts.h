#pragma once
// One save in three parts, so that the middle one can run on a thread of its own
// (saver.h) while the step loop goes on:
//   begin_save   collective: DIR/iter_N.tmp/ made (stale ones removed) and everything meta.json
//                records taken from the run now;
//   write_shard  this rank alone, no communication: its shard file from a reader of its state
//                sections, fsynced; returns the header's CRC-32;
//   finish_save  collective: every rank's header checksum gathered (the point where every shard
//                is on disk), meta.json written, the iteration published (directory.h).
// save_checkpoint runs the three in a row. The file's bytes depend only on the states' bytes,
// never on how they were read, so a save from a snapshot is byte-identical to one from the
// live states.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "src/checkpoint/checkpoint.h"
#include "src/checkpoint/meta.h"
#include "src/checkpoint/shard.h"
#include "src/checkpoint/shard_role.h"

namespace zt {

struct SaveInProgress {
  std::string dir;
  int iteration = 0;
  std::filesystem::path tmp_dir, final_dir;
  ShardRole role;
  int world = 1;
  int keep_last = 0;
  MetaRecord meta;  // all but the shards (rank 0 fills them in finish_save)
  // This rank's shard (when role.writes): its path, header, and the bytes of each of the
  // ShardHeader::kTensors state sections (master, Adam m, Adam v).
  std::string shard_path;
  ShardHeader header;
  size_t section_bytes = 0;
};

// `n` bytes of state section `k` (owned_state()'s order) from byte `at`, in host memory valid
// until the next call.
using SectionReader = std::function<const void*(int k, size_t at, size_t n)>;

// Collective over the world.
SaveInProgress begin_save(const std::string& dir, const CheckpointState& state);
// This rank's shard, in pieces of at most `piece` bytes (`hooks.progress` after each,
// `hooks.after_shard` once it is on disk). 0 when the rank writes none.
uint32_t write_shard(const SaveInProgress& save, const SectionReader& read, size_t piece,
                     const SaveHooks& hooks);
// Pieces of at most this many bytes between progress reports where the host reads the states.
inline constexpr size_t kSavePieceBytes = size_t{64} << 20;
// write_shard from `s`'s live states: directly where the host reads the device's memory, else
// through the host staging buffer.
uint32_t write_shard_from_state(const SaveInProgress& save, const CheckpointState& s,
                                const SaveHooks& hooks);
// Collective over `world` (the host world). Returns the iteration directory.
std::string finish_save(const SaveInProgress& save, uint32_t crc, comm::Communicator& world,
                        const SaveHooks& hooks);

}  // namespace zt
