//===- Main.cpp - main() of a bundle's executable -------------------------===//
//
// Linked (as weft_runtime_main) with the object file weftc emits for a
// model, which defines weft_model_signature and weft_model_run.
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/Executor.h"
#include "weft/runtime/ModelABI.h"

int main(int argc, char **argv) {
  return weft::executorMain(argc, argv, weft_model_signature, weft_model_run);
}
