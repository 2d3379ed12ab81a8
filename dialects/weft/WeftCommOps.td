//===- WeftCommOps.td - Asynchronous collectives ----------*- tablegen -*-===//
//
// The partitioner speaks the upstream `shard` dialect's collectives, which
// complete where they stand. weft-async-collectives splits an all_reduce
// into a start, where its operand is complete, and a wait, where its result
// is first needed, so the computation between them overlaps the transfer.
// weft.mesh_offset is the one value of a partitioned program that differs
// between ranks without communication.
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

def Weft_AllGatherStartOp : Weft_Op<"all_gather_start",
    [MemoryEffects<[MemWrite]>]> {
  let summary = "Starts shard.all_gather over `grid_axes` of `grid`";
  let description = [{
    The result (the members' operands joined along `gather_axis`) holds the
    gather only after the weft.comm_wait of the same `slot`. The partitioner
    gathers a ZeRO-3 parameter at each use; weft-async-collectives starts
    each such gather when the previous one is waited for, so the next
    layer's parameters travel while this layer computes.
  }];
  let arguments = (ins Weft_Tensor:$input, FlatSymbolRefAttr:$grid,
                   DenseI16ArrayAttr:$grid_axes, I64Attr:$gather_axis,
                   I64Attr:$slot);
  let results = (outs Weft_Tensor:$pending);
  let assemblyFormat = [{
    $input `on` $grid `grid_axes` `=` $grid_axes `gather_axis` `=`
    $gather_axis `slot` `=` $slot attr-dict `:` type($input) `->`
    type($pending)
  }];
  let hasVerifier = 1;
}

def Weft_CommWaitOp : Weft_Op<"comm_wait", [MemoryEffects<[MemWrite]>,
    AllTypesMatch<["pending", "result"]>]> {
  let summary = "Waits for the collective started with `slot`";
  let description = [{
    `pending` is the result of the weft.all_reduce_start or
    weft.all_gather_start of the same slot; the result is the same buffer,
    now holding the collective's result.
  }];
  let arguments = (ins Weft_Tensor:$pending, I64Attr:$slot);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = "$pending `slot` `=` $slot attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Weft_MeshOffsetOp : Weft_Op<"mesh_offset", [Pure]> {
  let summary = "Where this rank's block of a split dimension starts";
  let description = [{
    A rank-0 i64: `block` times this rank's index in the group over
    `grid_axes` of `grid` (coordinates linearized first axis major, the
    order of the shard dialect's collectives). A dimension split over those
    axes in blocks of `block` starts there on this rank; the partitioner
    uses it to mask gathers, scatters and cross-entropies whose data are
    split along the dimension they index (vocabulary parallelism).
  }];
  let arguments = (ins FlatSymbolRefAttr:$grid, DenseI16ArrayAttr:$grid_axes,
                   I64Attr:$block);
  let results = (outs 0DTensorOf<[I64]>:$offset);
  let assemblyFormat = [{
    `on` $grid `grid_axes` `=` $grid_axes `block` `=` $block attr-dict `:`
    type($offset)
  }];
  let hasVerifier = 1;
}

#endif // WEFT_COMM_OPS_TD
