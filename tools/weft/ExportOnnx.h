//===- ExportOnnx.h - Trained weights back into an ONNX model -------------===//
//
// The ONNX half of `weft export`, built only when ONNX is available (the
// `weft_export_onnx` library; runtime-only builds of `weft` go without it).
// The interface is plain C++ so that weft.cpp needs no protobuf headers.
//
// exportOnnxModel reads the ONNX model `sourcePath` (a bundle's source.onnx),
// replaces every initializer of its main graph whose name is one of `params`
// with that tensor (dtype and shape must match; the data goes to raw_data and
// the typed fields are cleared), keeps every other initializer, node and
// attribute as it is, and writes the result atomically to `outPath`.
//
// External data: tensors the source stores in external files (read relative
// to the source's directory, which a location must not leave) are written to
// one file beside the output, OUTNAME.data, and the output names it; a
// replaced initializer that was external stays external there, with the new
// values. That data file is written (atomically) before the model, so the
// model never names data that is not there. A source without external data
// gives a self-contained OUTNAME.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFT_EXPORTONNX_H
#define WEFT_TOOLS_WEFT_EXPORTONNX_H

#include "weft/runtime/Executor.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace weft {

/// One trained tensor: a dense, row-major, little-endian buffer.
struct ExportParam {
  std::string name;
  WeftDType dtype = WEFT_F32;
  std::vector<int64_t> shape;
  const void *data = nullptr;
  size_t byteSize = 0;
};

struct ExportSummary {
  size_t replaced = 0;  ///< initializers given the trained values
  size_t kept = 0;      ///< other initializers, unchanged
  std::string dataFile; ///< the external data file written, or ""
};

/// Every problem with the source, the parameters or the output path is bad
/// input (exit code 2) naming the file and the tensor; a failed write is
/// exit code 1. `outPath` is untouched on failure.
Status exportOnnxModel(const std::string &sourcePath,
                       const std::vector<ExportParam> &params,
                       const std::string &outPath, ExportSummary &summary);

} // namespace weft

#endif // WEFT_TOOLS_WEFT_EXPORTONNX_H
