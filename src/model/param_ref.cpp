#include "src/model/param_ref.h"

namespace zt {

ParamRef ParamRef::of(const ParamLayout& layout, const std::string& name) {
  const ParamSpec& p = layout.find(name);
  const int64_t begin = layout.blocks()[static_cast<size_t>(p.block)].begin;
  return {p.block, p.offset - begin, p.rows(), p.row_len(), p.expert_rows};
}

ParamRef ParamRef::maybe(const ParamLayout& layout, const std::string& name) {
  for (const auto& p : layout.params())
    if (p.name == name) return of(layout, name);
  return {};
}

}  // namespace zt
