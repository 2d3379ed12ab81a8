//===- ModelABI.h - Symbols a compiled model exports ----------------------===//
//
// The object file weftc emits for a model exports two symbols that the
// bundle executable's main() (runtime/executor/Main.cpp) calls:
//
//   weft_model_signature  NUL-terminated JSON describing the model:
//
//     {"format_version": 1, "arena_bytes": N, "arena_alignment": 64,
//      "params":  [{"name": "fc.weight", "dtype": "f32", "shape": [10, 20]},
//                  ...],
//      "inputs":  [{"name": "x", "dtype": "f32", "shape": [1, 3]}, ...],
//      "outputs": [{"name": "y", "dtype": "f32", "shape": [1, 3]}, ...]}
//
//     dtype is one of f32 f16 bf16 f64 i64 i32 i8 u8 bool. Shapes are
//     static; [] is a scalar.
//
//   weft_model_run        runs the model once. `arena` is one zeroed
//                         allocation of at least arena_bytes (and never less
//                         than 64) bytes aligned to arena_alignment (at least
//                         64); params[i], inputs[i] and outputs[i] point to
//                         64-byte aligned, dense, row-major buffers of the
//                         i-th entry of "params", "inputs" and "outputs".
//                         The model must not write to params or inputs, nor
//                         keep state between calls outside the arena (which
//                         is not cleared between calls).
//
// Training models (`weftc compile --train`) add to the signature
//
//     "mode": "train",          (inference models: "inference" or no "mode")
//     "params":  [{"name": "fc.weight", ..., "role": "param",
//                  "trainable": true},
//                 {"name": "adamw.fc.weight.m", ..., "role":
//                 "optimizer_state"},
//                 {"name": "step", "dtype": "i64", "shape": [], "role":
//                 "step"}],
//     "inputs":  [{"name": "x", ..., "shape": [8, 4], "batch_dim": 0}, ...],
//     "outputs": [{"name": "loss", "dtype": "f32", "shape": []}, ...]
//
// and one weft_model_run call is one optimizer step on one global batch
// (shape[0] of every input): it reads the batch from `inputs`, writes the
// loss to outputs[0], and updates every params buffer (parameters, optimizer
// state, step counter) IN PLACE. The params buffers are the whole training
// state: the runtime loads them from params.rank<R>.safetensors or a
// checkpoint, saves them in checkpoints, and never interprets them. A step
// must depend only on them and on the inputs (never on the arena's contents
// at entry), so that a resumed run repeats the uninterrupted one bitwise.
//
// Programs for several devices (one SPMD program every rank runs) add
//
//     "world_size": 4,
//     "mesh": {"axes": ["dp", "tp"], "shape": [2, 2]},
//
// (their product is world_size; rank r has coordinates unravel(r, shape),
// the last axis fastest; "axes" names them and may be omitted) and, on any
// params, inputs or outputs entry,
//
//     "shard": {"dim": 0, "mesh_axes": [0], "outer": 1}
//
// meaning that the entry's "shape" is this rank's block: the whole tensor
// has shape[dim] * G along dim (G: the product of those mesh axes' sizes),
// and this rank holds block i, its coordinates over mesh_axes linearized in
// the listed order (first listed axis major). With "outer" k (default 1;
// params only) the whole dim is viewed as [k, rest] and the block takes its
// part of each of the k chunks. An input split along its rows over dp and
// along its sequence over tp (sequence parallelism with data parallelism)
// adds
//
//     "sequence_shard": {"dim": 1, "mesh_axes": [1]}
//
// to a "shard" of dim 0: its block of each of its rows' sequences. The
// runtime's part:
//   inputs   training: step s's rows [s*B, (s+1)*B) (B: the global batch,
//            the local dim 0 times G) of each --data file; this rank copies
//            its block of them. Inference: the .npy file holds the whole
//            input; each rank keeps its block.
//   params   the buffer holds this rank's block, read from (and saved to)
//            this rank's own files; entries without "shard" are replicated
//            (every rank holds the whole tensor).
//   outputs  replicated unless split: rank 0 writes them (a split output
//            put together from its group's blocks). A training loss
//            (outputs[0]) is replicated: every rank holds the whole value.
// Absent "world_size" and "mesh" mean one rank on mesh []: today's
// single-device bundles. Before the first weft_model_run the executor
// starts the ranks (weft::comm::context(), Comm.h) from these fields; the
// collective kernels (KernelABI.h) find the mesh there.
//
// Models compiled for the GPU (`weftc compile --target cuda`) add
//
//     "target": "cuda"          (absent: "cpu")
//
// and are linked with libweft_runtime_cuda: arena, params, inputs and
// outputs are then device pointers of this rank's GPU (Device.h), and the
// kernels (KernelABI.h) enqueue work on its compute stream. Such a model
// does not touch its buffers with host instructions; where a cpu model
// takes a constant's address, copies bytes or loads a scalar, it calls
//
//   void *weft_rt_constant(int64_t id, const void *host, int64_t bytes);
//       the device copy of constant `id` (its bytes are at `host`; ids are
//       the model's own, from 0), uploaded on first use and cached
//   void weft_rt_copy(void *dst, const void *src, int64_t bytes);
//       a device-to-device copy in kernel order
//   int64_t weft_rt_load_i64(const void *ptr);
//       the i64 at device address `ptr` once the kernels before are done
//       (this rank's pipeline stage)
//
// A runtime refuses a model compiled for another target (exit code 1).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_MODELABI_H
#define WEFT_RUNTIME_MODELABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

extern const char weft_model_signature[];
void weft_model_run(void *arena, void *const *params, void *const *inputs,
                    void *const *outputs);

/// The type of weft_model_run.
typedef void (*WeftModelRunFn)(void *arena, void *const *params,
                               void *const *inputs, void *const *outputs);

/// The calls of --target cuda models (libweft_runtime_cuda defines them).
void *weft_rt_constant(int64_t id, const void *host, int64_t bytes);
void weft_rt_copy(void *dst, const void *src, int64_t bytes);
int64_t weft_rt_load_i64(const void *ptr);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // WEFT_RUNTIME_MODELABI_H
