#pragma once
// The host memory a process can still allocate, which is often less than its share of the
// machine: a ulimit (RLIMIT_AS, RLIMIT_DATA), a container's cgroup limit, or other processes'
// use of the machine. On the CPU backend the device is host memory, so `train` checks its plan
// against this before it allocates.
#include <string>

namespace zt {

struct HostMemory {
  double bytes = 0;    // < 0: no bound known
  std::string source;  // for the error line: "RLIMIT_AS (ulimit -v) 2.00 GB less 0.37 GB in use"
};

// Where the limits are read from (a test points them at a directory of its own).
struct HostMemoryFiles {
  std::string proc = "/proc";             // self/status (VmSize, VmData), self/cgroup, meminfo
  std::string cgroup = "/sys/fs/cgroup";  // v2: memory.max, memory.current; v1: memory/...
  bool rlimits = true;                    // getrlimit(RLIMIT_AS), getrlimit(RLIMIT_DATA)
};

// The least of: RLIMIT_AS less this process's virtual size (VmSize), RLIMIT_DATA less its data
// size (VmData), and, divided among the `local_ranks` ranks that share them, the cgroup's limit
// less its usage (cgroup v2 memory.max - memory.current, v1 memory.limit_in_bytes -
// memory.usage_in_bytes, over the process's cgroup and its ancestors) and /proc/meminfo's
// MemAvailable. Sources that cannot be read are skipped; bytes < 0 when none bounds it.
HostMemory available_host_memory(int local_ranks, const HostMemoryFiles& files = {});

}  // namespace zt
