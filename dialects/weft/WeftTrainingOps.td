//===- WeftTrainingOps.td - Optimizer updates and persistent state -*- tablegen -*-===//
//
// A training step is one function: forward, backward (weft-autodiff), then
// these ops. Updates are functional; `weft.param_update` stores a new value
// into a parameter's persistent buffer, and the lowering makes the update
// kernels write there in place.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TRAINING_OPS_TD
#define WEFT_TRAINING_OPS_TD

def Weft_F32Tensor : RankedTensorOf<[F32]>;
def Weft_StepTensor : 0DTensorOf<[I64]>;

// The learning-rate schedule both optimizer updates take (LrSchedule.h).
defvar Weft_LrScheduleAttrs = (ins
    DefaultValuedAttr<StrAttr, "\"constant\"">:$lr_schedule,
    DefaultValuedAttr<I64Attr, "0">:$warmup_steps,
    DefaultValuedAttr<I64Attr, "0">:$decay_steps,
    DefaultValuedAttr<F64Attr, "0.0">:$min_lr_ratio);

def Weft_AdamWUpdateOp : Weft_ComputeOp<"adamw_update",
    [AllTypesMatch<["param", "grad", "m", "v", "new_param", "new_m", "new_v"]>]> {
  let summary = "One torch.optim.AdamW update of a parameter and its moments";
  let description = [{
    `step` is the update's number t >= 1 (bias correction uses it). The
    update's learning rate is `lr` scaled by the schedule of the attributes
    `lr_schedule` ("constant", "linear" or "cosine"), `warmup_steps`,
    `decay_steps` and `min_lr_ratio` at t (runtime/include/weft/runtime/
    LrSchedule.h); by default `lr` itself.
  }];
  let arguments = !con(
      (ins Weft_F32Tensor:$param, Weft_F32Tensor:$grad, Weft_F32Tensor:$m,
           Weft_F32Tensor:$v, Weft_StepTensor:$step, F64Attr:$lr,
           F64Attr:$beta1, F64Attr:$beta2, F64Attr:$eps,
           F64Attr:$weight_decay),
      Weft_LrScheduleAttrs);
  let results = (outs Weft_F32Tensor:$new_param, Weft_F32Tensor:$new_m,
                      Weft_F32Tensor:$new_v);
  let assemblyFormat = [{
    $param `,` $grad `,` $m `,` $v `,` $step attr-dict `:` type($param) `,` type($step)
  }];
  let hasVerifier = 1;
}

def Weft_SgdUpdateOp : Weft_ComputeOp<"sgd_update"> {
  let summary = "One torch.optim.SGD update (momentum buffer when momentum != 0)";
  let arguments = !con(
      (ins Weft_F32Tensor:$param, Weft_F32Tensor:$grad,
           Optional<Weft_F32Tensor>:$momentum_buffer, Weft_StepTensor:$step,
           F64Attr:$lr, DefaultValuedAttr<F64Attr, "0.0">:$momentum,
           DefaultValuedAttr<F64Attr, "0.0">:$dampening,
           DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
           DefaultValuedAttr<BoolAttr, "false">:$nesterov),
      Weft_LrScheduleAttrs);
  let results = (outs Weft_F32Tensor:$new_param,
                      Optional<Weft_F32Tensor>:$new_momentum_buffer);
  let assemblyFormat = [{
    $param `,` $grad (`,` `buffer` $momentum_buffer^)? `,` $step attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Weft_ParamUpdateOp : Weft_Op<"param_update", [MemoryEffects<[MemWrite]>]> {
  let summary = "Stores a new value into a parameter's persistent buffer";
  let description = [{
    The parameter (or optimizer state) named `name` holds `value` from the next
    step on. Reads of the parameter in the same step see the old value, so
    updates come after every read.
  }];
  let arguments = (ins StrAttr:$name, Weft_Tensor:$value);
  let assemblyFormat = "$name `,` $value attr-dict `:` type($value)";
}

#endif // WEFT_TRAINING_OPS_TD
