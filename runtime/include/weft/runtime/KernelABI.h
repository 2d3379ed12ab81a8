//===- KernelABI.h - Contract between compiled models and the runtime ----===//
//
// weftc emits one call per graph op into the model's object file. Every call
// goes to a C function of this runtime with the same signature:
//
//   extern "C" void weft_k_<kernel>(void *const *bufs, const int64_t *desc);
//
// `bufs` holds one pointer per tensor: the op's operands first, then its
// results, in op order. `desc` describes those tensors and the op's
// attributes, encoded as 64-bit integers:
//
//   desc[0]                      T, the number of tensors (operands+results)
//   per tensor t in [0, T):      dtype code (WeftDType), rank r, dims[r]
//   then                         A, the number of attributes
//   then                         A attribute values
//
// Floating-point attributes travel as the bit pattern of an IEEE double
// (see weftAttrToDouble). All tensors are dense, row-major, contiguous.
// Booleans are one byte each (0 or 1).
//
// The compiled model itself exports two symbols the executor calls:
//
//   extern "C" const char weft_model_signature[];   // NUL-terminated JSON
//   extern "C" void weft_model_run(void *arena, void *const *params,
//                                  void *const *inputs, void *const *outputs);
//
// The kernel list, with each one's attribute layout, is in WEFT_KERNELS
// (compute, runtime/kernels/cpu) and WEFT_COMM_KERNELS (collectives,
// runtime/comm) below: the compiler (dialects/weft/RuntimeLowering.cpp,
// passes/LowerToRuntime.cpp) and the kernels both follow it.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELABI_H
#define WEFT_RUNTIME_KERNELABI_H

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Element type codes shared by the compiler, kernels and tensor I/O.
enum WeftDType {
  WEFT_F32 = 0,
  WEFT_F16 = 1,
  WEFT_BF16 = 2,
  WEFT_F64 = 3,
  WEFT_I64 = 4,
  WEFT_I32 = 5,
  WEFT_I8 = 6,
  WEFT_U8 = 7,
  WEFT_BOOL = 8,
};

/// Operation codes of weft_k_unary.
enum WeftUnaryOp {
  WEFT_UNARY_NEG = 0,
  WEFT_UNARY_SQRT = 1,
  WEFT_UNARY_EXP = 2,
  WEFT_UNARY_LOG = 3,
  WEFT_UNARY_TANH = 4,
  WEFT_UNARY_ERF = 5,
  WEFT_UNARY_RELU = 6,
  WEFT_UNARY_SIGMOID = 7,
  WEFT_UNARY_NOT = 8,
  WEFT_UNARY_SIN = 9,
  WEFT_UNARY_COS = 10,
  WEFT_UNARY_FLOOR = 11,
  WEFT_UNARY_CEIL = 12,
  WEFT_UNARY_ROUND = 13,
  WEFT_UNARY_ATAN = 14,
};

/// Operation codes of weft_k_binary.
enum WeftBinaryOp {
  WEFT_BINARY_ADD = 0,
  WEFT_BINARY_SUB = 1,
  WEFT_BINARY_MUL = 2,
  WEFT_BINARY_DIV = 3,
  WEFT_BINARY_POW = 4,
  WEFT_BINARY_MAX = 5,
  WEFT_BINARY_MIN = 6,
  WEFT_BINARY_AND = 7,
  WEFT_BINARY_OR = 8,
  WEFT_BINARY_REM = 9, // truncated remainder: C's fmod and %
};

/// Operation codes of weft_k_compare.
enum WeftCompareOp {
  WEFT_CMP_EQ = 0,
  WEFT_CMP_LT = 1,
  WEFT_CMP_GT = 2,
  WEFT_CMP_LE = 3,
  WEFT_CMP_GE = 4,
};

/// Operation codes of weft_k_reduce.
enum WeftReduceOp {
  WEFT_REDUCE_SUM = 0,
  WEFT_REDUCE_MEAN = 1,
  WEFT_REDUCE_MAX = 2,
};

/// Instruction codes of weft_k_fused: a unary op (WeftUnaryOp code, NOT
/// excluded), a binary op (WEFT_FUSED_BINARY + WeftBinaryOp code, ADD to MIN)
/// or a copy (WEFT_FUSED_COPY: a cast when the instruction's dtype differs
/// from its operand's).
enum WeftFusedOp {
  WEFT_FUSED_BINARY = 16,
  WEFT_FUSED_COPY = 32,
};

/// Limits of one weft_k_fused launch (the compiler's fusion keeps to them).
enum WeftFusedLimits {
  WEFT_FUSED_MAX_OPERANDS = 16,
  WEFT_FUSED_MAX_RESULTS = 8,
  WEFT_FUSED_MAX_REGISTERS = 64,
};

/// Reduction codes of weft_k_softmax_xent.
enum WeftLossReduction {
  WEFT_LOSS_NONE = 0,
  WEFT_LOSS_MEAN = 1,
  WEFT_LOSS_SUM = 2,
};

/// Kernels and their attribute layouts. `s` is the number of spatial dims
/// (rank - 2) of NC... tensors. Tensors listed as "a, b -> c" are operands
/// then results.
///
/// unary        x -> y                op (WeftUnaryOp)
/// binary       a, b -> c             op (WeftBinaryOp); numpy broadcasting
/// compare      a, b -> c(bool)       op (WeftCompareOp); numpy broadcasting
/// where        cond, x, y -> z       (none); numpy broadcasting of all three
/// cast         x -> y                (none); converts x's dtype to y's
/// matmul       a, b -> c             transpose_a, transpose_b; rank >= 2,
///                                    leading (batch) dims broadcast
/// conv         x, w, [bias] -> y     has_bias, group, strides[s],
///                                    pads[2s] (all begins, then all ends),
///                                    dilations[s]
/// max_pool     x -> y                kernel[s], strides[s], pads[2s],
///                                    dilations[s]; y's dims fix ceil_mode
/// avg_pool     x -> y                count_include_pad, kernel[s],
///                                    strides[s], pads[2s]
/// batch_norm   x, scale, bias, mean, var -> y      epsilon (double bits)
/// layer_norm   x, scale, [bias] -> y axis (>= 0), epsilon (double bits),
///                                    has_bias; scale/bias hold
///                                    prod(x.dims[axis:]) elements
/// softmax      x -> y                axis (>= 0), log (0 or 1)
/// reduce       x -> y                op (WeftReduceOp), naxes, axes[naxes]
///                                    (>= 0, ascending); y's element count
///                                    is x's divided by the reduced extents
/// transpose    x -> y                perm[rank]
/// concat       x0..xn-1 -> y         axis (>= 0)
/// split        x -> y0..yn-1         axis (>= 0); piece sizes from y dims
/// slice        x -> y                starts[rank], steps[rank]; start is
///                                    the index of the first element taken
///                                    (already clamped), step != 0; y's dims
///                                    give the count per dim
/// gather       data, indices -> y    axis (>= 0); indices i64 or i32, may
///                                    be negative (counted from the end);
///                                    out of range aborts with a message
/// expand       x -> y                (none); numpy broadcast of x to y
/// trilu        x -> y                upper (0/1), k
/// softmax_xent scores, labels, [weights] -> loss, [log_prob]
///                                    reduction (WeftLossReduction),
///                                    has_ignore_index, ignore_index,
///                                    has_weights, has_log_prob, [classes]:
///                                    scores [N, C, d...] are f32, bf16 or
///                                    f16 (computed in f32); loss is f32,
///                                    log_prob has the scores' dtype. Only
///                                    the first `classes` (1 <= classes <=
///                                    C; C when the attribute is left out)
///                                    entries of dim 1 are classes, the
///                                    rest padding that no loss reads
///                                    (log_prob there is -inf); labels lie
///                                    in [0, classes), weights hold
///                                    `classes` values
/// copy         x -> y                (none); y = x, same byte size
/// fused        x0..xn-1 -> y0..ym-1  n, m, k, imm[k] (double bits), q,
///                                    q x (opcode, a, b, dtype), out[m]:
///                                    a chain of elementwise ops in one
///                                    pass over the elements of the
///                                    results, which all have one shape
///                                    (the iteration shape). Registers
///                                    0..n-1 hold x_i's element (numpy
///                                    broadcasting of x_i to the iteration
///                                    shape), n..n+k-1 the immediates, and
///                                    n+k+j instruction j's result; a and b
///                                    name earlier registers (b is -1 for
///                                    unary ops and copies). Every register
///                                    holds an f32; each instruction
///                                    computes as the unary/binary kernel
///                                    does for f32 tensors, then rounds to
///                                    its dtype (f32, bf16 or f16) as cast
///                                    does. y_j = register out[j], stored
///                                    in y_j's dtype. Operands and results
///                                    are f32, bf16 or f16; a result may
///                                    share the buffer of an operand of the
///                                    same shape and dtype (each element is
///                                    read before it is written). pow takes
///                                    the binary kernel's shortcuts for an
///                                    exponent of 2, 1, 3, 0.5 or -1 where
///                                    the exponent is the same for every
///                                    element (an immediate, a one-element
///                                    operand, or made from those only).
///                                    Limits: WeftFusedLimits, registers
///                                    counting n + k + q; m >= 1
/// attention    q, k, v -> o, lse     scale (double bits), causal (0/1):
///                                    scaled dot-product attention without
///                                    the score matrix in memory. q is
///                                    [..., Sq, D], k [..., Sk, D], v
///                                    [..., Sk, Dv], o [..., Sq, Dv], lse
///                                    [..., Sq]; the leading dims are the
///                                    same for all five (any number, B =
///                                    their product). q, k, v and o have
///                                    one dtype (f32, bf16 or f16), lse is
///                                    f32. s_ij = scale * (q_i . k_j); with
///                                    causal, query i sees key j only when
///                                    j <= i + Sk - Sq. o_i = sum_j p_ij v_j
///                                    with p_i = softmax of s_i over the
///                                    keys seen, accumulated in f32 and
///                                    rounded once to o's dtype; lse_i =
///                                    log(sum_j e^s_ij) over them (-inf and
///                                    o_i = 0 where a query sees no key).
///                                    An optional third attribute seq_major
///                                    (1): q [..., Sq, H, D], k [..., Sk, H,
///                                    D], v [..., Sk, H, Dv], o [..., Sq, H,
///                                    Dv], lse [..., H, Sq]: each (batch,
///                                    head) is a problem, its rows H * D
///                                    (H * Dv) elements apart
///
/// Backward kernels (gradients of the ops above; all f32 unless said):
/// attention_grad q, k, v, o, lse, do -> dq, dk, dv
///                                    scale, causal: attention's gradients
///                                    (o and lse from the forward call);
///                                    dq, dk, dv have the shapes of q, k, v
///                                    and all nine tensors but lse their
///                                    dtype; computed in f32, rounded once;
///                                    seq_major as attention's
/// topk         x -> values, indices  axis, largest; along axis, the k
///                                    (values' extent) first elements by
///                                    value (largest or smallest first; NaN
///                                    above every number; ties in index
///                                    order), indices i64
/// dropout      x, step, offsets -> y, mask
///                                    ratio (double bits), seed, stream,
///                                    global dims[rank]; y = x * mask /
///                                    (1 - ratio), mask (bool) keeps the
///                                    elements whose draw (DropoutDraw.h:
///                                    Philox4x32-10 of the element's
///                                    position in the whole tensor, step
///                                    and stream) is >= ratio; offsets
///                                    (i64 [rank]) is where this block
///                                    starts in the whole tensor; f32, f64
/// random       like, step, offsets -> y
///                                    distribution (0 uniform, 1 normal),
///                                    a, b (double bits), seed, stream,
///                                    global dims[rank]; y's elements drawn
///                                    as RandomDraw.h says from their
///                                    positions in the whole tensor (uniform
///                                    in [a, b), normal of mean a and
///                                    deviation b); `like` has y's shape (its
///                                    values are not read); offsets as
///                                    dropout's; f32, f64
/// scatter_add  indices, updates -> y axis; y = 0, then for every index
///                                    position p: y[.., indices[p], ..] +=
///                                    updates[.., p, ..] (gather's gradient;
///                                    negative indices count from the end)
/// conv_grad_input  dy, w -> dx       group, strides[s], pads[2s],
///                                    dilations[s]
/// conv_grad_weight x, dy -> dw       group, strides[s], pads[2s],
///                                    dilations[s]
/// max_pool_grad    x, dy -> dx       kernel[s], strides[s], pads[2s],
///                                    dilations[s]; each window's gradient
///                                    goes to its first maximum (PyTorch)
/// avg_pool_grad    dy -> dx          count_include_pad, kernel[s],
///                                    strides[s], pads[2s]
/// layer_norm_grad  x, scale, dy -> dx, dscale, dbias
///                                    axis (>= 0), epsilon (double bits)
/// softmax_grad     y, dy -> dx       axis (>= 0), log (0 or 1); y is the
///                                    forward op's output
/// softmax_xent_grad scores, labels, [weights], dloss -> dscores
///                                    reduction, has_ignore_index,
///                                    ignore_index, has_weights, [classes]:
///                                    dloss (f32) has the forward loss's
///                                    shape; dscores has the scores' shape
///                                    and dtype (f32, bf16 or f16,
///                                    computed in f32 and rounded once)
///                                    and is 0 in the padding entries
/// slice_grad   dy -> dx              starts[rank], steps[rank]; dx = 0
///                                    except dx[start + i*step] = dy[i]
///
/// Optimizer updates (f32 tensors; `step` is the i64 scalar number t >= 1 of
/// this update; results may share buffers with the operands they replace):
/// adamw        param, grad, m, v, step -> param', m', v'
///                                    lr, beta1, beta2, eps, weight_decay
///                                    (double bits); torch.optim.AdamW
/// sgd          param, grad, [buf], step -> param', [buf']
///                                    lr, momentum, dampening, weight_decay
///                                    (double bits), nesterov, has_buffer;
///                                    torch.optim.SGD (the buffer exists
///                                    when momentum != 0)
///
/// Collectives (runtime/comm; Comm.h). Every rank of the SPMD program calls
/// them in the same order. `axes` are mesh axes (naxes, then axes[naxes]):
/// the group is the ranks that differ from this one only in those axes,
/// and a rank's group index is its coordinates over them linearized in the
/// listed order, first axis major (the shard dialect's grid_axes). `g` is
/// the group's size; a group of one rank copies. x and y have one dtype;
/// reductions (0 sum, 1 max, 2 min, 3 avg = sum / g) take f32, f64, bf16
/// (reduced in f32, rounded once), i64 and i32, the rest any dtype. The
/// kernels reach the mesh through weft::comm::context(), which the
/// executor sets up from the signature before the first weft_model_run;
/// without it the mesh is [] and every group has one rank. A shape that
/// does not fit the group is a fatal error naming the kernel and group.
/// all_reduce   x -> y                reduction, naxes, axes; y = the
///                                    reduction of every member's x (same
///                                    shape; y may be x: in place)
/// all_gather   x -> y                dim, naxes, axes; y.dim(dim) =
///                                    x.dim(dim) * g: the members' x in
///                                    group-index order along dim
/// reduce_scatter x -> y              reduction, dim, naxes, axes;
///                                    y.dim(dim) = x.dim(dim) / g: group
///                                    index i keeps block i of the reduction
/// all_to_all   x -> y                split_dim, concat_dim, naxes, axes;
///                                    block j of x along split_dim goes to
///                                    group index j; y joins the blocks
///                                    received, in group-index order, along
///                                    concat_dim (y.dim(split_dim) /= g,
///                                    then y.dim(concat_dim) *= g)
/// broadcast    x -> y                root (a group index), naxes, axes;
///                                    y = root's x (y may be x)
/// all_slice    x -> y                dim, naxes, axes; y = this rank's
///                                    block (its group index) of x along
///                                    dim; no communication
/// mesh_offset  y                     block, naxes, axes; y (one i64) =
///                                    this rank's group index * block
/// send         x                     peer, tag, naxes, axes: x to group
///                                    index `peer` (not this rank), which
///                                    receives it with the recv of the same
///                                    tag; returns once x may be reused
/// recv         y                     peer, tag, naxes, axes: y from `peer`
/// send_start   x                     slot, peer, tag, naxes, axes; x may be
///                                    reused at once (copied); comm_wait(x)
///                                    on the slot finishes the send
/// recv_start   y                     slot, peer, tag, naxes, axes; y holds
///                                    the message after comm_wait(y)
/// all_reduce_start     x -> y        slot, reduction, naxes, axes
/// all_gather_start     x -> y        slot, dim, naxes, axes
/// reduce_scatter_start x -> y        slot, reduction, dim, naxes, axes
/// comm_progress (no tensors, no attributes): polls every started slot so
///                                    the transfers move while compute
///                                    kernels run between a start and its
///                                    wait
/// all_to_all_start     x -> y        slot, split_dim, concat_dim, naxes,
///                                    axes
/// broadcast_start      x -> y        slot, root, naxes, axes
///                                    start the collective above and
///                                    return. x may be overwritten as soon
///                                    as the start returns (what is still
///                                    needed is copied); y holds the result
///                                    only after the comm_wait of the same
///                                    slot and must not be read or written
///                                    before it. A slot holds one collective
///                                    at a time; every slot started in a
///                                    weft_model_run call must be waited for
///                                    in it (the executor checks).
/// reduce_scatter_pieces x_1..x_n -> y  reduction, naxes, axes: a bucket
///                                    without packing; each x_i (flat)
///                                    is the group's g blocks of k_i
///                                    elements; y (sum of the k_i) is,
///                                    piece after piece, block (this
///                                    rank's group index) of the
///                                    reduction of every rank's x_i
/// all_gather_pieces x -> y_1..y_n    naxes, axes: its inverse; block j of
///                                    y_i is group index j's slice i of x
/// reduce_scatter_pieces_start        slot, reduction, naxes, axes; the
///                                    x_i are read until the comm_wait(y)
/// all_gather_pieces_start            slot, naxes, axes; x may be reused
///                                    at once; comm_wait(y_1) finishes
///                                    every y_i. CPU runtime only.
/// comm_wait    y [-> y2]             slot; finishes the collective started
///                                    on `slot`, whose result buffer y must
///                                    be: y holds the result in place. With
///                                    a second tensor y2 (as an op result),
///                                    y2 is y's buffer; a different buffer
///                                    gets a copy of y
// clang-format off
#define WEFT_KERNELS(X)                                                        \
  X(unary) X(binary) X(compare) X(where) X(cast) X(matmul) X(conv)             \
  X(max_pool) X(avg_pool) X(batch_norm) X(layer_norm) X(softmax) X(reduce)     \
  X(transpose) X(concat) X(split) X(slice) X(gather) X(expand) X(trilu)        \
  X(softmax_xent) X(copy) X(scatter_add) X(conv_grad_input)                    \
  X(conv_grad_weight) X(max_pool_grad) X(avg_pool_grad) X(layer_norm_grad)     \
  X(softmax_grad) X(softmax_xent_grad) X(slice_grad) X(adamw) X(sgd)      \
  X(fused) X(attention) X(attention_grad) X(topk) X(dropout) X(random)
// clang-format on

// clang-format off
#define WEFT_COMM_KERNELS(X)                                                   \
  X(all_reduce) X(all_gather) X(reduce_scatter) X(all_to_all) X(broadcast)     \
  X(all_slice) X(all_reduce_start) X(all_gather_start)                         \
  X(reduce_scatter_start) X(comm_wait) X(mesh_offset) X(send) X(recv)        \
  X(send_start) X(recv_start) X(all_to_all_start) X(broadcast_start)         \
  X(comm_progress) X(reduce_scatter_pieces) X(all_gather_pieces)            \
  X(reduce_scatter_pieces_start) X(all_gather_pieces_start)
// clang-format on

#define WEFT_DECLARE_KERNEL(name)                                              \
  void weft_k_##name(void *const *bufs, const int64_t *desc);
WEFT_KERNELS(WEFT_DECLARE_KERNEL)
WEFT_COMM_KERNELS(WEFT_DECLARE_KERNEL)
#undef WEFT_DECLARE_KERNEL

/// Bytes per element of a dtype code; 0 for an unknown code.
static inline int64_t weftDTypeSize(int64_t dtype) {
  switch (dtype) {
  case WEFT_F32:
  case WEFT_I32:
    return 4;
  case WEFT_F16:
  case WEFT_BF16:
    return 2;
  case WEFT_F64:
  case WEFT_I64:
    return 8;
  case WEFT_I8:
  case WEFT_U8:
  case WEFT_BOOL:
    return 1;
  default:
    return 0;
  }
}

/// Name of a dtype code in signatures, manifests and messages ("f32",
/// "bool", ...); "unknown" for an unknown code.
static inline const char *weftDTypeName(int64_t dtype) {
  switch (dtype) {
  case WEFT_F32:
    return "f32";
  case WEFT_F16:
    return "f16";
  case WEFT_BF16:
    return "bf16";
  case WEFT_F64:
    return "f64";
  case WEFT_I64:
    return "i64";
  case WEFT_I32:
    return "i32";
  case WEFT_I8:
    return "i8";
  case WEFT_U8:
    return "u8";
  case WEFT_BOOL:
    return "bool";
  default:
    return "unknown";
  }
}

/// Encodes and decodes a floating-point attribute.
static inline int64_t weftDoubleToAttr(double v) {
  int64_t bits;
  memcpy(&bits, &v, sizeof bits);
  return bits;
}
static inline double weftAttrToDouble(int64_t bits) {
  double v;
  memcpy(&v, &bits, sizeof v);
  return v;
}

#ifdef __cplusplus
} // extern "C"
#endif

#endif // WEFT_RUNTIME_KERNELABI_H
