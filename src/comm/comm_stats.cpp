#include "src/comm/comm_stats.h"

#include <fmt/format.h>

namespace zt::comm {

std::string_view group_kind_name(GroupKind g) {
  switch (g) {
    case GroupKind::World:
      return "world";
    case GroupKind::Tp:
      return "tp";
    case GroupKind::Dp:
      return "dp";
    case GroupKind::Pp:
      return "pp";
    case GroupKind::Mp:
      return "mp";
    case GroupKind::Cp:
      return "cp";
    case GroupKind::Ep:
      return "ep";
    case GroupKind::Edp:
      return "edp";
    case GroupKind::kCount:
      break;
  }
  return "?";
}

std::string_view comm_op_name(CommOp op) {
  switch (op) {
    case CommOp::AllReduce:
      return "all_reduce";
    case CommOp::ReduceScatter:
      return "reduce_scatter";
    case CommOp::AllGather:
      return "all_gather";
    case CommOp::Broadcast:
      return "broadcast";
    case CommOp::Send:
      return "send";
    case CommOp::Recv:
      return "recv";
    case CommOp::Barrier:
      return "barrier";
    case CommOp::AllToAll:
      return "all_to_all";
    case CommOp::kCount:
      break;
  }
  return "?";
}

OpCounters& OpCounters::operator+=(const OpCounters& o) {
  calls += o.calls;
  elements += o.elements;
  bytes += o.bytes;
  wire_bytes += o.wire_bytes;
  return *this;
}

OpCounters& OpCounters::operator-=(const OpCounters& o) {
  calls -= o.calls;
  elements -= o.elements;
  bytes -= o.bytes;
  wire_bytes -= o.wire_bytes;
  return *this;
}

OpCounters CommSnapshot::group(GroupKind g) const {
  OpCounters s;
  for (const auto& c : ops[static_cast<size_t>(g)]) s += c;
  return s;
}

OpCounters CommSnapshot::total() const {
  OpCounters s;
  for (size_t g = 0; g < kNumGroupKinds; ++g) s += group(static_cast<GroupKind>(g));
  return s;
}

CommSnapshot& CommSnapshot::operator-=(const CommSnapshot& o) {
  for (size_t g = 0; g < kNumGroupKinds; ++g)
    for (size_t k = 0; k < kNumCommOps; ++k) ops[g][k] -= o.ops[g][k];
  return *this;
}

std::string CommSnapshot::to_json() const {
  std::string s = "{";
  for (size_t g = 0; g < kNumGroupKinds; ++g) {
    const auto kind = static_cast<GroupKind>(g);
    const OpCounters t = group(kind);
    if (g) s += ',';
    s += fmt::format(R"("{}":{{"calls":{},"elements":{},"bytes":{},"wire_bytes":{:.0f})",
                     group_kind_name(kind), t.calls, t.elements, t.bytes, t.wire_bytes);
    for (size_t k = 0; k < kNumCommOps; ++k) {
      const OpCounters& c = ops[g][k];
      if (c.calls == 0) continue;
      s += fmt::format(R"(,"{}":{{"calls":{},"elements":{},"bytes":{},"wire_bytes":{:.0f}}})",
                       comm_op_name(static_cast<CommOp>(k)), c.calls, c.elements, c.bytes,
                       c.wire_bytes);
    }
    s += '}';
  }
  s += '}';
  return s;
}

OpCounters op_cost(CommOp op, uint64_t elements, size_t elem_size, int group_size) {
  OpCounters c;
  c.calls = 1;
  c.elements = elements;
  const uint64_t b = elements * elem_size;
  const double n = group_size;
  const double ring = group_size > 0 ? (n - 1.0) / n : 0.0;
  if (group_size <= 1 && op != CommOp::Send && op != CommOp::Recv) {
    return c;  // a group of one moves nothing
  }
  switch (op) {
    case CommOp::AllReduce:
      c.bytes = 2 * b;
      c.wire_bytes = 2.0 * ring * static_cast<double>(b);
      break;
    case CommOp::ReduceScatter:
    case CommOp::AllGather:
      c.bytes = b;
      c.wire_bytes = ring * static_cast<double>(b);
      break;
    case CommOp::Broadcast:
    case CommOp::Send:
    case CommOp::Recv:
      c.bytes = b;
      c.wire_bytes = static_cast<double>(b);
      break;
    case CommOp::AllToAll:
      c.bytes = b / elem_size / static_cast<uint64_t>(group_size) *
                static_cast<uint64_t>(group_size - 1) * elem_size;
      c.wire_bytes = static_cast<double>(c.bytes);
      break;
    case CommOp::Barrier:
    case CommOp::kCount:
      c.elements = 0;
      break;
  }
  return c;
}

void CommStats::record(GroupKind g, CommOp op, uint64_t elements, size_t elem_size,
                       int group_size) {
  now_.ops[static_cast<size_t>(g)][static_cast<size_t>(op)] +=
      op_cost(op, elements, elem_size, group_size);
}

void CommStats::record(GroupKind g, CommOp op, const OpCounters& cost) {
  now_.ops[static_cast<size_t>(g)][static_cast<size_t>(op)] += cost;
}

OpCounters all_to_all_v_cost(uint64_t elements, uint64_t leaving, size_t elem_size) {
  const uint64_t bytes = leaving * elem_size;
  return OpCounters{1, elements, bytes, static_cast<double>(bytes)};
}

}  // namespace zt::comm
