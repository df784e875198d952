#pragma once
// Reads the documents of a prepare-data input: plain text (documents are blocks separated by
// one or more blank lines; a block's lines are joined with '\n', the separating blank lines are
// dropped) or JSON lines (one object per non-empty line; each requested key must be a string).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/data/mapped_file.h"

namespace zt::data {

enum class InputFormat { kText, kJsonLines };

// ".json" / ".jsonl" mean JSON lines, anything else plain text.
InputFormat format_from_extension(const std::string& path);

class DocumentReader {
 public:
  // `keys` name the JSON fields to read (ignored for text, which has one field per document).
  DocumentReader(const std::string& path, InputFormat format, std::vector<std::string> keys);
  // Over contents already in memory, which must outlive the reader; `name` labels errors as the
  // path would. The file constructor maps the file and reads it through this same parser.
  DocumentReader(std::string_view contents, std::string name, InputFormat format,
                 std::vector<std::string> keys);

  // Fills fields[k] with key k's text of the next document; false at the end of the input.
  // Empty documents (a text block of whitespace only) are skipped. Throws InputError with
  // path:line on a malformed JSON line or a missing key.
  bool next(std::vector<std::string>& fields);

  size_t bytes_total() const { return data_.size(); }
  size_t bytes_read() const { return pos_; }

 private:
  bool next_text(std::string& doc);
  bool next_json(std::vector<std::string>& fields);
  std::string_view line_at(size_t& pos) const;

  MappedFile file_;  // empty when reading contents from memory
  std::string name_;
  InputFormat format_;
  std::vector<std::string> keys_;
  std::string_view data_;
  size_t pos_ = 0;
  size_t line_no_ = 0;
};

}  // namespace zt::data
