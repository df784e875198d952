#include "src/data/document_reader.h"

#include <nlohmann/json.hpp>

#include "src/core/error.h"
#include "src/core/input_file.h"
#include "src/core/json_input.h"

namespace zt::data {

InputFormat format_from_extension(const std::string& path) {
  auto ends = [&](std::string_view s) { return path.size() >= s.size() && path.ends_with(s); };
  return ends(".json") || ends(".jsonl") ? InputFormat::kJsonLines : InputFormat::kText;
}

DocumentReader::DocumentReader(const std::string& path, InputFormat format,
                               std::vector<std::string> keys)
    : DocumentReader(std::string_view{}, path, format, std::move(keys)) {
  file_ = MappedFile(path);
  data_ =
      std::string_view(reinterpret_cast<const char*>(file_.bytes().data()), file_.bytes().size());
}

DocumentReader::DocumentReader(std::string_view contents, std::string name, InputFormat format,
                               std::vector<std::string> keys)
    : name_(std::move(name)), format_(format), keys_(std::move(keys)), data_(contents) {
  ZT_REQUIRE(format_ == InputFormat::kText || !keys_.empty(), "--json-keys needs a key");
}

// The line at pos without its '\n' (or "\r\n"); advances pos past it.
std::string_view DocumentReader::line_at(size_t& pos) const {
  size_t end = data_.find('\n', pos);
  if (end == std::string_view::npos) end = data_.size();
  std::string_view line = data_.substr(pos, end - pos);
  pos = end < data_.size() ? end + 1 : end;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

bool DocumentReader::next(std::vector<std::string>& fields) {
  if (format_ == InputFormat::kText) {
    fields.resize(1);
    return next_text(fields[0]);
  }
  fields.resize(keys_.size());
  return next_json(fields);
}

bool DocumentReader::next_text(std::string& doc) {
  auto blank = [](std::string_view l) {
    return l.find_first_not_of(" \t\r\f\v") == std::string_view::npos;
  };
  doc.clear();
  while (pos_ < data_.size()) {
    const std::string_view line = line_at(pos_);
    ++line_no_;
    if (blank(line)) {
      if (!doc.empty()) return true;
      continue;
    }
    if (!doc.empty()) doc += '\n';
    doc += line;
  }
  return !doc.empty();
}

bool DocumentReader::next_json(std::vector<std::string>& fields) {
  while (pos_ < data_.size()) {
    const std::string_view line = line_at(pos_);
    ++line_no_;
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    // Documents may be long (a line is the bound) but not deep: metadata nests a few levels.
    const nlohmann::json j =
        parse_json_input(line, fmt::format("{}:{}", name_, line_no_),
                         JsonLimits{.max_depth = 32, .max_string = line.size()});
    ZT_REQUIRE(j.is_object(), "{}:{}: expected a JSON object per line, got {}", name_, line_no_,
               json_type_name(j));
    for (size_t k = 0; k < keys_.size(); ++k) {
      auto it = j.find(keys_[k]);
      ZT_REQUIRE(it != j.end() && it->is_string(),
                 "{}:{}: no string field '{}' (set the field name with --json-keys)", name_,
                 line_no_, excerpt(keys_[k]));
      fields[k] = it->get<std::string>();
    }
    return true;
  }
  return false;
}

}  // namespace zt::data
