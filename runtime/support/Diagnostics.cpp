#include "weft/runtime/Diagnostics.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace weft {

void fatal(int exitCode, const char *fmt, ...) {
  std::fflush(stdout);
  std::fputs("weft: error: ", stderr);
  va_list args;
  va_start(args, fmt);
  std::vfprintf(stderr, fmt, args);
  va_end(args);
  std::fputc('\n', stderr);
  std::fflush(stderr);
  std::exit(exitCode);
}

} // namespace weft
