#include "src/comm/rank_board.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "src/core/error.h"

namespace zt::comm {

namespace {

// Every operation a watchdog guard names with a group; the board stores its row + 1.
constexpr std::string_view kOps[] = {
    "all_reduce", "reduce_scatter", "all_gather", "broadcast",       "send",
    "recv",       "barrier",        "split",      "input agreement", "shutdown (MPI_Finalize)",
    "all_to_all"};
constexpr uint64_t kSeqMask = (uint64_t{1} << 48) - 1;

bool point_to_point(std::string_view op) {
  return op == "send" || op == "recv";
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

}  // namespace

uint64_t group_key(GroupKind kind, std::span<const int> members) {
  // FNV-1a over the kind and the ranks; never 0 (a free slot).
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t v) {
    for (int i = 0; i < 8; ++i, v >>= 8) h = (h ^ (v & 0xff)) * 1099511628211ull;
  };
  mix(static_cast<uint64_t>(kind));
  for (int r : members) mix(static_cast<uint64_t>(r));
  return h ? h : 1;
}

uint64_t Activity::pack() const {
  return uint64_t{op} << 56 | uint64_t{static_cast<uint8_t>(group)} << 48 | (seq & kSeqMask);
}

Activity Activity::unpack(uint64_t word) {
  Activity a;
  a.op = static_cast<uint8_t>(word >> 56);
  a.group = static_cast<GroupKind>(static_cast<uint8_t>(word >> 48));
  a.seq = word & kSeqMask;
  if (a.op > std::size(kOps) || static_cast<size_t>(a.group) >= kNumGroupKinds) a = Activity{};
  return a;
}

std::string Activity::text() const {
  if (op == 0) return "nothing";
  std::string s(kOps[op - 1]);
  if (seq) s += fmt::format(" #{}", seq);
  return s + fmt::format(" on group {}", group_kind_name(group));
}

uint8_t RankBoard::op_code(std::string_view op) {
  for (size_t i = 0; i < std::size(kOps); ++i)
    if (kOps[i] == op) return static_cast<uint8_t>(i + 1);
  return 0;
}

RankBoard::RankBoard(std::vector<RankRecord*> node, int rank, std::vector<int> node_of,
                     std::vector<std::string> hosts)
    : node_(std::move(node)), rank_(rank), node_of_(std::move(node_of)), hosts_(std::move(hosts)) {
  // The node's ranks are its local ranks in world order (MpiRuntime splits by world rank).
  local_of_.resize(node_of_.size());
  for (size_t r = 0; r < node_of_.size(); ++r)
    local_of_[r] = static_cast<int>(
        std::count(node_of_.begin(), node_of_.begin() + static_cast<ptrdiff_t>(r), node_of_[r]));
  const auto me = static_cast<size_t>(local_of_.at(static_cast<size_t>(rank_)));
  mine_ = me < node_.size() ? node_[me] : nullptr;
  ZT_CHECK(mine_ != nullptr, "rank {} has no record on its node's board", rank_);
}

RankRecord* RankBoard::record(int r) const {
  if (r < 0 || static_cast<size_t>(r) >= node_of_.size()) return nullptr;
  if (node_of_[static_cast<size_t>(r)] != node_of_[static_cast<size_t>(rank_)]) return nullptr;
  const auto i = static_cast<size_t>(local_of_[static_cast<size_t>(r)]);
  return i < node_.size() ? node_[i] : nullptr;
}

uint64_t RankBoard::issue(std::string_view op, GroupKind kind, uint64_t group) {
  uint64_t seq = 0;
  if (!point_to_point(op)) {
    for (RankRecord::Count& c : mine_->counts) {
      uint64_t key = c.group.load();
      // Only this process writes its record; the threads of it may race for a free slot.
      if (key == 0 && c.group.compare_exchange_strong(key, group)) key = group;
      if (key == group) {
        seq = c.issued.fetch_add(1) + 1;
        break;
      }
    }
  }
  mine_->last.store(Activity{op_code(op), kind, seq}.pack());
  return seq;
}

uint64_t RankBoard::issued_on(const RankRecord& rec, uint64_t group) {
  for (const RankRecord::Count& c : rec.counts)
    if (c.group.load() == group) return c.issued.load();
  return 0;
}

void RankBoard::set_waiting(const Activity& a, uint64_t group) {
  mine_->waiting_group.store(a.op ? group : 0);
  mine_->waiting.store(a.op ? a.pack() : 0);
  if (a.op) mine_->last.store(a.pack());
}

void RankBoard::heartbeat(uint64_t now_ns) {
  mine_->heartbeat_ns.store(now_ns);
}

std::string RankBoard::describe_missing(int r, const RankRecord& rec, const Stuck& s,
                                        uint64_t now_ns, double stale_s) const {
  std::string who = fmt::format("rank {} (host {}) never arrived: ", r,
                                static_cast<size_t>(r) < hosts_.size() ? hosts_[r] : "?");
  const uint64_t hb = rec.heartbeat_ns.load();
  const double silent = hb && now_ns > hb ? static_cast<double>(now_ns - hb) * 1e-9 : 0.0;
  const Activity waiting = Activity::unpack(rec.waiting.load());
  const Activity last = Activity::unpack(rec.last.load());
  // How far it got on the stuck group, when that is not already in what it names.
  std::string here;
  const uint64_t key = key_of(s);
  if (!point_to_point(s.op) && !(waiting.op && rec.waiting_group.load() == key) &&
      !(!waiting.op && last.op && last.group == s.group)) {
    const uint64_t n = issued_on(rec, key);
    here = n ? fmt::format(" (#{} its last on group {})", n, group_kind_name(s.group))
             : fmt::format(" (nothing yet on group {})", group_kind_name(s.group));
  }
  if (silent > stale_s)
    return who + fmt::format("not responding for {:.1f} s (stopped or dead), last seen {}{}",
                             silent,
                             waiting.op ? "in " + waiting.text()
                             : last.op  ? "computing after " + last.text()
                                        : std::string("computing"),
                             here);
  if (waiting.op)
    return who + "it is in " + waiting.text() + here + (point_to_point(s.op) ? "" : ": diverged");
  return who + "computing" + (last.op ? ", last " + last.text() : std::string()) + here;
}

RankBoard::Verdict RankBoard::attribute(const Stuck& s, uint64_t now_ns, double stale_s) const {
  std::string line = fmt::format("collective {} on group {} timed out on rank {} after {:.1f} s",
                                 s.op, group_kind_name(s.group), rank_, s.waited_s);
  if (s.seq) line += fmt::format(" (#{} on the group)", s.seq);
  const bool p2p = s.peer >= 0;
  const std::vector<int> ranks =
      p2p ? std::vector<int>{s.peer} : std::vector<int>(s.members.begin(), s.members.end());
  const uint64_t key = key_of(s);
  std::vector<std::string> missing;
  std::vector<int> arrived{rank_}, unseen;
  for (int r : ranks) {
    if (r == rank_) continue;
    const RankRecord* rec = record(r);
    if (rec == nullptr) {
      unseen.push_back(r);
      continue;
    }
    const uint64_t hb = rec->heartbeat_ns.load();
    const bool alive =
        hb == 0 || now_ns <= hb || static_cast<double>(now_ns - hb) * 1e-9 <= stale_s;
    // Issued as far as `s`, and not blocked in another operation under the same number.
    const Activity in = Activity::unpack(rec->waiting.load());
    const bool elsewhere =
        in.op && rec->waiting_group.load() == key && in.seq == s.seq && in.op != op_code(s.op);
    const bool came = !p2p && !elsewhere && issued_on(*rec, key) >= s.seq;
    if (came && alive)
      arrived.push_back(r);
    else
      missing.push_back(describe_missing(r, *rec, s, now_ns, stale_s));
  }
  std::sort(arrived.begin(), arrived.end());
  line += ": ";
  for (const std::string& m : missing) line += m + "; ";
  if (missing.empty()) line += "every member this host can see arrived; ";
  line += rank_list(arrived) + (p2p ? " waiting" : " arrived");
  if (!unseen.empty())
    line += fmt::format("; {} on other hosts, not visible from host {}", rank_list(unseen),
                        hosts_.at(static_cast<size_t>(rank_)));
  return Verdict{line, static_cast<int>(arrived.size()), static_cast<int>(missing.size())};
}

uint64_t RankBoard::key_of(const Stuck& s) const {
  if (s.peer < 0) return group_key(s.group, s.members);
  const int pair[2] = {std::min(rank_, s.peer), std::max(rank_, s.peer)};
  return group_key(s.group, pair);
}

std::atomic<uint32_t>* RankBoard::report_slot(const Stuck& s) const {
  // In the node's first record, the slot of this communicator: every waiting rank of the node
  // scans in the same order, so all take the first slot that is free or already theirs.
  const uint64_t key = key_of(s);
  for (RankRecord::Report& r : node_.front()->reports) {
    uint64_t k = r.group.load();
    if (k == 0 && r.group.compare_exchange_strong(k, key)) k = key;
    if (k == key) return &r.state;
  }
  return &node_.front()->reports[kBoardGroups - 1].state;  // full: share the last one
}

bool RankBoard::claim(const Stuck& s) {
  uint32_t free = 0;
  return report_slot(s)->compare_exchange_strong(free, 1);
}

bool RankBoard::claimed(const Stuck& s) const {
  return report_slot(s)->load() != 0;
}

bool RankBoard::any_printed() const {
  for (const RankRecord::Report& r : node_.front()->reports)
    if (r.state.load() == 2) return true;
  return false;
}

void RankBoard::printed(const Stuck& s) {
  report_slot(s)->store(2);
}

bool RankBoard::wait_printed(const Stuck& s, double max_s) const {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(max_s);
  while (report_slot(s)->load() != 2) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace zt::comm
