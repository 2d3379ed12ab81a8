//===- Cli.cpp - What the weft launcher's commands share ------------------===//
#include "tools/weft/Cli.h"

#include "weft/runtime/FileUtil.h"
#include "weft/runtime/Json.h"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace weft::cli {

void putLine(const char *text, std::FILE *out) {
  std::fputs(text, out);
  if (text[0] && text[std::strlen(text) - 1] != '\n')
    std::fputc('\n', out);
}

int error(int code, const std::string &message, const char *usage) {
  std::fflush(stdout);
  std::fprintf(stderr, "weft: error: %s\n", message.c_str());
  if (usage)
    putLine(usage, stderr);
  return code;
}

bool isHelpOption(const std::string &arg) {
  return arg == "--help" || arg == "-h";
}

int printHelp(const char *text) {
  putLine(text, stdout);
  return kExitOk;
}

bool takeBundleArgument(const std::string &arg, std::string &bundle,
                        const char *usage) {
  if (!bundle.empty()) {
    error(kExitBadInput, "unexpected argument '" + arg + "'", usage);
    return false;
  }
  bundle = arg;
  return true;
}

bool readOptionValue(int argc, char **argv, int &i, const std::string &name,
                     std::string &value, bool &given, const char *usage) {
  const std::string arg = argv[i];
  if (given) {
    error(kExitBadInput, "option '" + name + "' given twice", usage);
    return false;
  }
  if (name.size() < arg.size()) {
    value = arg.substr(name.size() + 1);
  } else {
    if (i + 1 >= argc) {
      error(kExitBadInput, "option '" + arg + "' needs a value", usage);
      return false;
    }
    value = argv[++i];
  }
  if (value.empty()) {
    error(kExitBadInput, "option '" + name + "' needs a value", usage);
    return false;
  }
  given = true;
  return true;
}

bool checkOutputFile(const std::string &output, const std::string &example,
                     std::string &outDir) {
  if (output.back() == '/' || weft::isDirectory(output)) {
    error(kExitBadInput, "output '" + output +
                             "' is a directory; give the file to write, "
                             "e.g. " +
                             example);
    return false;
  }
  outDir = weft::parentPath(output);
  if (!weft::isDirectory(outDir)) {
    error(kExitBadInput, "cannot write output '" + output + "': directory '" +
                             outDir + "' does not exist");
    return false;
  }
  return true;
}

bool readManifest(const std::string &bundle, Manifest &out,
                  std::string &reason) {
  std::string path = weft::joinPath(bundle, "manifest.json");
  if (!weft::isDirectory(bundle)) {
    reason = "'" + bundle + "' is not a directory";
    return false;
  }
  std::string text, err;
  if (!weft::readFile(path, text, err)) {
    reason = err;
    return false;
  }
  weft::JsonValue root;
  if (!weft::parseJson(text, root, err)) {
    reason = path + " is not valid JSON: " + err;
    return false;
  }
  if (!root.isObject()) {
    reason = path + " is not a JSON object";
    return false;
  }
  if (const weft::JsonValue *version = root.get("format_version")) {
    if (!version->isInteger() || version->asInt() != 1) {
      reason = path + " has an unsupported \"format_version\" (this weft "
                      "reads 1)";
      return false;
    }
  }
  const weft::JsonValue *exe = root.get("executable");
  if (!exe || !exe->isString() || exe->asString().empty()) {
    reason = path + " has no \"executable\"";
    return false;
  }
  out.executable = exe->asString();
  if (out.executable.find('/') != std::string::npos || out.executable == "." ||
      out.executable == "..") {
    reason = path + ": \"executable\" must be a file name inside the bundle";
    return false;
  }
  const weft::JsonValue *world = root.get("world_size");
  if (!world || !world->isInteger() || world->asInt() < 1) {
    reason = path + " has no valid \"world_size\"";
    return false;
  }
  out.worldSize = world->asInt();
  if (const weft::JsonValue *target = root.get("target")) {
    if (!target->isString() ||
        (target->asString() != "cpu" && target->asString() != "cuda")) {
      reason = path + ": \"target\" must be \"cpu\" or \"cuda\"";
      return false;
    }
    out.target = target->asString();
  }
  if (const weft::JsonValue *source = root.get("source_model_file"))
    if (source->isString())
      out.sourceModelFile = source->asString();
  return true;
}

bool readBundleManifest(const std::string &bundle, Manifest &manifest,
                        const char *usage) {
  if (bundle.empty()) {
    error(kExitBadInput, "missing BUNDLE", usage);
    return false;
  }
  std::string reason;
  if (readManifest(bundle, manifest, reason))
    return true;
  error(kExitBadInput, "not a weft bundle: " + bundle + " (" + reason + ")");
  return false;
}

std::string absolutePath(const std::string &path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf))
    return buf;
  return path;
}

bool bundleExecutable(const std::string &bundle, const std::string &bundleAbs,
                      const Manifest &manifest, std::string &exe) {
  exe = weft::joinPath(bundleAbs, manifest.executable);
  if (::access(exe.c_str(), X_OK) == 0)
    return true;
  error(kExitBadInput, "not a weft bundle: " + bundle + " (its executable '" +
                           manifest.executable +
                           "' is missing or not executable)");
  return false;
}

} // namespace weft::cli
