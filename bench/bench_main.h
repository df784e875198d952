#pragma once
// Every benchmark's entry point: a bad flag or file ends in one line and exit 2, and any other
// failure in one line and exit 1, as for the zerotron binary — never an uncaught exception.
#include <exception>

#include "src/core/error.h"
#include "src/core/log.h"

namespace zt::bench {

template <typename Body>
int guarded(Body&& body) {
  try {
    return body();
  } catch (const InputError& e) {
    log::error_line(e.what());
    return 2;
  } catch (const std::exception& e) {
    log::error_line(e.what());
    return 1;
  }
}

}  // namespace zt::bench
