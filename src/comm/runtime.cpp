#include "src/comm/runtime.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <thread>

#include <signal.h>
#include <unistd.h>

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

// Open MPI's daemons (mpirun, orted) hear of an abort over their TCP control channel. When the
// network between nodes is cut, the abort request and the kill orders sit unacknowledged in TCP
// retransmission (about 15 min), so mpirun and the remote orted outlive the ranks indefinitely.
// Before aborting, a rank forks a reaper that, kAbortGraceS later, SIGKILLs the rank's parent when
// it is one of those daemons and still alive: on a healthy network the job is gone long before.
// SLURM's slurmstepd (srun) and anything else is never touched.
// Only for a job over several nodes: on one node the daemons never lose each other.
constexpr unsigned kAbortGraceS = 5;
std::atomic<bool> g_several_nodes{false};

void arm_launcher_reaper() {
  if (!g_several_nodes.load()) return;
  const pid_t parent = getppid();
  std::string comm;
  if (FILE* f = std::fopen(fmt::format("/proc/{}/comm", parent).c_str(), "r")) {
    char buf[64] = {};
    if (std::fgets(buf, sizeof buf, f) != nullptr) comm = buf;
    std::fclose(f);
  }
  while (!comm.empty() && (comm.back() == '\n' || comm.back() == ' ')) comm.pop_back();
  if (comm != "orted" && comm != "mpirun" && comm != "orterun" && comm != "prted" &&
      comm != "prterun")
    return;
  // Only async-signal-safe calls in the child of a threaded process.
  const pid_t pid = fork();
  if (pid != 0) return;  // the rank (or a failed fork: no reaper)
  setsid();              // out of the job's process group, so the job's kill spares it
  for (int fd = 0; fd < 1024; ++fd) close(fd);  // holds no pipe or socket of the job open
  sleep(kAbortGraceS);
  if (kill(parent, 0) == 0) kill(parent, SIGKILL);
  _exit(0);
}

void abort_world(int code) {
  arm_launcher_reaper();
  MPI_Abort(MPI_COMM_WORLD, code);
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
  if (inited && !finalized) abort_world(code);
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
  // The watchdog is up before the first collective, so a start-up that hangs (a node that never
  // answers) ends like any other hang.
  watchdog_ = std::make_unique<Watchdog>(rank_, opts.comm_timeout_s, [] { abort_world(1); });
  find_nodes();
  if (launch_.rank >= 0 &&
      (launch_.rank != rank_ || (launch_.world >= 0 && launch_.world != world_)))
    throw Error(fmt::format(
        "launcher says rank {} of {} ({}), MPI says rank {} of {}; the MPI library does not "
        "match the launcher (use the srun --mpi plugin or mpirun of the same Open MPI)",
        launch_.rank, launch_.world, launch_.slurm ? "SLURM_PROCID" : "OMPI_COMM_WORLD_RANK", rank_,
        world_));
  progress_ = std::make_unique<MpiProgress>(opts.progress, opts.poll_interval_us);
  const char* sync = std::getenv("ZT_SYNCHRONOUS_SENDS");
  synchronous_sends_ = opts.synchronous_sends || (sync != nullptr && std::string_view(sync) == "1");
}

void MpiRuntime::find_nodes() {
  // The node is what MPI says shares memory with this rank (MPI_COMM_TYPE_SHARED), named by the
  // host name; both gathered once, so every rank knows every rank's node.
  auto guard = watchdog_->arm("start-up (node split, host names)", "world");
  MPI_Comm node = MPI_COMM_NULL;
  ZT_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
  ZT_MPI(MPI_Comm_rank(node, &local_rank_));
  ZT_MPI(MPI_Comm_size(node, &local_size_));
  int leader = rank_;  // the lowest world rank of the node names it
  ZT_MPI(MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node));
  constexpr int kName = 64;
  char mine[kName] = {};
  gethostname(mine, kName - 1);
  std::vector<char> names(static_cast<size_t>(kName) * static_cast<size_t>(world_));
  ZT_MPI(MPI_Allgather(mine, kName, MPI_CHAR, names.data(), kName, MPI_CHAR, MPI_COMM_WORLD));
  node_of_.assign(static_cast<size_t>(world_), 0);
  ZT_MPI(MPI_Allgather(&leader, 1, MPI_INT, node_of_.data(), 1, MPI_INT, MPI_COMM_WORLD));
  hosts_.clear();
  for (int r = 0; r < world_; ++r) hosts_.emplace_back(&names[static_cast<size_t>(r) * kName]);
  for (int n : node_of_) g_several_nodes = g_several_nodes || n != node_of_[0];
  for (int r = 0; r < world_; ++r) all_ranks_.push_back(r);
  world_key_ = group_key(GroupKind::World, all_ranks_);
  open_board(node);
}

void MpiRuntime::open_board(MPI_Comm node) {
  node_comm_ = node;
  void* mine = nullptr;
  // The board only names ranks in a hang report: an MPI without shared windows runs without it
  // (timeouts keep the plain line) rather than not at all.
  // The window places each rank's segment after its own header, aligned to less than a record
  // needs: each record starts at its segment's first 64-byte boundary (the same offset in every
  // process, whose mappings are page-aligned).
  constexpr size_t kAlign = alignof(RankRecord);
  const auto record_in = [](void* segment) {
    const auto at = reinterpret_cast<std::uintptr_t>(segment);
    return reinterpret_cast<RankRecord*>((at + kAlign - 1) & ~std::uintptr_t{kAlign - 1});
  };
  if (MPI_Win_allocate_shared(sizeof(RankRecord) + kAlign, 1, MPI_INFO_NULL, node, &mine,
                              &board_win_) != MPI_SUCCESS) {
    board_win_ = MPI_WIN_NULL;
    return;
  }
  std::construct_at(record_in(mine));
  // Each local rank's record, wherever the window placed it.
  std::vector<RankRecord*> records(static_cast<size_t>(local_size_));
  for (int i = 0; i < local_size_; ++i) {
    MPI_Aint bytes = 0;
    int disp = 0;
    void* at = nullptr;
    ZT_MPI(MPI_Win_shared_query(board_win_, i, &bytes, &disp, &at));
    records[static_cast<size_t>(i)] = record_in(at);
  }
  ZT_MPI(MPI_Barrier(node));  // every record constructed before any is read
  board_ = std::make_unique<RankBoard>(std::move(records), rank_, node_of_, hosts_);
  watchdog_->set_board(board_.get());
}

void MpiRuntime::close_board() {
  if (board_win_ != MPI_WIN_NULL) {
    {
      // The end of the job is a collective too: a rank still training is named.
      constexpr std::string_view kOp = "shutdown (MPI_Finalize)";
      auto guard = watchdog_->arm(
          kOp, "world",
          Watchdog::Where{GroupKind::World, watchdog_->issue(kOp, GroupKind::World, world_key_),
                          all_ranks_, -1, world_key_});
      ZT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    watchdog_->set_board(nullptr);
    board_.reset();
    MPI_Win_free(&board_win_);
  }
  if (node_comm_ != MPI_COMM_NULL) MPI_Comm_free(&node_comm_);
}

MpiRuntime::~MpiRuntime() {
  progress_.reset();
  // MPI_Finalize waits for every rank: bounded by the watchdog like any collective.
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    try {
      close_board();
    } catch (const std::exception& e) {
      abort_job(e.what(), 1);
    }
    auto guard = watchdog_->arm("shutdown (MPI_Finalize)", "world");
    MPI_Finalize();
  }
  watchdog_.reset();
}

std::unique_ptr<MpiCommunicator> MpiRuntime::world(MemoryPool& pool) {
  MPI_Comm c = MPI_COMM_NULL;
  ZT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
  return std::make_unique<MpiCommunicator>(
      c, GroupKind::World,
      MpiContext{&pool, &stats_, progress_.get(), watchdog_.get(), synchronous_sends_});
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
    constexpr std::string_view kOp = "input agreement";
    auto guard = watchdog_->arm(
        kOp, "world",
        Watchdog::Where{GroupKind::World, watchdog_->issue(kOp, GroupKind::World, world_key_),
                        all_ranks_, -1, world_key_});
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
