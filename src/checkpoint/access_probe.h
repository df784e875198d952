#pragma once
// Every rank, before the run allocates anything, checks that it can reach the checkpoint
// directories itself: --save and --load must be on a filesystem every rank shares, and a rank
// on a node where they are missing or read-only would otherwise fail only at the first save, or
// silently start from scratch. Each check throws InputError naming the host (the caller's
// error line names the rank), for MpiRuntime::agree_on_input.
#include <string>

namespace zt {

// Creates and removes a probe file in `dir`, or, while `dir` does not exist yet, in its nearest
// existing parent (where it will be created).
void check_save_writable(const std::string& dir);
// When `dir` exists: that it is a directory this process can list, and that its `latest`, when
// present, can be read. A missing `dir` is no error (the run starts from scratch).
void check_load_readable(const std::string& dir);

// This machine's name (gethostname), for error lines.
std::string host_name();

}  // namespace zt
