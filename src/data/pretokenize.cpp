#include "src/data/pretokenize.h"

#include "src/data/unicode.h"

namespace zt::data {
namespace {

// Length of a contraction ('s 't 're 've 'm 'll 'd, lowercase only, as in GPT-2) at pos, or 0.
size_t contraction(std::string_view t, size_t pos) {
  if (pos + 1 >= t.size()) return 0;
  const char a = t[pos + 1];
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (pos + 2 >= t.size()) return 0;
  const char b = t[pos + 2];
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

}  // namespace

bool Pretokenizer::next(std::string_view& piece) {
  const std::string_view t = text_;
  const size_t n = t.size();
  const size_t start = pos_;
  if (start >= n) return false;
  auto emit = [&](size_t end) {
    piece = t.substr(start, end - start);
    pos_ = end;
    return true;
  };
  if (t[start] == '\'') {
    if (size_t len = contraction(t, start)) return emit(start + len);
  }
  // ` ?X+` for X in {letters, numbers, other}: an optional single ASCII space then a run of one
  // class. A space followed by whitespace (or nothing) matches none of them.
  size_t run = start;
  if (t[start] == ' ' && start + 1 < n) run = start + 1;
  const CodePoint first = decode_utf8(t, run);
  const CharClass cls = char_class(first.cp);
  if (cls != kSpace) {
    size_t end = run + first.len;
    while (end < n) {
      const CodePoint c = decode_utf8(t, end);
      if (char_class(c.cp) != cls) break;
      end += c.len;
    }
    return emit(end);
  }
  // Whitespace at start. `\s+(?!\S)` takes the run but gives back its last code point when a
  // non-space follows (that space then prefixes the next word); a lone space before a non-space
  // falls through to `\s+`, which takes it alone.
  size_t end = start, last = start, count = 0;
  while (end < n) {
    const CodePoint c = decode_utf8(t, end);
    if (char_class(c.cp) != kSpace) break;
    last = end;
    end += c.len;
    ++count;
  }
  if (end == n || count == 1) return emit(end);
  return emit(last);
}

std::vector<std::string_view> pretokenize(std::string_view text) {
  std::vector<std::string_view> out;
  Pretokenizer p(text);
  std::string_view piece;
  while (p.next(piece)) out.push_back(piece);
  return out;
}

}  // namespace zt::data
