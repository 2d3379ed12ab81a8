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
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_MODELABI_H
#define WEFT_RUNTIME_MODELABI_H

#ifdef __cplusplus
extern "C" {
#endif

extern const char weft_model_signature[];
void weft_model_run(void *arena, void *const *params, void *const *inputs,
                    void *const *outputs);

/// The type of weft_model_run.
typedef void (*WeftModelRunFn)(void *arena, void *const *params,
                               void *const *inputs, void *const *outputs);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // WEFT_RUNTIME_MODELABI_H
