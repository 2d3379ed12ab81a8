//===- WeftDialect.td - The weft graph dialect ------------------*- tablegen -*-===//
#ifndef WEFT_DIALECT_TD
#define WEFT_DIALECT_TD

include "mlir/IR/OpBase.td"

def Weft_Dialect : Dialect {
  let name = "weft";
  let summary = "Graph-level ops of ML models on static-shape tensors";
  let description = [{
    One op per concept, with ONNX's opset variants normalized at import.
    Every op carries, beside its definition: a verifier and shape rule
    (ShapeRules.cpp), folders (Folders.cpp), a cost (Cost.cpp) and a
    lowering to a runtime kernel call (RuntimeLowering.cpp). Gradient and
    sharding rules attach the same way, as op interfaces.
  }];
  let cppNamespace = "::weft";
  let useDefaultAttributePrinterParser = 0;
  let hasConstantMaterializer = 1;
}

#endif // WEFT_DIALECT_TD
