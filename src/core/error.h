#pragma once
// Two kinds of failure. InputError is the user's (bad flag, bad file): the program prints
// "zerotron: error: <what>" and exits 2. Error is ours or the system's: it names where it happened.
#include <fmt/format.h>

#include <source_location>
#include <stdexcept>
#include <string>

namespace zt {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InputError : public Error {
 public:
  using Error::Error;
};

// Training cannot usefully go on (fp16 gradients that keep overflowing, a diverged run). Every
// rank reaches it at the same step from the same reduced numbers, so the job ends cleanly: one
// line, printed by `reporter` (the lowest rank that saw the cause), and exit 1.
class RunStopped : public Error {
 public:
  explicit RunStopped(const std::string& what, int reporter = 0)
      : Error(what), reporter_(reporter) {}
  int reporter() const { return reporter_; }

 private:
  int reporter_;
};

// The model states are not finite: the run diverged. A run that rewinds on divergence catches it
// (it stops every other run as RunStopped).
class Diverged : public RunStopped {
 public:
  using RunStopped::RunStopped;
};

[[noreturn]] void fail_check(const char* cond, const std::string& msg, std::source_location loc);

}  // namespace zt

// ZT_CHECK(cond, fmt, args...) throws zt::Error naming the condition, the message and file:line.
#define ZT_CHECK(cond, ...)                                                               \
  do {                                                                                    \
    if (!(cond)) [[unlikely]]                                                             \
      ::zt::fail_check(#cond, fmt::format(__VA_ARGS__), std::source_location::current()); \
  } while (0)

// ZT_REQUIRE(cond, fmt, args...) throws zt::InputError: for conditions on user input.
#define ZT_REQUIRE(cond, ...)                           \
  do {                                                  \
    if (!(cond)) [[unlikely]]                           \
      throw ::zt::InputError(fmt::format(__VA_ARGS__)); \
  } while (0)
