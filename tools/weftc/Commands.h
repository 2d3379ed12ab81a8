//===- Commands.h - weftc's subcommands ---------------------------*- C++
//-*-===//
#ifndef WEFT_TOOLS_WEFTC_COMMANDS_H
#define WEFT_TOOLS_WEFTC_COMMANDS_H

namespace weft {

/// Exit codes of every weft tool (DESIGN.md).
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitBadInput = 2;

/// Each subcommand gets argv with argv[0] = "weftc <name>".
int runImportCommand(int argc, char **argv);
int runCompileCommand(int argc, char **argv);
int runPlanCommand(int argc, char **argv);

} // namespace weft

#endif // WEFT_TOOLS_WEFTC_COMMANDS_H
