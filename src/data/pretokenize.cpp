#include "src/data/pretokenize.h"

#include "src/data/unicode.h"

namespace zt::data {
namespace {

constexpr std::string_view kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

CharClass class_at(std::string_view t, size_t pos, uint32_t& len) {
  const CodePoint c = decode_utf8(t, pos);
  len = c.len;
  return char_class(c.cp);
}

// The end of the run of class `cls` starting at pos.
size_t run_end(std::string_view t, size_t pos, CharClass cls) {
  while (pos < t.size()) {
    uint32_t len;
    if (class_at(t, pos, len) != cls) break;
    pos += len;
  }
  return pos;
}

// Length of a contraction ('s 't 're 've 'm 'll 'd) at pos, or 0: lowercase only as GPT-2's
// regex, or case-insensitive as (?i:...).
size_t contraction(std::string_view t, size_t pos, bool fold) {
  if (pos + 1 >= t.size()) return 0;
  auto low = [&](char c) { return fold && c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
  const char a = low(t[pos + 1]);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (fold && t.substr(pos + 1, 2) == "\xC5\xBF") return 3;  // U+017F folds to 's'
  if (pos + 2 >= t.size()) return 0;
  const char b = low(t[pos + 2]);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// The whitespace run at pos: `\s+(?!\S)` takes it but gives back its last code point when a
// non-space follows (that space then prefixes the next word); a lone space before a non-space
// falls through to `\s+`, which takes it alone.
size_t space_run(std::string_view t, size_t pos) {
  size_t end = pos, last = pos, count = 0;
  while (end < t.size()) {
    const CodePoint c = decode_utf8(t, end);
    if (char_class(c.cp) != kSpace) break;
    last = end;
    end += c.len;
    ++count;
  }
  if (end == t.size() || count == 1) return end;
  return last;
}

size_t next_gpt2(std::string_view t, size_t start) {
  const size_t n = t.size();
  if (t[start] == '\'') {
    if (size_t len = contraction(t, start, false)) return start + len;
  }
  // ` ?X+` for X in {letters, numbers, other}: an optional single ASCII space then a run of one
  // class. A space followed by whitespace (or nothing) matches none of them.
  size_t run = start;
  if (t[start] == ' ' && start + 1 < n) run = start + 1;
  uint32_t len;
  const CharClass cls = class_at(t, run, len);
  if (cls != kSpace) return run_end(t, run + len, cls);
  return space_run(t, start);
}

size_t next_cl100k(std::string_view t, size_t start, size_t max_digits) {
  const size_t n = t.size();
  const char c0 = t[start];
  // (?i:'s|'t|'re|'ve|'m|'ll|'d)
  if (c0 == '\'') {
    if (size_t len = contraction(t, start, true)) return start + len;
  }
  uint32_t len0;
  const CharClass cls0 = class_at(t, start, len0);
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (cls0 == kLetter) return run_end(t, start + len0, kLetter);
  if (cls0 != kNumber && c0 != '\r' && c0 != '\n' && start + len0 < n) {
    uint32_t len1;
    if (class_at(t, start + len0, len1) == kLetter) return run_end(t, start + len0 + len1, kLetter);
  }
  // \p{N}{1,3} (or \p{N})
  if (cls0 == kNumber) {
    size_t end = start + len0;
    for (size_t k = 1; k < max_digits && end < n; ++k) {
      uint32_t len;
      if (class_at(t, end, len) != kNumber) break;
      end += len;
    }
    return end;
  }
  //  ?[^\s\p{L}\p{N}]+[\r\n]*
  size_t run = start;
  uint32_t len = len0;
  CharClass cls = cls0;
  if (c0 == ' ' && start + 1 < n) {
    uint32_t l;
    if (class_at(t, start + 1, l) == kOther) {
      run = start + 1;
      len = l;
      cls = kOther;
    }
  }
  if (cls == kOther) {
    size_t end = run_end(t, run + len, kOther);
    while (end < n && (t[end] == '\r' || t[end] == '\n')) ++end;
    return end;
  }
  // Whitespace at start. \s*[\r\n]+ ends after the run's last \r or \n, if it has one.
  size_t end = start, after_newline = 0;
  while (end < n) {
    uint32_t l;
    if (class_at(t, end, l) != kSpace) break;
    if (t[end] == '\r' || t[end] == '\n') after_newline = end + 1;
    end += l;
  }
  if (after_newline) return after_newline;
  // \s+(?!\S)|\s+
  return space_run(t, start);
}

size_t next_digits(std::string_view t, size_t start, bool individual) {
  uint32_t len;
  const CharClass cls = class_at(t, start, len);
  if (cls == kNumber && individual) return start + len;
  // A run of numbers, or of anything else.
  size_t end = start + len;
  while (end < t.size()) {
    uint32_t l;
    if ((class_at(t, end, l) == kNumber) != (cls == kNumber)) break;
    end += l;
  }
  return end;
}

}  // namespace

size_t next_piece(SplitRule rule, std::string_view text, size_t pos) {
  switch (rule) {
    case SplitRule::kGpt2:
      return next_gpt2(text, pos);
    case SplitRule::kLlama3:
      return next_cl100k(text, pos, 3);
    case SplitRule::kQwen2:
      return next_cl100k(text, pos, 1);
    case SplitRule::kDigits:
      return next_digits(text, pos, true);
    case SplitRule::kDigitRuns:
      return next_digits(text, pos, false);
  }
  return text.size();
}

std::optional<SplitRule> split_rule_of_regex(std::string_view pattern) {
  if (pattern == kGpt2Regex) return SplitRule::kGpt2;
  if (pattern == kLlama3Regex) return SplitRule::kLlama3;
  if (pattern == kQwen2Regex) return SplitRule::kQwen2;
  return std::nullopt;
}

std::vector<std::string_view> pretokenize(std::string_view text, SplitRule rule) {
  std::vector<std::string_view> out;
  Pretokenizer p(text, rule);
  std::string_view piece;
  while (p.next(piece)) out.push_back(piece);
  return out;
}

}  // namespace zt::data
