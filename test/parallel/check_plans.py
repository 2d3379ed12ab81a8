"""Every parallel plan follows the single-device training trajectory.

Exports MODEL as test/train/check_training.py does (same weights, same
rows), trains it 10 steps on one device with weft, then compiles and trains
it under each PLAN on real MPI ranks (`weft train -n N`, mpirun underneath)
and requires, per plan:
  - per-step losses equal to the single-device ones within 1e-5 relative;
  - `weft export` of the final checkpoint writes, for every trained
    parameter, exactly the tensor the rank state files put together give
    (split parameters are joined by the exporter itself);
  - the final parameters and optimizer state (every rank's state file in
    the checkpoint, split tensors put back together along their signature's
    "shard" dim) equal to the single-device checkpoint within 1e-5 relative
    to each tensor's largest magnitude (f32 sums in another order differ in
    the last bits). Under AdamW, elements whose gradient is rounding noise
    (second moment <= 1e-12: the attention key bias, whose true gradient is
    zero) step by +-lr on the noise's sign, so they are left out, and
    counted in the report.

A PLAN written A/B trains the first half of the steps under plan A and
resumes its checkpoint under plan B (another bundle, maybe another number
of ranks) for the rest: the same requirements hold for the whole run.

usage: /usr/bin/python3 check_plans.py MODEL OPTIMIZER WORKDIR [--shuffle SEED] [--all FLAGS]
           PLAN [PLAN ...]
  MODEL: mlp | causal_lm | dropout_lm | cnn | bn_cnn | llama | mobile_cnn | unet | rnn_lm
         | packed_lm | seq2seq | vit
  OPTIMIZER: adamw | sgd
  PLAN:  comma-separated weftc flags, e.g. dp=2  dp=4,zero=3
         tp=2,sequence-parallel; or A/B (resumed under B), e.g. dp=2,zero=2/tp=2
         (an empty side is one device: dp=2/ )
  --all FLAGS: weftc flags (as a PLAN writes them) of every bundle, the
         single-device one included, e.g. lr-schedule=cosine,decay-steps=8
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "train"))
import check_training as ct  # noqa: E402

TOLERANCE = 1e-5
STEPS = ct.STEPS
read_safetensors = ct.read_safetensors


def export(name, work):
    """The model of check_training.py, exported as it exports it."""
    _, _, _, path, data_args = ct.export_model(name, work)
    return path, data_args


def train(bundle, data_args, work, ranks, steps=STEPS, resume=False):
    """Trains to `steps` (resuming WORK/ckpt when `resume`); the losses of
    every step so far (the metrics file keeps a resumed run's earlier
    lines)."""
    ckpt = os.path.join(work, "ckpt")
    if not resume:
        shutil.rmtree(ckpt, ignore_errors=True)
    metrics = os.path.join(work, "metrics.jsonl")
    cmd = ["weft", "train", bundle, "-n", str(ranks), *data_args, "--steps",
           str(steps), "--metrics", metrics, "--checkpoint-dir", ckpt]
    if ct.SHUFFLE is not None:
        cmd += ["--shuffle", str(ct.SHUFFLE)]
    ct.run(cmd + (["--resume"] if resume else []))
    losses = [json.loads(line)["loss"] for line in open(metrics)]
    return losses, ckpt


def plan_flags(plan):
    """The ranks and weftc flags of a comma-separated plan ("" is one
    device; "auto,devices=4" lets the cost model choose for 4)."""
    degrees = dict(kv.split("=") if "=" in kv else (kv, "")
                   for kv in plan.split(",") if kv)
    ranks = int(degrees.get("dp", 1)) * int(degrees.get("tp", 1)) * \
        int(degrees.get("pp", 1))
    # --auto chooses the degrees: --devices says how many ranks.
    ranks = int(degrees.get("devices", ranks))
    flags = []
    for k, v in degrees.items():
        flags += [f"--{k}", v] if v else [f"--{k}"]
    return ranks, flags


def final_state(ckpt, bundle, ranks, steps=STEPS):
    """name -> whole tensor, from every rank's checkpoint of step `steps`
    (rank R's state file is CKPT/step-*/state.rank<R>.safetensors)."""
    step = f"step-{steps:08d}"
    if ranks == 1:
        return read_safetensors(os.path.join(ckpt, step, "state.safetensors"))
    sig = json.loads(subprocess.run(
        [os.path.join(bundle, "model"), "--print-signature"],
        capture_output=True, text=True, check=True).stdout)
    mesh = sig["mesh"]["shape"]
    shards = {p["name"]: p.get("shard") for p in sig["params"]}
    # A pipeline's parameter lives on the ranks of its stage.
    stages = {p["name"]: p.get("stage") for p in sig["params"]}
    pp_axis = sig.get("pipeline_axis")

    def live(name, r):
        if stages.get(name) is None or pp_axis is None:
            return True
        return int(np.unravel_index(r, mesh)[pp_axis]) == stages[name]
    per_rank = [read_safetensors(os.path.join(ckpt, step,
                                              f"state.rank{r}.safetensors"))
                for r in range(ranks)]
    state = {}
    for name, shard in shards.items():
        if not shard:
            state[name] = next(per_rank[r][name] for r in range(ranks)
                               if live(name, r))
            continue
        # Blocks in group-index order: coordinates over the shard's axes.
        blocks = {}
        for r in range(ranks):
            if not live(name, r):
                continue
            coords = np.unravel_index(r, mesh)
            index = 0
            for a in shard["mesh_axes"]:
                index = index * mesh[a] + int(coords[a])
            blocks[index] = per_rank[r][name]
        # A strided split ("outer" blocks of the dim) interleaves.
        outer, dim = shard.get("outer", 1), shard["dim"]
        parts = [blocks[i] for i in sorted(blocks)]
        views = [p.reshape(p.shape[:dim] + (outer, p.shape[dim] // outer)
                           + p.shape[dim + 1:]) for p in parts]
        whole = np.concatenate(views, axis=dim + 1)
        state[name] = whole.reshape(whole.shape[:dim] + (-1,)
                                    + whole.shape[dim + 2:])
    return state


def export_mismatches(bundle, ckpt, work, state):
    """Names of trained parameters `weft export` writes differently from
    `state` (the checkpoint's tensors joined here)."""
    out = os.path.join(work, "trained.onnx")
    ct.run(["weft", "export", bundle, "--checkpoint", ckpt, "-o", out])
    model = onnx.load(out)
    exported = {t.name: onnx.numpy_helper.to_array(t)
                for t in model.graph.initializer}
    bad = []
    for k, v in state.items():
        if k.startswith(("adamw.", "sgd.")) or k == "step" or k not in exported:
            continue
        if not np.array_equal(exported[k], v):
            bad.append(k)
    trained = [k for k in state if k in exported]
    if not trained:
        bad.append("(no trained parameter in the export)")
    return bad


def compare_state(ref_state, state):
    """The largest difference of `state` from `ref_state`, relative to each
    tensor's largest magnitude (inf for a missing or misshapen tensor or a
    differing integer one), and the number of AdamW elements left out."""
    state_err = 0.0
    noise_only = 0
    worst = None
    for k, v in ref_state.items():
        if k not in state or state[k].shape != v.shape:
            state_err = float("inf")
            print(f"  {k}: missing or shaped {state.get(k, np.empty(0)).shape}"
                  f" instead of {v.shape}")
            continue
        if v.dtype.kind == "f":
            scale = max(float(np.max(np.abs(v))), 1e-12)
            diff = np.abs(state[k].astype(np.float64) - v)
            # AdamW moves an element whose gradient is pure rounding noise
            # (mathematically zero: attention's key bias) by +-lr whatever
            # the noise's size, so only elements with a real gradient
            # (second moment above 1e-12) must agree.
            v2 = ref_state.get("adamw.v." + k)
            if v2 is not None:
                keep = v2 > 1e-12
                noise_only += int(np.sum(~keep))
                diff = np.where(keep, diff, 0.0)
            err = float(np.max(diff)) / scale
            if err > state_err:
                state_err, worst = err, k
        elif not np.array_equal(state[k], v):
            state_err = float("inf")
    if state_err > TOLERANCE and worst is not None:
        print(f"  largest difference: {worst} ({state_err:.1e} of its largest magnitude)")
    return state_err, noise_only


def main():
    name, optimizer, work = sys.argv[1], sys.argv[2], sys.argv[3]
    plans = sys.argv[4:]
    common = []
    if plans[:1] == ["--shuffle"]:
        # Every run reads each epoch's rows in the order of this seed.
        ct.SHUFFLE = int(plans[1])
        plans = plans[2:]
    if plans[:1] == ["--all"]:
        # Flags of every bundle, the single-device one included.
        common = plan_flags(plans[1])[1]
        plans = plans[2:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    onnx_path, data_args = export(name, work)
    _, flags = ct.make_optimizer(optimizer, [torch.zeros(1)])
    flags += common

    single = os.path.join(work, "single")
    os.makedirs(single)
    ct.run(["weftc", "compile", onnx_path, "-o", os.path.join(single, "b"),
            "--train", *flags])
    ref, ref_dir = train(os.path.join(single, "b"), data_args, single, 1)
    ref_state = final_state(ref_dir, os.path.join(single, "b"), 1)

    ok = True
    for plan in plans:
        pw = os.path.join(work, plan.replace(",", "_").replace("=", "")
                          .replace("/", "-then-"))
        os.makedirs(pw)
        first, resumed, then = plan.partition("/")
        if resumed:
            # The first half under `first`, the rest resumed under `then`.
            first_ranks, first_flags = plan_flags(first)
            ct.run(["weftc", "compile", onnx_path, "-o",
                    os.path.join(pw, "first"), "--train", *flags,
                    *first_flags])
            train(os.path.join(pw, "first"), data_args, pw, first_ranks,
                  steps=STEPS // 2)
        ranks, later_flags = plan_flags(then if resumed else first)
        bundle = os.path.join(pw, "b")
        ct.run(["weftc", "compile", onnx_path, "-o", bundle, "--train",
                *flags, *later_flags])
        got, step_dir = train(bundle, data_args, pw, ranks,
                              resume=bool(resumed))
        loss_err = max(abs(a - b) / max(abs(b), 1e-12)
                       for a, b in zip(got, ref)) if len(got) == STEPS else 1
        state = final_state(step_dir, bundle, ranks)
        state_err, noise_only = compare_state(ref_state, state)
        export_bad = export_mismatches(bundle, step_dir, pw, state)
        if resumed:
            # The later bundle exports the first plan's checkpoint too.
            half = STEPS // 2
            export_bad += [k + f" (step {half})" for k in export_mismatches(
                bundle, os.path.join(step_dir, f"step-{half:08d}"), pw,
                final_state(step_dir, os.path.join(pw, "first"), first_ranks,
                            half))]
        good = loss_err <= TOLERANCE and state_err <= TOLERANCE and \
            not export_bad
        ok = ok and good
        print(f"{name}/{optimizer} {plan:14s} ranks {ranks}: losses "
              f"{loss_err:.1e}, final state {state_err:.1e}, export "
              + ("exact" if not export_bad else
                 "differs in " + ", ".join(export_bad))
              + f" ({'ok' if good else 'FAILED'}, limit {TOLERANCE})"
              + (f"; {noise_only} AdamW elements with noise-only gradients "
                 "not compared" if noise_only else ""))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
