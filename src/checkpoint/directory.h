#pragma once
// The checkpoint directory's bookkeeping, kept so that no save can lose the last good checkpoint:
//  - DIR/latest holds one plain iteration name ("iter_0000100") of a directory inside DIR;
//  - a new iteration is written into iter_N.tmp/ and put in place only when complete; when
//    iter_N already exists (re-saving the iteration `latest` names), the two are exchanged
//    atomically (renameat2 RENAME_EXCHANGE), so at every instant iter_N is a complete checkpoint;
//  - stale iter_N.tmp/ and latest.tmp left by a killed save are removed at the next save;
//  - --keep-last orders checkpoints by the iteration read from their meta.json (not by name: the
//    name gains a digit past 9,999,999) and never deletes `latest`'s target or anything newer;
//  - a lock file (flock) keeps a second job out of a directory one job is saving into;
//  - an iteration directory may be a symbolic link to a directory elsewhere (an old checkpoint
//    moved to another disk): loads follow it, and pruning or re-saving that iteration removes
//    the link, never the files of its target.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zt {

std::string iteration_name(int64_t iteration);  // iter_0000100 (7 digits at least)
// The iteration of a name iteration_name() makes, or nothing for any other name.
std::optional<int64_t> parse_iteration_name(std::string_view name);

// Whether DIR has an entry named `latest`, of any kind (lstat: a FIFO or a looping link counts,
// and read_latest refuses it).
bool has_latest(const std::filesystem::path& dir);
// The name DIR/latest holds, checked to be a plain iteration name; nothing when DIR has no
// `latest`. Throws InputError for a malformed one.
std::optional<std::string> read_latest(const std::filesystem::path& dir);

// The iterations DIR holds a directory for (iter_N, or a symbolic link to a directory), in
// increasing order; empty when DIR cannot be listed.
std::vector<int64_t> saved_iterations(const std::filesystem::path& dir);

// Points in publish_iteration() where the fault-injection tests kill the process.
enum class PublishPoint : uint8_t { BeforeRename, AfterExchange, BeforeLatest, BeforePrune };

// Rank 0, after every shard and meta.json of `tmp` (DIR/iter_N.tmp) are on disk: puts it in
// place as DIR/iter_N, moves `latest` to it and prunes to `keep_last` (0: keep all). `at` runs
// at each PublishPoint.
void publish_iteration(const std::filesystem::path& dir, int64_t iteration, int keep_last,
                       const std::function<void(PublishPoint)>& at = {});

// Removes DIR's stale iter_N.tmp directories and latest.tmp (a save killed half-way).
void remove_stale_tmp(const std::filesystem::path& dir);

// Deletes the oldest complete checkpoints so that `keep` remain at or below `latest`'s
// iteration; never `latest`'s target, anything newer than it, or a directory whose meta.json
// cannot be read.
void prune_checkpoints(const std::filesystem::path& dir, int keep);

// Before the first step (rank 0): creates --save, and checks a file can be written and synced
// in it. Throws InputError (one line naming the directory) when not.
void prepare_save_dir(const std::string& dir);

// Holds DIR/zerotron.lock (flock, released by the kernel when the process dies) for the job's
// lifetime; a second job on the same directory gets InputError naming the holder.
class CheckpointLock {
 public:
  explicit CheckpointLock(const std::string& dir);
  ~CheckpointLock();
  CheckpointLock(const CheckpointLock&) = delete;
  CheckpointLock& operator=(const CheckpointLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace zt
