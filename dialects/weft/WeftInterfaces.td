//===- WeftInterfaces.td - Behaviour attached to weft ops -------*- tablegen -*-===//
#ifndef WEFT_INTERFACES_TD
#define WEFT_INTERFACES_TD

include "mlir/IR/OpBase.td"

// How an op becomes a call of the runtime (runtime/include/weft/runtime/
// KernelABI.h). Ops without it are handled by the lowering itself: constants,
// parameters and views (reshape).
def Weft_KernelOpInterface : OpInterface<"KernelOpInterface"> {
  let cppNamespace = "::weft";
  let description = [{
    An op that runs as one runtime kernel `weft_k_<name>`. The lowering passes
    the op's operands then results as buffers, the tensor descriptors, and the
    integer attributes this interface returns, in the layout KernelABI.h
    documents for that kernel.
  }];
  let methods = [
    InterfaceMethod<"Name of the kernel, without the weft_k_ prefix.",
      "::llvm::StringRef", "getKernelName">,
    InterfaceMethod<"Appends the kernel's attribute values.",
      "void", "getKernelAttributes",
      (ins "::llvm::SmallVectorImpl<int64_t> &":$attrs)>,
  ];
}

// Work an op does, for the cost model: floating-point operations and bytes
// moved to and from memory.
def Weft_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::weft";
  let methods = [
    InterfaceMethod<"Floating-point operations of one execution.",
      "int64_t", "getFlops">,
    InterfaceMethod<"Bytes read and written (operands plus results).",
      "int64_t", "getBytesAccessed", (ins), [{}], [{
        return ::weft::defaultBytesAccessed($_op.getOperation());
      }]>,
  ];
}

// Reverse-mode derivative of an op, used by weft-autodiff (passes/Autodiff.cpp).
// The rules live beside the ops in GradientRules*.cpp, one file per op family.
def Weft_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::weft";
  let description = [{
    A differentiable op. Given the gradients of the loss with respect to the
    op's results, `buildGradients` creates, with `b` at its insertion point,
    the ops computing the gradients with respect to the op's operands.

    `resultGrads` holds one value per result, each of that result's type, or
    null where no gradient flows (a zero gradient). `operandGrads` receives
    one entry per operand: the gradient, of exactly the operand's type, or
    null for an operand that has none (integer and boolean operands, indices,
    labels, conditions, running statistics). The caller sums the
    contributions of several uses. Broadcast operands get their gradient
    summed over the broadcast dims. A rule that cannot build its gradient
    reports an error at the op and fails.
  }];
  let methods = [
    InterfaceMethod<"Builds the gradients of the operands.",
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$b,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // WEFT_INTERFACES_TD
