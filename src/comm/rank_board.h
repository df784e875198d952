#pragma once
// RankBoard: what every rank of a node is doing, kept where the node's other ranks can read it
// without joining any collective: one RankRecord per local rank, in memory all of them map
// (MpiRuntime allocates it with MPI_Win_allocate_shared over the node). A rank that is stopped
// (SIGSTOP) or busy elsewhere answers no message, but its last stores stay readable, so when a
// collective times out the waiting ranks can say which members never arrived and what those
// are doing (attribute()), instead of each saying only that it waited.
//
// Each rank counts the collectives it issues per communicator (the n-th all_reduce, all_gather,
// ... of its dp group is #n; a communicator is known by its kind and members, the same key on
// every member), records what it blocks in (op, group, number; nothing while it computes) and,
// from its watchdog's monitor thread, a heartbeat. A member of a stuck
// collective #n that has issued fewer than n on that group never arrived; one whose heartbeat
// is stale cannot complete anything and is named whatever it published last.
// Point-to-point operations are not numbered (the two sides of a pipeline issue different
// counts); for them the peer is the one that never arrived.
//
// No MPI here: the unit test publishes several ranks' states into one array.
#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/comm/comm_stats.h"

namespace zt::comm {

// A communicator's key on the board: its kind and its members' world ranks.
uint64_t group_key(GroupKind kind, std::span<const int> members);

// Communicators a rank numbers its collectives on; those beyond are not numbered (their
// timeouts keep the plain line).
inline constexpr size_t kBoardGroups = 16;

struct alignas(64) RankRecord {
  std::atomic<uint64_t> heartbeat_ns{0};   // steady clock (CLOCK_MONOTONIC: one clock per node)
  std::atomic<uint64_t> waiting{0};        // the Activity it blocks in (packed); 0 while computing
  std::atomic<uint64_t> waiting_group{0};  // the key of the communicator it blocks in
  std::atomic<uint64_t> last{0};           // the last collective it issued or blocked in
  struct Count {
    std::atomic<uint64_t> group{0};   // a communicator's key; 0: free
    std::atomic<uint64_t> issued{0};  // collectives this rank issued on it
  } counts[kBoardGroups];
  // The node's report lines, used in its first record: one per stuck communicator, state 0
  // free, 1 claimed by a waiting rank about to print it, 2 printed.
  struct Report {
    std::atomic<uint64_t> group{0};
    std::atomic<uint32_t> state{0};
  } reports[kBoardGroups];
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "records are shared between processes");

// One operation on one group: op names a row of the board's table of operations.
struct Activity {
  uint8_t op = 0;  // 0: none
  GroupKind group = GroupKind::World;
  uint64_t seq = 0;  // its number on the group; 0 for point-to-point operations
  uint64_t pack() const;
  static Activity unpack(uint64_t word);
  std::string text() const;  // "all_reduce #12 on group dp"
};

// What a timed-out wait was: a collective of `members` (world ranks), or a point-to-point
// operation with `peer`.
struct Stuck {
  std::string_view op;
  GroupKind group = GroupKind::World;
  uint64_t seq = 0;
  std::span<const int> members;
  int peer = -1;
  double waited_s = 0;
};

class RankBoard {
 public:
  // `node`: the records of this node's ranks by local rank (the node's ranks in world order),
  // constructed and outliving the board;
  // `node_of`: every world rank's node (its lowest world rank); `hosts`: every rank's host.
  RankBoard(std::vector<RankRecord*> node, int rank, std::vector<int> node_of,
            std::vector<std::string> hosts);

  // This rank issues `op` on the communicator of kind `kind` and key `group`: returns its number
  // there (1, 2, ...; 0 for point-to-point operations, which are not counted, and on a
  // communicator beyond kBoardGroups).
  uint64_t issue(std::string_view op, GroupKind kind, uint64_t group);
  // This rank now blocks in `a` on communicator `group` (op 0: it computes).
  void set_waiting(const Activity& a, uint64_t group);
  void heartbeat(uint64_t now_ns);

  // The line naming who never arrived at `s` and what they do, as this rank sees it at `now_ns`
  // (without "zerotron: error: "), and how many members arrived (this rank included) and did
  // not. Ranks whose heartbeat is older than `stale_s` are named as stopped or dead; a member in
  // another operation with the same number on the group never arrived either (diverged).
  struct Verdict {
    std::string line;
    int arrived = 0, missing = 0;
  };
  Verdict attribute(const Stuck& s, uint64_t now_ns, double stale_s) const;

  // The report of `s` is printed once per node: the first waiting rank to claim it prints it
  // (claim() true), then calls printed(); the others wait_printed() and print nothing.
  bool claim(const Stuck& s);
  bool claimed(const Stuck& s) const;
  bool any_printed() const;  // some report of this node was printed
  void printed(const Stuck& s);
  // Waits up to `max_s` for the claimed report to be printed; false if it never was.
  bool wait_printed(const Stuck& s, double max_s) const;

  static uint8_t op_code(std::string_view op);  // 0 for an operation outside the table

 private:
  RankRecord* record(int world_rank) const;  // null for a rank on another node
  // The key of the communicator `s` waits on (for a point-to-point one: the pair).
  uint64_t key_of(const Stuck& s) const;
  static uint64_t issued_on(const RankRecord& rec, uint64_t group);
  std::atomic<uint32_t>* report_slot(const Stuck& s) const;
  std::string describe_missing(int r, const RankRecord& rec, const Stuck& s, uint64_t now_ns,
                               double stale_s) const;

  std::vector<RankRecord*> node_;
  int rank_;
  std::vector<int> node_of_, local_of_;  // local_of_: every world rank's index on its node
  std::vector<std::string> hosts_;
  RankRecord* mine_;
};

}  // namespace zt::comm
