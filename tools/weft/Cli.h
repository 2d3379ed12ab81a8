//===- Cli.h - What the weft launcher's commands share --------------------===//
//
// The `weft` launcher (weft.cpp: run, train, calibrate, relink and main;
// ExportCommand.cpp: export) reports errors, reads its options and reads
// bundle manifests the same way in every command; these are the pieces
// they share.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFT_CLI_H
#define WEFT_TOOLS_WEFT_CLI_H

#include <cstdint>
#include <cstdio>
#include <string>

namespace weft::cli {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitBadInput = 2;

/// Writes `text` to `out`, ending it with a newline.
void putLine(const char *text, std::FILE *out);

/// Prints "weft: error: `message`" on stderr (after flushing stdout), then
/// `usage` when given, and returns `code`.
int error(int code, const std::string &message, const char *usage = nullptr);

/// Whether `arg` asks for a command's help (--help or -h).
bool isHelpOption(const std::string &arg);

/// Prints a command's help `text` on stdout.
int printHelp(const char *text);

/// Takes `arg` as the command's BUNDLE argument; on a second one prints the
/// error and returns false.
bool takeBundleArgument(const std::string &arg, std::string &bundle,
                        const char *usage);

/// Reads the value of option `name` at argv[i] (NAME=VALUE, or NAME VALUE
/// advancing i past it), which may be given once (`given`) and not empty;
/// on bad usage prints the error and returns false.
bool readOptionValue(int argc, char **argv, int &i, const std::string &name,
                     std::string &value, bool &given, const char *usage);

/// Checks that `output` names a file in an existing directory, its
/// directory into `outDir` (`example`: a file to suggest when `output` is a
/// directory); on failure prints the error and returns false.
bool checkOutputFile(const std::string &output, const std::string &example,
                     std::string &outDir);

/// What weft reads of a bundle's manifest.json.
struct Manifest {
  std::string executable;
  std::string target = "cpu"; ///< "target" (cpu or cuda)
  int64_t worldSize = 1;
  std::string sourceModelFile; ///< "" when the bundle has none
};

/// Reads BUNDLE/manifest.json; on failure returns false with the reason.
bool readManifest(const std::string &bundle, Manifest &out,
                  std::string &reason);

/// Reads the manifest of BUNDLE (the command's argument, "" when not
/// given); on failure prints the error (with `usage` when BUNDLE is
/// missing) and returns false.
bool readBundleManifest(const std::string &bundle, Manifest &manifest,
                        const char *usage);

/// `path` resolved to an absolute path (realpath), or `path` itself when it
/// cannot be resolved.
std::string absolutePath(const std::string &path);

/// BUNDLE's executable (absolute: `bundleAbs` is BUNDLE's absolute path);
/// when it is missing prints the error and returns false.
bool bundleExecutable(const std::string &bundle, const std::string &bundleAbs,
                      const Manifest &manifest, std::string &exe);

/// `weft export BUNDLE --checkpoint DIR -o TRAINED.onnx` (ExportCommand.cpp);
/// `argc`/`argv` are the arguments after "export".
int exportCommand(int argc, char **argv);

} // namespace weft::cli

#endif // WEFT_TOOLS_WEFT_CLI_H
