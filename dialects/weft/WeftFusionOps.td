//===- WeftFusionOps.td - Fused elementwise chains ----------*- tablegen -*-===//
//
// weft-fuse-elementwise (passes/FuseElementwise.cpp) groups chains of
// elementwise ops into one weft.fused, which the runtime runs in one pass
// over memory (weft_k_fused, KernelABI.h). The ops live in FusionOps.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_FUSION_OPS_TD
#define WEFT_FUSION_OPS_TD

def Weft_FusibleTensor : RankedTensorOf<[F32, F16, BF16]>;

def Weft_FusedOp : Weft_Op<"fused", [Pure, IsolatedFromAbove, SingleBlock,
    DeclareOpInterfaceMethods<Weft_KernelOpInterface>,
    DeclareOpInterfaceMethods<Weft_CostOpInterface>]> {
  let summary = "A chain of elementwise ops run in one pass over memory";
  let description = [{
    The body's block arguments are the operands; its ops are weft
    elementwise ops (neg, sqrt, exp, log, tanh, erf, relu, sigmoid, add,
    sub, mul, div, pow, max, min, cast) on f32, bf16 or f16 tensors of the
    iteration shape, plus splat constants that broadcast to it. Operands
    broadcast to the iteration shape (numpy); results all have it.

    ```mlir
    %y:2 = weft.fused %x, %bias : (tensor<8x64xbf16>, tensor<64xf32>)
        -> (tensor<8x64xf32>, tensor<8x64xbf16>) {
    ^bb0(%a: tensor<8x64xbf16>, %b: tensor<64xf32>):
      %0 = weft.cast %a : tensor<8x64xbf16> to tensor<8x64xf32>
      %1 = weft.add %0, %b : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
      %2 = weft.cast %1 : tensor<8x64xf32> to tensor<8x64xbf16>
      weft.yield %1, %2 : tensor<8x64xf32>, tensor<8x64xbf16>
    }
    ```
  }];
  let arguments = (ins Variadic<Weft_FusibleTensor>:$inputs);
  let results = (outs Variadic<Weft_FusibleTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $inputs attr-dict `:` functional-type($inputs, $results) $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The shape every result and every body op has.
    ::llvm::ArrayRef<int64_t> getIterationShape() {
      return ::llvm::cast<::mlir::RankedTensorType>(getResult(0).getType())
          .getShape();
    }
  }];
}

def Weft_YieldOp : Weft_Op<"yield", [Pure, Terminator,
    HasParent<"FusedOp">]> {
  let summary = "The results of a weft.fused body";
  let arguments = (ins Variadic<Weft_FusibleTensor>:$values);
  let assemblyFormat = "$values attr-dict `:` type($values)";
}

#endif // WEFT_FUSION_OPS_TD
