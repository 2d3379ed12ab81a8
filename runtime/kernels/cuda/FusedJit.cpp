//===- FusedJit.cpp - Fused elementwise kernels compiled at run time ------===//

#include "runtime/kernels/cuda/FusedJit.h"

#include "weft/runtime/FileUtil.h"
#include "weft/runtime/Sha256.h"

#include <nvrtc.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace weft {
namespace cuda {
namespace {

/// The headers a generated source includes, as weft was built with them
/// (FusedJitHeaders.inc, written by EmbedHeaders.cmake): name, text.
const char *const kHeaders[][2] = {
#include "runtime/kernels/cuda/FusedJitHeaders.inc"
};

/// The C++ library names that RtcStd.cuh stands in for under NVRTC.
const char *const kStdNames[] = {"cstdint", "stdint.h", "limits", "type_traits",
                                 "string.h"};

const char *typeName(uint8_t dtype) {
  switch (dtype) {
  case WEFT_F32:
    return "float";
  case WEFT_BF16:
    return "BF16";
  case WEFT_F16:
    return "F16";
  default:
    return nullptr;
  }
}

const char *accessName(uint8_t access) {
  switch (static_cast<cpu::FusedAccess>(access)) {
  case cpu::FusedAccess::Full:
    return "kAccessFull";
  case cpu::FusedAccess::Scalar:
    return "kAccessScalar";
  case cpu::FusedAccess::Suffix:
    return "kAccessSuffix";
  case cpu::FusedAccess::General:
    return "kAccessGeneral";
  }
  return nullptr;
}

/// The functor of WeftBinaryOp `op` and whether it runs element by element
/// in a loop (pow: one copy of a large function), as the interpreter does.
const char *binaryName(int op, bool &rotating) {
  rotating = false;
  switch (op) {
  case WEFT_BINARY_ADD:
    return "AddRn";
  case WEFT_BINARY_SUB:
    return "SubRn";
  case WEFT_BINARY_MUL:
    return "MulRn";
  case WEFT_BINARY_DIV:
    return "DivRn";
  case WEFT_BINARY_POW:
    rotating = true;
    return "PowOp";
  case WEFT_BINARY_MAX:
    return "MaxOp";
  case WEFT_BINARY_MIN:
    return "MinOp";
  default:
    return nullptr;
  }
}

/// The unary codes the interpreter runs (kMicro codes 0..7).
bool knownUnary(int code) {
  switch (code) {
  case WEFT_UNARY_NEG:
  case WEFT_UNARY_SQRT:
  case WEFT_UNARY_EXP:
  case WEFT_UNARY_LOG:
  case WEFT_UNARY_TANH:
  case WEFT_UNARY_ERF:
  case WEFT_UNARY_RELU:
  case WEFT_UNARY_SIGMOID:
    return true;
  default:
    return false;
  }
}

std::string slotName(int s) { return "s" + std::to_string(s); }

/// One micro-op as the interpreter runs it: spill, input, code, rounding.
/// False when it is not one the generator knows.
bool emitOp(const FusedJitProgram &prog, const FusedMicroOp &m,
            std::string &out) {
  auto line = [&](const std::string &s) { out += "    " + s + ";\n"; };
  if (m.spill) {
    if (m.spillSlot >= prog.numSlots)
      return false;
    line("copyAll(" + slotName(m.spillSlot) + ", acc)");
  }
  switch (m.source) {
  case kSourceNone:
    break;
  case kSourceAcc:
    line("copyAll(t, acc)");
    break;
  case kSourceImm:
    if (m.index >= WEFT_FUSED_MAX_REGISTERS)
      return false;
    line("fillAll(t, p.imm[" + std::to_string(m.index) + "])");
    break;
  case kSourceSlot:
    if (m.index >= prog.numSlots)
      return false;
    line("copyAll(t, " + slotName(m.index) + ")");
    break;
  case kSourceOperand: {
    if (m.index >= prog.operandType.size())
      return false;
    const char *type = typeName(prog.operandType[m.index]);
    const char *access = accessName(prog.operandAccess[m.index]);
    if (!type || !access)
      return false;
    line(std::string("loadAs<") + type + ", " + access + ">(p.operand[" +
         std::to_string(m.index) + "], base, whole, numel, t)");
    break;
  }
  default:
    return false;
  }
  const int code = m.code;
  bool rotating = false;
  if (code < kMicroBinary) {
    if (!knownUnary(code))
      return false;
    line("unaryAll<" + std::to_string(code) + ">(acc)");
  } else if (code < kMicroPowScalar) {
    const bool reversed = code >= kMicroBinaryRev;
    const char *op = binaryName(
        code - (reversed ? kMicroBinaryRev : kMicroBinary), rotating);
    if (!op)
      return false;
    line(std::string(rotating ? "binaryRotating<" : "binaryAll<") +
         (reversed ? "true" : "false") + ">(acc, t, " + op + "{})");
  } else if (code == kMicroPowScalar || code == kMicroPowScalarRev) {
    line(std::string("binaryRotating<") +
         (code == kMicroPowScalarRev ? "true" : "false") +
         ">(acc, t, PowScalar{})");
  } else if (code == kMicroMove) {
    line("copyAll(acc, t)");
  } else if (code == kMicroStore) {
    if (m.result >= prog.resultType.size())
      return false;
    const char *type = typeName(prog.resultType[m.result]);
    if (!type)
      return false;
    line(std::string("storeAs<") + type + ">(p.result[" +
         std::to_string(m.result) + "], base, whole, numel, t)");
  } else if (code != kMicroKeep) {
    return false;
  }
  if (m.round == WEFT_BF16 || m.round == WEFT_F16)
    line(std::string("roundAll<") +
         (m.round == WEFT_BF16 ? "WEFT_BF16" : "WEFT_F16") + ">(acc)");
  else if (m.round != WEFT_F32)
    return false;
  return true;
}

} // namespace

std::string FusedJitProgram::key() const {
  std::string k;
  auto put = [&](uint32_t v) {
    k.append(reinterpret_cast<const char *>(&v), sizeof v);
  };
  put(static_cast<uint32_t>(ops.size()));
  for (const FusedMicroOp &m : ops) {
    const uint8_t b[7] = {m.code,  m.source,    m.index, m.round,
                          m.spill, m.spillSlot, m.result};
    k.append(reinterpret_cast<const char *>(b), sizeof b);
  }
  put(static_cast<uint32_t>(numSlots));
  put(static_cast<uint32_t>(operandType.size()));
  k.append(operandType.begin(), operandType.end());
  k.append(operandAccess.begin(), operandAccess.end());
  put(static_cast<uint32_t>(resultType.size()));
  k.append(resultType.begin(), resultType.end());
  put(index64 ? 1u : 0u);
  put(static_cast<uint32_t>(block));
  return k;
}

std::string fusedJitSource(const FusedJitProgram &prog) {
  if (prog.operandType.size() != prog.operandAccess.size() ||
      prog.operandType.size() > WEFT_FUSED_MAX_OPERANDS ||
      prog.resultType.size() > WEFT_FUSED_MAX_RESULTS || prog.numSlots < 0 ||
      prog.ops.size() > static_cast<size_t>(kMaxFusedMicroOps) ||
      prog.block <= 0)
    return "";
  const std::string index = prog.index64 ? "int64_t" : "uint32_t";
  const std::string div = prog.index64 ? "Divider64" : "IntDivider";
  std::string s;
  s += "// A fused elementwise kernel weft generated (FusedJit.h).\n";
  s += "#include \"runtime/kernels/cuda/FusedDevice.cuh\"\n\n";
  s += "using namespace weft::cuda::fused;\n";
  s += "using weft::cuda::data::" + div + ";\n\n";
  s += "extern \"C\" __global__ void __launch_bounds__(" +
       std::to_string(prog.block) + ")\n";
  s += std::string(kFusedJitKernel) + "(const __grid_constant__ FusedParams<" +
       index + ", " + div + "> p) {\n";
  s += "  using Index = " + index + ";\n";
  s += "  const Index numel = p.numel;\n";
  s += "  forEachGroup(p, [&](Index base, bool whole) {\n";
  s += "    float acc[V] = {}, t[V];\n";
  for (int k = 0; k < prog.numSlots; ++k)
    s += "    float " + slotName(k) + "[V];\n";
  for (size_t j = 0; j < prog.ops.size(); ++j) {
    s += "    // micro-op " + std::to_string(j) + "\n";
    if (!emitOp(prog, prog.ops[j], s))
      return "";
  }
  s += "  });\n}\n";
  return s;
}

bool fusedJitCompile(const std::string &source, int arch,
                     std::vector<char> &cubin, std::string &log,
                     const std::vector<std::string> &extra) {
  std::vector<const char *> texts, names;
  for (const auto &h : kHeaders) {
    names.push_back(h[0]);
    texts.push_back(h[1]);
  }
  const char *stdText = nullptr;
  for (const auto &h : kHeaders)
    if (std::strcmp(h[0], "runtime/kernels/cuda/RtcStd.cuh") == 0)
      stdText = h[1];
  if (!stdText) {
    log = "RtcStd.cuh is not among the embedded headers";
    return false;
  }
  for (const char *name : kStdNames) {
    names.push_back(name);
    texts.push_back(stdText);
  }
  nvrtcProgram program = nullptr;
  nvrtcResult r = nvrtcCreateProgram(
      &program, source.c_str(), "weft_fused_jit.cu",
      static_cast<int>(texts.size()), texts.data(), names.data());
  if (r != NVRTC_SUCCESS) {
    log = std::string("nvrtcCreateProgram: ") + nvrtcGetErrorString(r);
    return false;
  }
  const std::string archFlag = "--gpu-architecture=sm_" + std::to_string(arch);
  // -default-device: the headers' functions without an execution space
  // (KernelABI.h's, IntDivider's constructor) are device functions here.
  std::vector<const char *> options = {archFlag.c_str(), "-std=c++17",
                                       "-default-device"};
  for (const std::string &option : extra)
    options.push_back(option.c_str());
  r = nvrtcCompileProgram(program, static_cast<int>(options.size()),
                          options.data());
  size_t logSize = 0;
  log.clear();
  if (nvrtcGetProgramLogSize(program, &logSize) == NVRTC_SUCCESS &&
      logSize > 1) {
    log.resize(logSize);
    nvrtcGetProgramLog(program, log.data());
    log.resize(logSize - 1);
  }
  bool ok = r == NVRTC_SUCCESS;
  if (!ok) {
    log = std::string("nvrtcCompileProgram: ") + nvrtcGetErrorString(r) + "\n" +
          log;
  } else {
    size_t size = 0;
    ok = nvrtcGetCUBINSize(program, &size) == NVRTC_SUCCESS && size > 0;
    if (ok) {
      cubin.resize(size);
      ok = nvrtcGetCUBIN(program, cubin.data()) == NVRTC_SUCCESS;
    }
    if (!ok)
      log = "nvrtcGetCUBIN failed for sm_" + std::to_string(arch);
  }
  nvrtcDestroyProgram(&program);
  return ok;
}

std::string fusedJitCacheDir() {
  auto env = [](const char *name) -> std::string {
    const char *v = std::getenv(name);
    return v ? v : "";
  };
  const std::string weft = env("WEFT_CACHE_DIR");
  if (weft == "off")
    return "";
  if (!weft.empty())
    return weft + "/cuda-fused";
  if (!env("XDG_CACHE_HOME").empty())
    return env("XDG_CACHE_HOME") + "/weft/cuda-fused";
  if (!env("HOME").empty())
    return env("HOME") + "/.cache/weft/cuda-fused";
  return "";
}

namespace {

/// Creates `dir` and its parents; false when it is not a directory after.
bool makeDirs(const std::string &dir) {
  for (size_t at = 1; at <= dir.size(); ++at)
    if (at == dir.size() || dir[at] == '/') {
      const std::string prefix = dir.substr(0, at);
      if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
        return false;
    }
  struct stat st;
  return stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

} // namespace

bool fusedJitCompileCached(const std::string &source, int arch,
                           std::vector<char> &cubin, std::string &log,
                           bool &cached) {
  cached = false;
  const std::string dir = fusedJitCacheDir();
  std::string path;
  if (!dir.empty()) {
    // Everything the cubin depends on: the source, the headers weft was
    // built with, the architecture and NVRTC's version.
    Sha256 key;
    key.update(source);
    for (const auto &h : kHeaders) {
      key.update(std::string_view(h[0], std::strlen(h[0]) + 1));
      key.update(std::string_view(h[1], std::strlen(h[1]) + 1));
    }
    int major = 0, minor = 0;
    nvrtcVersion(&major, &minor);
    key.update("sm_" + std::to_string(arch) + " nvrtc " +
               std::to_string(major) + "." + std::to_string(minor));
    path = dir + "/" + Sha256::hex(key.finish()) + ".cubin";
    std::string bytes, error;
    if (readFile(path, bytes, error) && bytes.size() > 4 &&
        bytes.compare(0, 4,
                      "\x7f"
                      "ELF") == 0) {
      cubin.assign(bytes.begin(), bytes.end());
      cached = true;
      log.clear();
      return true;
    }
  }
  if (!fusedJitCompile(source, arch, cubin, log))
    return false;
  std::string error;
  if (!path.empty() && makeDirs(dir))
    (void)writeFileAtomic(path, {{cubin.data(), cubin.size()}}, error);
  return true;
}

} // namespace cuda
} // namespace weft
