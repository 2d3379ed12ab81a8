// RUN: weft-opt %s -split-input-file -weft-annotate-sharding="dp=3" -verify-diagnostics
// RUN: not weft-opt %s -split-input-file -weft-annotate-sharding="dp=0" 2>&1 | FileCheck %s --check-prefix=DEGREE
// DEGREE: parallel degrees must be at least 1, got dp=0 tp=1
// RUN: not weft-opt %s -split-input-file -weft-annotate-sharding="zero=2" 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: --zero needs data parallelism (dp > 1)
// RUN: not weft-opt %s -split-input-file -weft-annotate-sharding="microbatches=0" 2>&1 | FileCheck %s --check-prefix=MB0
// MB0: the number of microbatches must be at least 1, got 0
// RUN: not weft-opt %s -split-input-file -weft-annotate-sharding="dp=2 microbatches=3" 2>&1 | FileCheck %s --check-prefix=MB
// MB: the batch of input 'x' (8 rows) does not split into dp=2 x microbatches=3 equal parts
// RUN: not weft-opt %s -split-input-file -weft-annotate-sharding="tp=2 tp-flop-seconds=-1" 2>&1 | FileCheck %s --check-prefix=PRICE
// RUN: not weft-opt %s -split-input-file -weft-annotate-sharding="tp=2 tp-flop-seconds=1e-9 tp-memory=inf" 2>&1 | FileCheck %s --check-prefix=PRICE
// PRICE: the tensor-parallel costs (tp-flop-seconds, tp-byte-seconds, tp-latency, tp-memory) must be finite and not negative

// expected-error @+1 {{the batch of input 'x' (8 rows) does not split into dp=3 equal parts}}
func.func @main(%x: tensor<8x16xf32> {weft.name = "x"}) -> tensor<8x16xf32> {
  return %x : tensor<8x16xf32>
}

// -----

// expected-error @+1 {{input 'step' is a scalar: data parallelism splits every input along its batch dimension}}
func.func @main(%s: tensor<f32> {weft.name = "step"}) -> tensor<f32> {
  return %s : tensor<f32>
}
