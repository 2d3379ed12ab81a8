//===- WeftCommOps.td - Asynchronous collectives ----------*- tablegen -*-===//
//
// The partitioner speaks the upstream `shard` dialect's collectives, which
// complete where they stand. weft-async-collectives splits an all_reduce
// into a start, where its operand is complete, and a wait, where its result
// is first needed, so the computation between them overlaps the transfer.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_COMM_OPS_TD
#define WEFT_COMM_OPS_TD

def Weft_AllReduceStartOp : Weft_Op<"all_reduce_start",
    [MemoryEffects<[MemWrite]>]> {
  let summary = "Starts shard.all_reduce over `grid_axes` of `grid`";
  let description = [{
    The result holds the reduction only after the weft.comm_wait of the same
    `slot`; until then it must not be read. `reduction`: 0 sum, 1 max, 2 min,
    3 avg.
    The operand may be reused as soon as the start returns.
  }];
  let arguments = (ins Weft_Tensor:$input, FlatSymbolRefAttr:$grid,
                   DenseI16ArrayAttr:$grid_axes,
                   DefaultValuedAttr<I64Attr, "0">:$reduction, I64Attr:$slot);
  let results = (outs Weft_Tensor:$pending);
  let assemblyFormat = [{
    $input `on` $grid `grid_axes` `=` $grid_axes `slot` `=` $slot attr-dict
    `:` type($input) `->` type($pending)
  }];
  let hasVerifier = 1;
}

def Weft_CommWaitOp : Weft_Op<"comm_wait", [MemoryEffects<[MemWrite]>,
    AllTypesMatch<["pending", "result"]>]> {
  let summary = "Waits for the collective started with `slot`";
  let description = [{
    `pending` is the result of the weft.all_reduce_start of the same slot;
    the result is the same buffer, now holding the reduction.
  }];
  let arguments = (ins Weft_Tensor:$pending, I64Attr:$slot);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = "$pending `slot` `=` $slot attr-dict `:` type($result)";
  let hasVerifier = 1;
}

#endif // WEFT_COMM_OPS_TD
