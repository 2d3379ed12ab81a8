//===- WeftCommOps.td - Asynchronous collectives ----------*- tablegen -*-===//
//
// The partitioner speaks the upstream `shard` dialect's collectives, which
// complete where they stand. weft-async-collectives splits an all_reduce,
// all_gather or reduce_scatter into a start, where its operand is complete,
// and a wait, where its result is first needed, so the computation between them overlaps the transfer.
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

def Weft_ReduceScatterStartOp : Weft_Op<"reduce_scatter_start",
    [MemoryEffects<[MemWrite]>]> {
  let summary = "Starts shard.reduce_scatter over `grid_axes` of `grid`";
  let description = [{
    The result (this member's block, along `scatter_axis`, of the members'
    operands reduced) holds the reduction only after the weft.comm_wait of
    the same `slot`. ZeRO's gradients are reduce-scattered as soon as the
    backward has made them, so the transfer overlaps the rest of the
    backward. `reduction`: 0 sum, 1 max, 2 min, 3 avg. The operand may be
    reused as soon as the start returns.
  }];
  let arguments = (ins Weft_Tensor:$input, FlatSymbolRefAttr:$grid,
                   DenseI16ArrayAttr:$grid_axes,
                   DefaultValuedAttr<I64Attr, "0">:$reduction,
                   I64Attr:$scatter_axis, I64Attr:$slot);
  let results = (outs Weft_Tensor:$pending);
  let assemblyFormat = [{
    $input `on` $grid `grid_axes` `=` $grid_axes `scatter_axis` `=`
    $scatter_axis `slot` `=` $slot attr-dict `:` type($input) `->`
    type($pending)
  }];
  let hasVerifier = 1;
}

def Weft_CommWaitOp : Weft_Op<"comm_wait", [MemoryEffects<[MemWrite]>,
    AllTypesMatch<["pending", "result"]>]> {
  let summary = "Waits for the collective started with `slot`";
  let description = [{
    `pending` is the result of the weft.all_reduce_start,
    weft.all_gather_start, weft.send_start or weft.recv_start of the same
    slot; the result is the same buffer, now holding the collective's result
    (for a send: the operand, unchanged).
  }];
  let arguments = (ins Weft_Tensor:$pending, I64Attr:$slot);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = "$pending `slot` `=` $slot attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Point to point (pipeline stages)
//===----------------------------------------------------------------------===//

class Weft_PeerOp<string mnemonic, list<Trait> traits = []>
    : Weft_Op<mnemonic, !listconcat(traits, [MemoryEffects<[MemWrite]>])> {
  let hasVerifier = 1;
}

def Weft_SendOp : Weft_PeerOp<"send"> {
  let summary = "Sends a tensor to the group member `peer` over `grid_axes`";
  let description = [{
    `peer` is a group index over `grid_axes` of `grid` (the stage along the
    pipeline axis); the message matches the weft.recv (or weft.recv_start)
    of the same `tag` on that rank. Returns once the operand may be reused.
  }];
  let arguments = (ins Weft_Tensor:$input, FlatSymbolRefAttr:$grid,
                   DenseI16ArrayAttr:$grid_axes, I64Attr:$peer, I64Attr:$tag);
  let assemblyFormat = [{
    $input `to` $peer `on` $grid `grid_axes` `=` $grid_axes `tag` `=` $tag
    attr-dict `:` type($input)
  }];
}

def Weft_RecvOp : Weft_PeerOp<"recv"> {
  let summary = "Receives a tensor from the group member `peer`";
  let arguments = (ins FlatSymbolRefAttr:$grid, DenseI16ArrayAttr:$grid_axes,
                   I64Attr:$peer, I64Attr:$tag);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    `from` $peer `on` $grid `grid_axes` `=` $grid_axes `tag` `=` $tag
    attr-dict `:` type($result)
  }];
}

def Weft_SendStartOp : Weft_PeerOp<"send_start",
    [AllTypesMatch<["input", "pending"]>]> {
  let summary = "Starts weft.send; weft.comm_wait of `slot` finishes it";
  let description = [{
    The operand is copied at the start, so it may be reused at once. The
    result stands for the transfer in flight (the operand's buffer, which
    the comm_wait of the same slot names); it holds no new data.
  }];
  let arguments = (ins Weft_Tensor:$input, FlatSymbolRefAttr:$grid,
                   DenseI16ArrayAttr:$grid_axes, I64Attr:$peer, I64Attr:$tag,
                   I64Attr:$slot);
  let results = (outs Weft_Tensor:$pending);
  let assemblyFormat = [{
    $input `to` $peer `on` $grid `grid_axes` `=` $grid_axes `tag` `=` $tag
    `slot` `=` $slot attr-dict `:` type($input)
  }];
}

def Weft_RecvStartOp : Weft_PeerOp<"recv_start"> {
  let summary = "Starts weft.recv; the result holds the message after the "
                "weft.comm_wait of `slot`";
  let arguments = (ins FlatSymbolRefAttr:$grid, DenseI16ArrayAttr:$grid_axes,
                   I64Attr:$peer, I64Attr:$tag, I64Attr:$slot);
  let results = (outs Weft_Tensor:$pending);
  let assemblyFormat = [{
    `from` $peer `on` $grid `grid_axes` `=` $grid_axes `tag` `=` $tag
    `slot` `=` $slot attr-dict `:` type($pending)
  }];
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
