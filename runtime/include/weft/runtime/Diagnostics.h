//===- Diagnostics.h - Fatal errors of the runtime
//-------------------------===//
//
// The runtime reports a problem with one line on stderr, "weft: error: ...",
// naming the file, tensor or kernel involved, and exits. Exit code 2 means bad
// usage or bad input, 1 anything else (DESIGN.md).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_DIAGNOSTICS_H
#define WEFT_RUNTIME_DIAGNOSTICS_H

namespace weft {

constexpr int kExitBadInput = 2;
constexpr int kExitFailure = 1;

/// Prints "weft: error: <message>" to stderr and exits with `exitCode`.
[[noreturn]] void fatal(int exitCode, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

} // namespace weft

#endif // WEFT_RUNTIME_DIAGNOSTICS_H
