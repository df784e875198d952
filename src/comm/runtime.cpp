#include "src/comm/runtime.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>

#include "src/comm/mpi_check.h"
#include "src/core/log.h"

namespace zt::comm {

namespace {

int env_int(const char* (*getenv_fn)(const char*), const char* name) {
  const char* v = getenv_fn(name);
  if (v == nullptr || *v == '\0') return -1;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || x < 0) return -1;
  return static_cast<int>(x);
}

const char* std_getenv(const char* name) {
  return std::getenv(name);
}

void terminate_handler() {
  std::string cause = "terminate called without an active exception";
  if (auto e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      cause = ex.what();
    } catch (...) {
      cause = "unknown exception";
    }
  }
  abort_job(cause, 1);
}

}  // namespace

LaunchInfo launch_info_from_env(const char* (*getenv_fn)(const char*)) {
  if (getenv_fn == nullptr) getenv_fn = std_getenv;
  LaunchInfo li;
  if (env_int(getenv_fn, "SLURM_PROCID") >= 0) {
    li.slurm = true;
    li.rank = env_int(getenv_fn, "SLURM_PROCID");
    li.local_rank = env_int(getenv_fn, "SLURM_LOCALID");
    li.world = env_int(getenv_fn, "SLURM_NTASKS");
  } else {
    li.rank = env_int(getenv_fn, "OMPI_COMM_WORLD_RANK");
    li.local_rank = env_int(getenv_fn, "OMPI_COMM_WORLD_LOCAL_RANK");
    li.world = env_int(getenv_fn, "OMPI_COMM_WORLD_SIZE");
  }
  return li;
}

void abort_job(std::string_view cause, int code) {
  log::error_line(cause);  // "zerotron: error: rank R: <cause>" when world > 1
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (inited && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

MpiRuntime::MpiRuntime(int& argc, char**& argv, RuntimeOptions opts) {
  launch_ = launch_info_from_env();
  int provided = MPI_THREAD_SINGLE;
  const int want =
      opts.progress == ProgressMode::Thread ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED;
  ZT_MPI(MPI_Init_thread(&argc, &argv, want, &provided));
  std::set_terminate(terminate_handler);
  ZT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  ZT_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  ZT_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world_));
  log::set_rank(rank_, world_);
  thread_multiple_ = provided >= MPI_THREAD_MULTIPLE;
  if (opts.progress == ProgressMode::Thread && !thread_multiple_) {
    log::line("zerotron: MPI lacks MPI_THREAD_MULTIPLE; async collectives progress manually");
    opts.progress = ProgressMode::Manual;
  }
  // Local rank from MPI itself (ranks sharing memory), checked against the launcher.
  MPI_Comm node = MPI_COMM_NULL;
  ZT_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
  ZT_MPI(MPI_Comm_rank(node, &local_rank_));
  ZT_MPI(MPI_Comm_size(node, &local_size_));
  ZT_MPI(MPI_Comm_free(&node));
  if (launch_.rank >= 0 &&
      (launch_.rank != rank_ || (launch_.world >= 0 && launch_.world != world_)))
    throw Error(fmt::format(
        "launcher says rank {} of {} ({}), MPI says rank {} of {}; the MPI library does not "
        "match the launcher (use the srun --mpi plugin or mpirun of the same Open MPI)",
        launch_.rank, launch_.world, launch_.slurm ? "SLURM_PROCID" : "OMPI_COMM_WORLD_RANK", rank_,
        world_));
  watchdog_ =
      std::make_unique<Watchdog>(rank_, opts.comm_timeout_s, [] { MPI_Abort(MPI_COMM_WORLD, 1); });
  progress_ = std::make_unique<MpiProgress>(opts.progress, opts.poll_interval_us);
}

MpiRuntime::~MpiRuntime() {
  progress_.reset();
  watchdog_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

std::unique_ptr<MpiCommunicator> MpiRuntime::world(MemoryPool& pool) {
  MPI_Comm c = MPI_COMM_NULL;
  ZT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
  return std::make_unique<MpiCommunicator>(
      c, GroupKind::World, MpiContext{&pool, &stats_, progress_.get(), watchdog_.get()});
}

int MpiRuntime::run_guarded(const std::function<int()>& body) {
  try {
    return body();
  } catch (const InputError& e) {
    // Bad input is usually the same on every rank: give rank 0 a head start so the job prints
    // one line, not one per rank; a rank that alone failed still reports within a second.
    if (rank_ != 0) std::this_thread::sleep_for(std::chrono::seconds(1));
    abort(e.what(), 2);
  } catch (const std::exception& e) {
    abort(e.what(), 1);
  } catch (...) {
    abort("unknown exception", 1);
  }
}

int MpiRuntime::agree_on_input(const std::function<void()>& check) {
  std::string error;
  try {
    check();
  } catch (const InputError& e) {
    error = e.what();
  }
  // The lowest rank that failed, or world_ when none did.
  const int mine = error.empty() ? world_ : rank_;
  int first = world_;
  {
    // A rank stuck in its checks (a file that never opens) would block the others here: the
    // watchdog ends the job after the timeout instead.
    auto guard = watchdog_->arm("input agreement", "world");
    ZT_MPI(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  }
  if (first == world_) return 0;
  if (first == rank_) log::error_line(error);
  return 2;
}

void MpiRuntime::abort(std::string_view cause, int code) {
  abort_job(cause, code);
}

}  // namespace zt::comm
