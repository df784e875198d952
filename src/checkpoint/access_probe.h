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
// present, is a regular file it can read (opened without blocking: a FIFO is refused, not
// waited on). A missing `dir` is no error (the run starts from scratch).
void check_load_readable(const std::string& dir);

// Node-local directories (a disk per node) pass both checks above on every rank, yet each node
// would hold only its own ranks' shards. So rank 0 leaves a probe file in --save, named by the
// job (a probe a killed job left behind is not this one's), and every other rank must find it.
// `job`: the launcher's name for this job (launch_job_id()).
std::string shared_probe_path(const std::string& dir, const std::string& job);
// Rank 0: creates the probe (InputError naming the cause when it cannot).
void write_shared_probe(const std::string& probe, const std::string& dir);
// Every other rank: InputError naming this host and rank 0's when the probe is not there.
void check_sees_shared_probe(const std::string& probe, const std::string& dir,
                             const std::string& rank0_host);
// The job's id as the launcher tells every rank alike (PMIx namespace under Open MPI and srun,
// else SLURM's job and step ids), or "" when there is none.
std::string launch_job_id();

// This machine's name (gethostname), for error lines.
std::string host_name();

}  // namespace zt
