#pragma once
// Console logging. Every line goes to stdout from rank 0 only unless `all_ranks` is asked for,
// so an 8-rank job prints one log, not eight.
#include <fmt/format.h>

#include <string_view>

namespace zt::log {

void set_rank(int rank, int world);
int rank();
void line(std::string_view text);        // rank 0 only
void any_rank(std::string_view text);    // every rank, prefixed with [rank r]
void error_line(std::string_view text);  // stderr, every rank: "zerotron: error: ..."
// stdout, the calling rank: "zerotron: warning: [rank r: ]..." (a line one rank reports for all).
void warning_line(std::string_view text);

template <typename... A>
void info(fmt::format_string<A...> f, A&&... a) {
  line(fmt::format(f, std::forward<A>(a)...));
}

}  // namespace zt::log
