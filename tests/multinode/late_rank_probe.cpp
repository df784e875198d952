// late_rank_probe <late rank> <delay ms>: the launcher's PMIx fences must be barriers, and so
// must MPI_Init. The rank numbered <late rank> (by the launcher's SLURM_PROCID or
// OMPI_COMM_WORLD_RANK, known before anything starts) sleeps <delay ms> first. Every rank then
// runs a PMIx fence without data (the kind that ends Open MPI's MPI_Init) and MPI_Init, noting
// when it entered and left each (wall clock: the "nodes" of the test cluster share one machine's
// clock), and rank 0 checks that no rank left either before the late rank entered it. Where the
// fence is not a barrier, early ranks leave MPI_Init while others are still inside it, and Open
// MPI 4.1 segfaults in those on the first message: the probe fails either way.
#include <mpi.h>
#include <pmix.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

double wall_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

int launcher_rank() {
  for (const char* name : {"SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"})
    if (const char* v = std::getenv(name)) return std::atoi(v);
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: late_rank_probe <late rank> <delay ms>\n");
    return 2;
  }
  const int late = std::atoi(argv[1]);
  const int delay_ms = std::atoi(argv[2]);
  if (launcher_rank() == late) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  pmix_proc_t me;
  if (PMIx_Init(&me, nullptr, 0) != PMIX_SUCCESS) {
    std::fprintf(stderr, "late_rank_probe: PMIx_Init failed (not started by a PMIx launcher)\n");
    return 2;
  }
  // [fence entered, fence left, MPI_Init entered, MPI_Init left]
  double mine[4];
  mine[0] = wall_seconds();
  const pmix_status_t fenced = PMIx_Fence(nullptr, 0, nullptr, 0);
  mine[1] = wall_seconds();
  mine[2] = wall_seconds();
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  mine[3] = wall_seconds();
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<double> all(4 * static_cast<size_t>(size));
  MPI_Gather(mine, 4, MPI_DOUBLE, all.data(), 4, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  int ok = fenced == PMIX_SUCCESS ? 1 : 0;
  if (!ok) std::printf("late_rank_probe: PMIx_Fence failed on rank %d\n", rank);
  if (rank == 0) {
    if (late < 0 || late >= size) {
      std::fprintf(stderr, "late_rank_probe: late rank %d outside the world of %d\n", late, size);
      ok = 0;
    } else {
      const auto at = [&](int r, int i) { return all[4 * static_cast<size_t>(r) + i]; };
      for (int r = 0; r < size; ++r) {
        for (int step = 0; step < 2; ++step) {
          const double early = at(late, 2 * step) - at(r, 2 * step + 1);
          if (early <= 0) continue;
          std::printf("late_rank_probe: rank %d left %s %.3f s before rank %d entered it\n", r,
                      step == 0 ? "PMIx_Fence" : "MPI_Init", early, late);
          ok = 0;
        }
      }
    }
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  PMIx_Finalize(nullptr, 0);
  return ok ? 0 : 1;
}
