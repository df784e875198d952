#pragma once
// Checks on the directory the NVMe tier swaps to (--nvme-path), before any file is made there.
// Each failure is the user's to fix, so each throws InputError: one line naming the directory.
#include <cstdint>
#include <string>
#include <string_view>

namespace zt {

// Bytes an unprivileged process may still write under `dir` (statvfs: f_bavail * f_frsize).
uint64_t free_bytes(const std::string& dir);

// Refuses when `dir` has fewer than `bytes_needed` bytes free; `what` says what needs them
// ("the optimizer states' swap file").
void require_free_space(const std::string& dir, uint64_t bytes_needed, std::string_view what);

// Refuses when `dir` does not exist, is not a directory, or this process cannot create files in
// it.
void require_writable_dir(const std::string& dir, std::string_view what);

// "1.50 GiB" for messages.
std::string format_bytes(uint64_t bytes);

}  // namespace zt
