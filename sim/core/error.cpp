#include "sim/core/error.h"

#include <cstdio>
#include <cstdlib>

namespace warpsim {

void assertion_failed(const char* expr, const char* file, int line, const std::string& msg) {
  std::fprintf(stderr, "warpsim: internal error: %s:%d: assertion '%s' failed: %s\n", file, line, expr,
               msg.c_str());
  std::abort();
}

}  // namespace warpsim
