// RUN: weft-opt %s -split-input-file -verify-diagnostics

func.func @too_few_buffers(%b: !weftrt.buffer) {
  // expected-error @+1 {{describes 2 tensors but gets 1 buffers}}
  weftrt.launch "unary"(%b) {desc = array<i64: 2, 0, 1, 4, 0, 1, 4, 1, 0>}
  return
}

// -----

func.func @truncated(%b: !weftrt.buffer) {
  // expected-error @+1 {{has a malformed descriptor}}
  weftrt.launch "unary"(%b) {desc = array<i64: 1, 0, 3, 4>}
  return
}

// -----

func.func @attr_count(%b: !weftrt.buffer) {
  // expected-error @+1 {{descriptor declares 2 attributes but holds 1}}
  weftrt.launch "unary"(%b) {desc = array<i64: 1, 0, 1, 4, 2, 0>}
  return
}
