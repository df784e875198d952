#include "src/core/log.h"

#include <cstdio>

namespace zt::log {
namespace {
int g_rank = 0;
int g_world = 1;
}  // namespace

void set_rank(int r, int world) {
  g_rank = r;
  g_world = world;
}
int rank() {
  return g_rank;
}

void line(std::string_view text) {
  if (g_rank != 0) return;
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

void any_rank(std::string_view text) {
  std::fprintf(stdout, "[rank %d] %.*s\n", g_rank, static_cast<int>(text.size()), text.data());
  std::fflush(stdout);
}

void error_line(std::string_view text) {
  if (g_world > 1)
    std::fprintf(stderr, "zerotron: error: rank %d: %.*s\n", g_rank, static_cast<int>(text.size()),
                 text.data());
  else
    std::fprintf(stderr, "zerotron: error: %.*s\n", static_cast<int>(text.size()), text.data());
  std::fflush(stderr);
}

void warning_line(std::string_view text) {
  if (g_world > 1)
    std::fprintf(stdout, "zerotron: warning: rank %d: %.*s\n", g_rank,
                 static_cast<int>(text.size()), text.data());
  else
    std::fprintf(stdout, "zerotron: warning: %.*s\n", static_cast<int>(text.size()), text.data());
  std::fflush(stdout);
}

}  // namespace zt::log
