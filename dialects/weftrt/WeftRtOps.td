//===- WeftRtOps.td - Runtime-level ops of weft -----------------*- tablegen -*-===//
//
// What a per-rank program looks like just before LLVM: buffers and calls of
// runtime kernels. weft-lower-to-runtime produces it from the weft dialect,
// weftrt-assign-buffers places every intermediate buffer in one arena, and
// weftrt-to-llvm turns it into LLVM dialect calls of libweft_runtime.
//
//===----------------------------------------------------------------------===//
#ifndef WEFTRT_OPS_TD
#define WEFTRT_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def WeftRt_Dialect : Dialect {
  let name = "weftrt";
  let summary = "Buffers and runtime kernel calls of one rank's program";
  let cppNamespace = "::weft::rt";
  let useDefaultTypePrinterParser = 1;
}

class WeftRt_Type<string name, string typeMnemonic>
    : TypeDef<WeftRt_Dialect, name> {
  let mnemonic = typeMnemonic;
}

def WeftRt_Buffer : WeftRt_Type<"Buffer", "buffer"> {
  let summary = "A pointer to tensor data (arena slice, parameter, I/O or constant)";
}

class WeftRt_Op<string mnemonic, list<Trait> traits = []>
    : Op<WeftRt_Dialect, mnemonic, traits>;

def WeftRt_AllocOp : WeftRt_Op<"alloc"> {
  let summary = "A buffer of `bytes` bytes, not yet placed in the arena";
  let arguments = (ins I64Attr:$bytes);
  let results = (outs WeftRt_Buffer:$buffer);
  let assemblyFormat = "attr-dict `:` type($buffer)";
}

def WeftRt_ArenaSliceOp : WeftRt_Op<"arena_slice", [Pure]> {
  let summary = "The buffer at `offset` in the rank's arena";
  let arguments = (ins I64Attr:$offset, I64Attr:$bytes);
  let results = (outs WeftRt_Buffer:$buffer);
  let assemblyFormat = "attr-dict `:` type($buffer)";
}

def WeftRt_ParamOp : WeftRt_Op<"param", [Pure]> {
  let summary = "Parameter number `index` of the program's signature";
  let arguments = (ins I64Attr:$index);
  let results = (outs WeftRt_Buffer:$buffer);
  let assemblyFormat = "$index attr-dict `:` type($buffer)";
}

def WeftRt_InputOp : WeftRt_Op<"input", [Pure]> {
  let summary = "Input number `index` of the program's signature";
  let arguments = (ins I64Attr:$index);
  let results = (outs WeftRt_Buffer:$buffer);
  let assemblyFormat = "$index attr-dict `:` type($buffer)";
}

def WeftRt_OutputOp : WeftRt_Op<"output", [Pure]> {
  let summary = "Output number `index` of the program's signature";
  let arguments = (ins I64Attr:$index);
  let results = (outs WeftRt_Buffer:$buffer);
  let assemblyFormat = "$index attr-dict `:` type($buffer)";
}

def WeftRt_ConstantOp : WeftRt_Op<"constant", [Pure]> {
  let summary = "Read-only data compiled into the program";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs WeftRt_Buffer:$buffer);
  let assemblyFormat = "$value attr-dict `:` type($buffer)";
}

def WeftRt_LaunchOp : WeftRt_Op<"launch"> {
  let summary = "Calls runtime kernel weft_k_<kernel> on buffers";
  let description = [{
    `desc` is the kernel's descriptor (KernelABI.h): the number of tensors,
    per tensor its dtype code, rank and dims, then the attribute count and
    values. `buffers` are the operands then the results, in that order.
  }];
  let arguments = (ins StrAttr:$kernel, Variadic<WeftRt_Buffer>:$buffers,
                   DenseI64ArrayAttr:$desc);
  let assemblyFormat = "$kernel `(` $buffers `)` attr-dict";
  let hasVerifier = 1;
}

def WeftRt_KeepAliveOp : WeftRt_Op<"keep_alive"> {
  let summary = "Keeps buffers allocated up to this point";
  let description = [{
    A started collective that reads its operands until its wait
    (`reduce_scatter_pieces_start`) is followed, after that wait, by a
    keep_alive of those operands: weftrt-assign-buffers counts it as their
    last use, so nothing else is placed in them while the transfer reads
    them. It does nothing at run time (weftrt-to-llvm drops it).
  }];
  let arguments = (ins Variadic<WeftRt_Buffer>:$buffers);
  let assemblyFormat = "`(` $buffers `)` attr-dict";
}

def WeftRt_CopyOp : WeftRt_Op<"copy"> {
  let summary = "Copies `bytes` bytes from one buffer to another";
  let arguments = (ins WeftRt_Buffer:$source, WeftRt_Buffer:$target, I64Attr:$bytes);
  let assemblyFormat = "$source `to` $target attr-dict";
}

#endif // WEFTRT_OPS_TD
