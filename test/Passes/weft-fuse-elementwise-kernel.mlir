// RUN: weft-opt %s -weft-fuse-elementwise -weft-lower-to-runtime | FileCheck %s

// The program weft_k_fused runs (KernelABI.h): 3 operands, 2 results, the
// immediate 0.5, then (opcode, a, b, dtype) per instruction: cast r0 (r4),
// add r4 r1 (r5), mul r5 r3 (r6), tanh r6 (r7), add r7 r2 (r8), cast r8 to
// bf16 (r9); the results are r5 and r9.
// CHECK: weftrt.launch "fused"
// CHECK-SAME: 3, 2, 1, 4602678819172646912, 6, 32, 0, -1, 0, 16, 4, 1, 0, 18, 5, 3, 0, 4, 6, -1, 0, 16, 7, 2, 0, 32, 8, -1, 2, 5, 9>}
func.func @main(%x: tensor<4x8xbf16>, %b: tensor<8xf32>, %r: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xbf16>) {
  %c = weft.constant dense<0.5> : tensor<f32>
  %0 = weft.cast %x : tensor<4x8xbf16> to tensor<4x8xf32>
  %1 = weft.add %0, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = weft.mul %1, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %3 = weft.tanh %2 : tensor<4x8xf32>
  %4 = weft.add %3, %r : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = weft.cast %4 : tensor<4x8xf32> to tensor<4x8xbf16>
  return %1, %5 : tensor<4x8xf32>, tensor<4x8xbf16>
}
