//===- Passes.td - weft's passes --------------------------------*- tablegen -*-===//
#ifndef WEFT_PASSES_TD
#define WEFT_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerToRuntime : Pass<"weft-lower-to-runtime", "mlir::ModuleOp"> {
  let summary = "Turn the weft graph into runtime kernel launches on buffers";
  let description = [{
    Rewrites the entry function into `weft_model_run`: graph inputs, parameters
    and outputs become signature slots, constants become read-only data,
    reshapes become views, and every compute op becomes one `weftrt.launch`
    with its kernel descriptor. Each other result gets a `weftrt.alloc`;
    a result that is a graph output is written in place into the output slot.
    Ops the CPU backend has no kernel for (by element type) are errors.

    With `unpacked-buckets`, a reduce-scatter along dim 0 of a concatenation
    along dim 1 of [g, k_i] pieces (a ZeRO gradient bucket) that nothing
    else reads becomes `reduce_scatter_pieces` on the pieces where they lie,
    and an all-gather along dim 0 whose result (or its comm_wait's) only a
    split along dim 1 reads becomes `all_gather_pieces` into the split's
    results: the concat, the split and their copies go away. A started
    reduce_scatter_pieces reads its pieces until its wait, which is followed
    by a `weftrt.keep_alive` of them.
  }];
  let dependentDialects = ["weft::rt::WeftRtDialect", "mlir::func::FuncDialect"];
  let options = [
    Option<"entry", "entry", "std::string", "\"main\"", "Name of the function to lower">,
    Option<"unpackedBuckets", "unpacked-buckets", "bool", "false",
           "Reduce-scatter and all-gather buckets of [g, k] pieces where the "
           "pieces lie (reduce_scatter_pieces, all_gather_pieces: the CPU "
           "runtime's kernels) instead of through a concat and a split">,
  ];
}

def Autodiff : Pass<"weft-autodiff", "mlir::ModuleOp"> {
  let summary = "Reverse-mode automatic differentiation of @main's loss";
  let description = [{
    Differentiates the scalar float loss that `@main` returns as result
    `loss-index` with respect to every trainable parameter: the `weft.param`
    ops of a float element type whose name matches none of the `freeze`
    globs (llvm::GlobPattern syntax) and none of whose uses is marked
    `frozen` (quantization scales). Parameters sharing a name are one tied
    parameter and get the sum of their gradients.

    Ops are visited in reverse, seeded with d loss = 1; each op whose results
    receive a gradient and which depends on a trainable parameter builds its
    operands' gradients with its GradientOpInterface rule, and the gradients
    of values used several times are added up. Integer and boolean values
    carry no gradient, so shape computations and indices need no rule.

    @main then returns (loss, one gradient per trainable parameter in the
    order of the parameters' first uses; zeros for one the loss does not
    depend on), with result attributes `weft.name = "loss"` and
    `"grad:<name>"`, and the function attribute `weft.trainable` listing the
    parameter names in that order. Its other results, and the ops only they
    needed, are dropped.
  }];
  let options = [
    Option<"lossIndex", "loss-index", "unsigned", "0",
           "Which result of @main is the loss">,
    ListOption<"freeze", "freeze", "std::string",
               "Glob patterns of parameter names that are not trained">,
  ];
}

def AssignBuffers : Pass<"weftrt-assign-buffers", "mlir::func::FuncOp"> {
  let summary = "Place every weftrt.alloc in one arena by liveness";
  let description = [{
    Static, liveness-based memory plan: a buffer lives from its allocation to
    its last use; buffers whose lifetimes overlap never share bytes. Largest
    first, each at the lowest 64-byte-aligned offset that fits (greedy by
    size). Allocs become `weftrt.arena_slice`; the arena's size, the planned
    peak, is recorded on the function as `weftrt.arena_bytes`.

    With `place-pieces`, the pieces of a concat or split that lie one after
    the other in the whole (`weftrt.piece_offsets`, set by the lowering: a
    data-parallel bucket of flattened gradients and its unpacking) are
    placed inside the whole's buffer and the launch goes away. A concat
    qualifies when it is each piece's last reader, a split when it is the
    whole's last reader; pieces are intermediates that are neither pieces
    of another buffer nor the whole. The whole then lives from its first
    piece's making to its last piece's last use. (Pieces then start at any
    element's offset: weftc sets it for CPU bundles; CUDA kernels and
    cuBLAS have yet to be checked with such buffers on a GPU.)
  }];
  let options = [
    Option<"placePieces", "place-pieces", "bool", "false",
           "Place the pieces of contiguous concats and splits inside the "
           "whole and drop their copies">,
  ];
}

def RuntimeToLLVM : Pass<"weftrt-to-llvm", "mlir::ModuleOp"> {
  let summary = "Lower weftrt to LLVM dialect calls of libweft_runtime";
  let description = [{
    The function becomes `weft_model_run(arena, params, inputs, outputs)`;
    launches become calls of `weft_k_<kernel>(buffers, descriptor)` with
    descriptors and constants as private globals, and the signature recorded
    by weft-lower-to-runtime becomes the JSON string `weft_model_signature`.

    With `target=cuda` the buffers are GPU memory (libweft_runtime_cuda,
    ModelABI.h): a constant's pointer comes from
    `weft_rt_constant(id, global, bytes)` (its cached device copy), copies
    call `weft_rt_copy(dst, src, bytes)` instead of memcpy, the pipeline
    stage index is read with `weft_rt_load_i64(ptr)`, and the signature says
    `"target": "cuda"`.
  }];
  let options = [
    Option<"target", "target", "std::string", "\"cpu\"",
           "Where the model's buffers live: cpu or cuda">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def BuildTrainStep : Pass<"weft-build-train-step", "mlir::ModuleOp"> {
  let summary = "Append the optimizer update to a differentiated @main";
  let description = [{
    Takes @main as weft-autodiff leaves it (loss, then one gradient per
    `weft.trainable` parameter) and makes it one training step: a step
    counter (`weft.step`, role "step"), optional gradient clipping by global
    norm (torch.nn.utils.clip_grad_norm_), and per parameter an AdamW or SGD
    update whose new parameter and optimizer state (role "optimizer_state",
    named `adamw.m.<p>`, `adamw.v.<p>`, `sgd.momentum.<p>`) are stored with
    `weft.param_update`. @main then returns the loss alone. Defaults are
    torch.optim's; a negative `weight-decay` means the optimizer's default
    (AdamW 1e-2, SGD 0). `lr-schedule` (constant, linear or cosine, with
    `warmup-steps`, `decay-steps` and `min-lr`) gives each update its rate
    from the step counter (LrSchedule.h): linear and cosine need decay-steps
    above warmup-steps, and min-lr at most lr.
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string", "\"adamw\"",
           "adamw or sgd">,
    Option<"lr", "lr", "double", "1e-3", "Learning rate">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", "0.999", "AdamW beta2">,
    Option<"eps", "eps", "double", "1e-8", "AdamW epsilon">,
    Option<"weightDecay", "weight-decay", "double", "-1.0",
           "Weight decay (negative: the optimizer's default)">,
    Option<"momentum", "momentum", "double", "0.0", "SGD momentum">,
    Option<"dampening", "dampening", "double", "0.0", "SGD dampening">,
    Option<"nesterov", "nesterov", "bool", "false", "SGD Nesterov momentum">,
    Option<"clipGradNorm", "clip-grad-norm", "double", "0.0",
           "Clip gradients to this global L2 norm (0: no clipping)">,
    Option<"lrSchedule", "lr-schedule", "std::string", "\"constant\"",
           "constant, linear or cosine">,
    Option<"warmupSteps", "warmup-steps", "int64_t", "0",
           "Updates whose rate rises linearly from 0 to lr">,
    Option<"decaySteps", "decay-steps", "int64_t", "0",
           "The update after which linear and cosine reach min-lr">,
    Option<"minLr", "min-lr", "double", "0.0",
           "The rate that linear and cosine decay to">,
  ];
}

def AppendLoss : Pass<"weft-append-loss", "mlir::ModuleOp"> {
  let summary = "Make @main return the training loss alone";
  let description = [{
    `loss` names either one of @main's results (by `weft.name`; empty: the
    only result), which must be a scalar, or a built-in loss of the model's
    only output against a target input `target` (an existing input of that
    name, or a new argument): `mse` is mean((output - target)^2) over all
    elements (target shaped like the output), `cross_entropy` is
    SoftmaxCrossEntropyLoss with mean reduction (output [N, C, ...], target
    [N, ...] of i64 class indices). @main then returns the loss alone, named
    "loss".
  }];
  let options = [
    Option<"loss", "loss", "std::string", "\"\"",
           "mse, cross_entropy, or the name of the result that is the loss">,
    Option<"target", "target", "std::string", "\"\"",
           "Name of the target input of a built-in loss">,
  ];
}

def MixedPrecision : Pass<"weft-mixed-precision", "mlir::ModuleOp"> {
  let summary = "Run matrix products and convolutions in bf16";
  let description = [{
    Mixed precision in the style of automatic mixed precision: every
    weft.matmul and weft.conv on f32 tensors gets its operands cast to
    `dtype`, computes in it (the kernels accumulate in f32 and round the
    result once), and its result is cast back to f32. A conv's bias is
    added after the cast, in f32. Everything else (normalization, softmax,
    losses, elementwise ops, reductions) stays in f32, and so do the
    parameters: a parameter is cast where a product reads it, so training
    keeps f32 master weights and optimizer state. Run before weft-autodiff,
    the casts' gradient rules make the backward products bf16 as well and
    hand the parameters f32 gradients.

    Warns when the module has no f32 product to convert.
  }];
  let options = [
    Option<"dtype", "dtype", "std::string", "\"bf16\"",
           "Compute element type of the products (bf16)">,
  ];
}

def AnnotateSharding : Pass<"weft-annotate-sharding", "mlir::ModuleOp"> {
  let summary = "Declare the device mesh and how @main's inputs and parameters are split";
  let description = [{
    Adds the mesh `shard.grid @mesh(shape = dp x tp)` with
    `weft.mesh_axes = ["dp", "tp"]` (with `pp` > 1, dp x pp x tp and
    ["dp", "pp", "tp"]: a tp group is adjacent ranks; with `microbatches` >
    1 an "mb" axis last), and `weft.shard` annotations
    (Sharding.h) for the partitioner: with `dp` > 1, every input of @main is
    split along its batch dimension (dim 0) over the "dp" axis, in rank
    order, so each data-parallel rank gets a contiguous block of the global
    batch's rows. Parameters stay whole on every rank, except under ZeRO:
    with `zero` >= 1 the optimizer state, with `zero` = 3 also the trained
    parameters, are cut over "dp" along their first dimension dp divides
    (tensors with none stay whole). ZeRO-2 differs from ZeRO-1 in where the
    gradients' reduce-scatters run (weft-schedule-collectives), not here.
    With `sequence-parallel`, every input of rank >= 2 is also split along
    dim 1 (the sequence) over "tp": activations outside the tensor-parallel
    products stay split by sequence (LayerNorm, residual adds), are gathered
    before a column-parallel product and reduce-scattered after a
    row-parallel one. Tensor-parallel weights are chosen by
    TensorParallelPlan: Megatron's splits, or with `tp-flop-seconds` an
    integer program over the step's weights (replicated, column- or
    row-parallel) priced by the `tp-*` options, which records what it chose
    in @main's `weft.tp_plan`. Errors: a degree below 1, a scalar input, a batch
    (or sequence) that its degree does not divide, or `zero` without data
    parallelism.
  }];
  let dependentDialects = ["mlir::shard::ShardDialect"];
  let options = [
    Option<"dp", "dp", "int64_t", "1", "Data-parallel degree">,
    Option<"tp", "tp", "int64_t", "1", "Tensor-parallel degree">,
    Option<"zero", "zero", "int64_t", "0", "ZeRO stage (0-3)">,
    Option<"pp", "pp", "int64_t", "1",
           "Pipeline stages: a mesh axis \"pp\" after dp and tp">,
    Option<"microbatches", "microbatches", "int64_t", "1",
           "Microbatches per step: a last mesh axis \"mb\" the inputs' batch is split over">,
    Option<"sequenceParallel", "sequence-parallel", "bool", "false",
           "Split the inputs' sequence dim (dim 1) over tp as well">,
    Option<"tpFlopSeconds", "tp-flop-seconds", "double", "0",
           "Seconds per FLOP of a product: with it, an integer program chooses the tensor-parallel splits">,
    Option<"tpByteSeconds", "tp-byte-seconds", "double", "0",
           "Seconds per byte of a collective over the tp group">,
    Option<"tpLatency", "tp-latency", "double", "0",
           "Seconds per message of a collective over the tp group">,
    Option<"tpMemory", "tp-memory", "double", "0",
           "Bytes per rank for parameters, gradients and optimizer state (0: unbounded)">,
  ];
}

def Partition : Pass<"weft-partition", "mlir::ModuleOp"> {
  let summary = "Rewrite @main into the program each rank of the mesh runs";
  let description = [{
    Propagates the `weft.shard` annotations of @main's inputs and parameters
    through the program op by op (ShardingRules.h): each op runs on the
    blocks its rule allows, with local result types, and values are moved to
    the sharding their user needs by `shard` collectives on the module's
    mesh: partial sums are added up by shard.all_reduce (once per value),
    split dimensions an op needs whole are joined by shard.all_gather.
    Means over split dimensions are rescaled to the global count (a
    cross-entropy's count of counted labels is itself all-reduced), so every
    rank computes exactly the single-device step. Results of @main and
    parameter updates are made whole. Inputs get their local types and keep
    their `weft.shard` attributes for the runtime.
  }];
  let dependentDialects = ["mlir::shard::ShardDialect"];
}

def ScheduleCollectives : Pass<"weft-schedule-collectives", "mlir::ModuleOp"> {
  let summary = "Move reductions right after the op that completes their operand";
  let description = [{
    Every shard.all_reduce and shard.reduce_scatter moves up to just after
    the definition of its operand, so partial gradients are reduced as soon
    as they are complete instead of where the optimizer first reads them:
    their full-size buffers die early (ZeRO-2) and the reduction can overlap
    the rest of the backward pass.
  }];
}

def BucketCollectives : Pass<"weft-bucket-collectives", "mlir::ModuleOp"> {
  let summary = "Pack all_reduces, reduce_scatters and all_gathers into buckets of bucket-mb MiB";
  let description = [{
    In program order (the backward pass yields the last layers' gradients
    first), shard.all_reduce, shard.reduce_scatter and shard.all_gather ops
    over the same mesh axes, reduction and element type are packed into
    buckets of at most `bucket-mb` MiB: one collective of the concatenated
    operands (flattened for all_reduce; as [ranks, n / ranks] blocks for
    reduce_scatter and [1, n] for all_gather, concatenated along dim 1 and
    moved along dim 0), split and reshaped back. The packed collective
    stands at the first member's place when every member's operand is
    ready there (not for all_gathers: ZeRO-3 gathers just before use), else
    at the last member's place when no member's result (other than a
    weft.param_update, which moves down) is read before it; a bucket closes
    when neither holds. A reduce_scatter or all_gather joins only when the
    dims before its axis are 1 (contiguous blocks). A single collective
    larger than the limit forms its own bucket.
  }];
  let options = [
    Option<"bucketMb", "bucket-mb", "double", "25.0",
           "Largest bucket, in MiB">,
  ];
}

def AsyncCollectives : Pass<"weft-async-collectives", "mlir::ModuleOp"> {
  let summary = "Split all_reduces into a start and a wait around the work between";
  let description = [{
    A shard.all_reduce with ops between it and its first user becomes
    weft.all_reduce_start where it stood and weft.comm_wait right before that
    user (one slot per pair), so the ops in between overlap the reduction.
  }];
}

def Microbatch : Pass<"weft-microbatch", "mlir::ModuleOp"> {
  let summary = "Turn the partitioned step's microbatch axis into repetition";
  let description = [{
    After weft-partition, on a mesh whose last axis is "mb" (microbatches,
    weft-annotate-sharding's `microbatches`): each input split over "mb"
    becomes the rank's whole block again and microbatch m reads its m-th
    rows; every op reading a per-microbatch value is repeated per
    microbatch (weft.microbatch = m); collectives over "mb" become the
    clones' sum, maximum, minimum or concatenation in microbatch order
    (then the collective over the remaining axes); the grid drops the axis.
    The ops are then scheduled microbatch by microbatch (each microbatch's
    forward and backward before the next one's), parameter updates last.
    Errors: a collective over "mb" that is not all_reduce or all_gather,
    "mb" before another axis of a collective, a result that is not complete
    over the batch.
  }];
}

def Recompute : Pass<"weft-recompute", "mlir::ModuleOp"> {
  let summary = "Recompute forward activations for the backward instead of keeping them";
  let description = [{
    On the training step (after weft-microbatch, before weft-pipeline). The
    forward ops are those @main's first result (the loss) depends on; a
    forward value the backward reads is kept (`mode` none), recomputed
    unless a matmul or a convolution made it (selective), or recomputed
    from the stage's inputs (full). Recomputation is per group of forward
    ops of one stage (weft.stage) and one microbatch (weft.microbatch): the
    clones go right before the group's first backward reader, marked
    weft.backward and weft.recompute, and the backward reads them, so the
    forward's results die when the forward is done with them. Only kernels
    are recomputed (not collectives, transfers or constants), and a stage
    never recomputes another stage's work. Errors: an unknown mode, no
    single-block @main, a first result that is not a float loss.
  }];
  let options = [
    Option<"mode", "mode", "std::string", "\"full\"",
           "What to recompute: none, selective or full">,
  ];
}

def Pipeline : Pass<"weft-pipeline", "mlir::ModuleOp"> {
  let summary = "Send values between pipeline stages and order each stage's schedule";
  let description = [{
    On the partitioned, microbatched step of a model cut into stages (its
    ops carry weft.stage, weft.microbatch and weft.backward): ops without a
    stage get one (from the parameter they update or the ops they read,
    else from their readers; constants and views of inputs read by several
    stages are copied); a value read on another stage than its own is sent
    (weft.send_start after it is made, its comm_wait at the end of the step)
    and received (weft.recv before its first reader there), the step's
    results going to stage 0; and the ops are ordered so that each stage
    runs its microbatches' forward and backward work in the `schedule`'s
    order: gpipe (all forwards, then all backwards), 1f1b (P - 1 - s
    forwards first, then one forward and one backward in turn) or
    interleaved (a model cut into V chunks per stage by weft-pipeline-stages
    virtual-stages=V: chunk c runs on stage c mod P and its ops get
    weft.chunk = c / P; 1F1B over the M x V units of a stage, with
    2(P - 1 - s) + (V - 1)P forwards first, groups of P microbatches going
    through the chunks in turn) or zb-h1 (1F1B whose backward's
    weight-gradient ops, marked weft.weight_grad by weft-autodiff, run as a
    unit W of their own, W of microbatch i right before B of i + 1 and the
    last at the end; the mark is dropped under the other schedules). Marks the function with weft.pipeline_axis
    (the mesh's "pp" axis) for the lowering. Errors: no "pp" axis of the
    right size, an unknown schedule, interleaved without virtual stages (or
    virtual stages without it), interleaved with a microbatch count that is
    not a multiple of the stages, a parameter read by two stages.

    The pass then checks the program it made: it runs every stage's ops
    in order, a send starting at once, a receive's wait (and a send's,
    once its receive is posted) holding its stage until the peer gets
    there. A stage that would wait forever is a schedule that cannot run
    the model: the pass fails, naming the op that combines the
    microbatches, unless `gpipe-if-coupled` is set, in which case it runs
    gpipe and records on the module the schedule it ran
    (weft.pipeline_schedule) and why (weft.pipeline_schedule_reason);
    interleaved fails either way. That happens where an op of a
    microbatch reads a sum over microbatches another stage made (a
    training-mode BatchNorm's batch statistics: microbatch m's
    normalization reads a sum the last microbatch completes). In the
    forward on a stage s > 0, the stage before must send all its forwards
    before waiting for a backward, which gpipe does, 1f1b and zb-h1 only
    while the microbatches are at most P - s + 1; in the backward of a
    stage s before the last, the stage needs every microbatch's gradient,
    so all of its own forwards, before its first backward: 1f1b and zb-h1
    run P - s of them first.
    (weft.pipeline_schedule_reason); interleaved fails either way.
  }];
  let options = [
    Option<"schedule", "schedule", "std::string", "\"1f1b\"",
           "Pipeline schedule: gpipe, 1f1b, interleaved or zb-h1">,
    Option<"gpipeIfCoupled", "gpipe-if-coupled", "bool", "false",
           "Run gpipe where the schedule would leave a stage waiting "
           "forever (a sum over microbatches another stage makes)">,
  ];
}

def PipelineStages : Pass<"weft-pipeline-stages", "mlir::ModuleOp"> {
  let summary = "Assign @main's forward ops to pipeline stages";
  let description = [{
    Cuts @main (the forward model, with its loss when training; run before
    weft-autodiff, which gives each gradient op the stage of the op it
    differentiates) into `stages` contiguous runs of ops, marking every op
    with `weft.stage` and the function with `weft.pipeline_stages`. A cut
    lies between two ops in program order; the automatic cuts are the
    layer boundaries, where exactly one activation crosses (the residual
    stream between transformer blocks, the activation between MLP layers),
    chosen so that the costliest stage (floating-point work of the forward
    ops and of their backward, estimated as one more forward per operand
    that needs a gradient) is as cheap as possible, fewer crossing bytes
    breaking ties. `boundaries` names, for
    each stage after the first, where it starts: the first op whose name (the
    ONNX node's) or one of whose parameters' names starts with the string.
    A weft.param or weft.constant takes the stage of its users (a constant
    used by several stages is copied). With `virtual-stages` V > 1 the model
    is cut into stages x V chunks and `weft.stage` is the chunk (chunk c runs
    on stage c mod stages; weft-pipeline maps it), the function being
    marked with `weft.virtual_stages`. Errors: more stages than layers, a
    boundary that names nothing, repeats or goes backwards, a number of
    boundaries other than stages - 1, and a parameter read by two stages
    (tied weights across stages).
  }];
  let options = [
    Option<"stages", "stages", "int64_t", "1", "Number of pipeline stages">,
    Option<"virtualStages", "virtual-stages", "int64_t", "1",
           "Model chunks per stage (interleaved schedules)">,
    ListOption<"boundaries", "boundaries", "std::string",
               "Where stages 1, 2, ... start (op or parameter name prefixes)">,
    Option<"unitStages", "unit-stages", "bool", "false",
           "Profile mode for the cost model: every forward compute op gets "
           "its position as weft.stage (so autodiff attributes each gradient "
           "op to the op it differentiates); parameters and constants are "
           "left alone and @main is not marked as a pipeline">,
  ];
}

def FoldCasts : Pass<"weft-fold-casts", "mlir::ModuleOp"> {
  let summary = "Let a layer norm or a sum do the cast beside it";
  let description = [{
    Two casts of mixed precision go into the kernel next to them, bit for
    bit. An f32 weft.layer_norm whose only reader is a cast to bf16 or f16
    gets the cast's type (its kernels normalize in f32 and round each value
    once, the cast's bits: the normalized inputs of the products). A
    widening of bf16 to f32 whose only reader is a weft.reduce_sum goes,
    and the sum reads the bf16 tensor with an f32 result (its kernels widen
    each element as they read it: the bias gradients). Cast and reader must
    sit at the same place in the step (stage, microbatch, chunk); under
    ignore-stage weft.stage is not compared (the planner's profile). The
    ops then carry the types, so the lowering launches no cast and the cost
    model counts none. weftc runs it on every rank's program;
    fold-norm-casts=false (weftc --fold-norm-casts off, and --target cuda
    until its kernel has run on a GPU) leaves the layer norms' casts.
  }];
  let options = [
    Option<"ignoreStage", "ignore-stage", "bool", "false",
           "Fold across weft.stage (the planner's profile)">,
    Option<"foldNormCasts", "fold-norm-casts", "bool", "true",
           "Fold a narrowing cast into the layer norm it alone reads">,
  ];
}

def FuseElementwise : Pass<"weft-fuse-elementwise", "mlir::ModuleOp"> {
  let summary = "Group chains of elementwise ops into weft.fused";
  let description = [{
    Producer-consumer fusion of elementwise ops (neg, sqrt, exp, log, tanh,
    erf, relu, sigmoid, add, sub, mul, div, pow, max, min and casts between
    f32, bf16 and f16) whose results share one shape: an op joins the group
    of an operand's producer when that group has its shape, the same place
    in the step (stage, microbatch, backward, chunk) and nothing outside
    the group reads the group's values before the op. Each group of two or
    more ops becomes one weft.fused at the position of its last op; its
    results are the values read outside it, its operands the values it
    reads from outside (splat constants become immediates). The runtime
    runs a weft.fused in one pass over memory instead of one per op.
    First, casts to bf16 or f16 move above the transposes, reshapes and
    slices they follow (so they can join the group that made the data, and
    the data moves at half the bytes), a narrowing of a widening from the
    same type cancels, and casts of one value to one type merge; all exact.
    An op that could join a group but for an outside reader of the group
    that precedes it joins as if it stood right after the group's last
    member (the group stays there) when it is at most 8 ops below it and
    reads nothing from outside the group that is defined after that member
    or by another group.
    Then a bf16 or f16 weft.matmul whose only reader is a cast to f32
    that no fusible op reads becomes a matmul with an f32 result (the
    kernels accumulate in f32; the result is then not rounded to bf16).
    Casts to f32 move below the transposes, reshapes and slices that are
    their only reader, and below a concat of such casts from one type (the
    data moves at half the bytes); a narrowing of a widening from the same
    type cancels, and a transpose of a transpose becomes one; all exact.
    weftc runs it for --target cuda (and with --fuse elementwise).
    With ignore-stage, ops of different weft.stage may share a group (the
    planner's profile, where every forward op is its own unit, fuses as a
    one-stage program would); the group takes its last op's attributes.
  }];
  let options = [
    Option<"ignoreStage", "ignore-stage", "bool", "false",
           "Group ops whatever their weft.stage (the planner's profile)">,
  ];
}

def RecomputeElementwise : Pass<"weft-recompute-elementwise",
                                "mlir::ModuleOp"> {
  let summary = "Fused ops recompute the elementwise values they read";
  let description = [{
    Runs after weft-fuse-elementwise. When a weft.fused reads a value that
    another weft.fused of the same iteration shape and the same place in
    the step (stage, microbatch, chunk) yields, the producer's body ops
    that compute it (at most `max-ops` of them, splat constants aside) are
    cloned into the reader, which then reads the producer's operands
    instead. That is done when fewer bytes move: the reader's new operands
    against the value, less the value's write when the reader was its last
    reader, less the producer's reads when it has nothing left to compute
    (as many bytes but one launch fewer also counts). The producer drops
    the results nobody reads and is erased when none is left. GELU's
    gradient, for one, then reads the bf16 product and the bias instead of
    three f32 values that its forward group kept. The recomputed values
    are bitwise the stored ones. Under ignore-stage (the planner's profile)
    weft.stage is not compared. weftc runs it wherever it fuses, unless
    --fuse-recompute off.
  }];
  let options = [
    Option<"ignoreStage", "ignore-stage", "bool", "false",
           "Recompute across weft.stage (the planner's profile)">,
    Option<"maxOps", "max-ops", "int64_t", "24",
           "At most this many ops recompute one value">,
  ];
}

def AlignProducts : Pass<"weft-align-products", "mlir::ModuleOp"> {
  let summary = "Pad a product's odd output dimension to a multiple of 8";
  let description = [{
    A weft.matmul whose result's last dimension n is at least `min-dim` and
    not a multiple of `multiple` (an LM head's vocabulary of 50257, say)
    gets its rhs padded with zero columns to the next multiple (a concat
    with a zero constant) and the real n columns sliced back, after the
    cast to f32 when that is the product's one reader (else only f32
    products are padded). GPU GEMMs then read and write 16-byte aligned
    rows in the product and in both of its gradients; the values are the
    same. A weft.softmax_cross_entropy over [that slice of] [the widening to
    f32 of] logits, through a reshape to [rows, classes], then reads the
    logits itself: the padded, 16-bit ones, with its `classes` attribute
    leaving the padding out, so neither the slice, its zero-padded gradient
    nor the casts run. Run on the forward graph before weft-autodiff (weftc
    does for --target cuda without tensor parallelism). Errors: multiple < 2
    or min-dim < 1.
  }];
  let options = [
    Option<"multiple", "multiple", "int64_t", "8",
           "Pad the output dimension to a multiple of this">,
    Option<"minDim", "min-dim", "int64_t", "1024",
           "Leave products with a smaller output dimension alone">,
  ];
}

def FuseAttention : Pass<"weft-fuse-attention", "mlir::ModuleOp"> {
  let summary = "Turn product, scale, causal mask, softmax, product into weft.attention";
  let description = [{
    Finds scaled dot-product attention written out: a weft.matmul of the
    queries by the keys (transposed by the product's flag or laid out as
    [..., D, Sk]), a multiply or divide by a scalar constant (of the
    product or of the queries before it), an add of a constant causal mask,
    a softmax over the keys, and a weft.matmul of the probabilities by the
    values, with the widening and narrowing casts mixed precision puts
    between them. It becomes one weft.attention (the keys transposed to
    [..., Sk, D] where needed), whose kernels never write the Sq x Sk
    scores. A mask counts as causal when it is 0 where key j <= query i +
    Sk - Sq and at most -1e4 (or -inf) elsewhere, as a weft.constant or a
    weft.trilu of a scalar constant; a mask of any other pattern, a scale
    that is not a constant scalar, or an intermediate with another reader
    leaves the pattern as it is. The leading dims of the three operands must
    agree (no broadcast). Run on the forward graph before weft-autodiff
    (weftc does for --target cuda, or --fuse-attention on).

    With `seq-major`, an attention whose query, key and value are each
    transposes (or chains of them) that only swap the heads ahead of the
    sequence ([..., S, H, D] to [..., H, S, D], as a projection's output is
    split into heads) takes the untransposed tensors instead, as a
    `seq_major` weft.attention, and gives its result in that layout too: a
    transpose of the result that swaps them back to [..., S, H, Dv] (the
    heads' merge) goes away. So do those transposes' gradients after
    weft-autodiff. The values are the same.
  }];
  let options = [
    Option<"seqMajor", "seq-major", "bool", "false",
           "Read q, k, v as [..., S, H, D] instead of transposing them">,
  ];
}

def MergeSliceGrads : Pass<"weft-merge-slice-grads", "mlir::ModuleOp"> {
  let summary = "Sum adjacent slice gradients as one slice gradient of a concat";
  let description = [{
    add(slice_grad(a), slice_grad(b)) of one result type, where a and b are
    the gradients of unit-step slices of blocks adjacent along one dim (and
    equal in the others), becomes slice_grad(concat(a, b)); nested concats
    along one axis become one, and a slice gradient covering its whole input
    becomes its operand. The sums of q, k and v's gradients into a packed
    projection's then cost one concat. The values are the same (each
    element was one block's value plus zeros). Run on the per-rank program
    (weftc does, after partitioning: tensor parallelism finds the strided
    q, k and v blocks through the slice gradients).
  }];
}

def MergeProducts : Pass<"weft-merge-products", "mlir::ModuleOp"> {
  let summary = "Sum 2-D products as one product of their joined operands";
  let description = [{
    A tree of weft.add of one result type whose leaves include two or more
    2-D weft.matmul of that type (the same transposes and operand element
    types, each read only by the sum, all at the sum's place in the step)
    becomes one weft.matmul of their operands joined along the contracted
    dims, plus the other leaves. The gradient of a weight used at every step
    of an unrolled recurrence is such a sum: one product per step of a few
    rows each. Applied only where the joined operands move at most twice
    the bytes of the sums they replace. The value is the same sum, in
    another order. Run on the per-rank program (weftc does, after
    partitioning: every operand is then this rank's). Under ignore-stage
    weft.stage is not compared (the planner's profile, where every forward
    op is its own unit); the new ops take the sum's place.
  }];
  let options = [
    Option<"ignoreStage", "ignore-stage", "bool", "false",
           "Merge products whatever their weft.stage (the planner's profile)">,
  ];
}

#endif // WEFT_PASSES_TD
