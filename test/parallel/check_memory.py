"""ZeRO-3 on 4 ranks keeps at most 30% of the single-device training state.

Compiles the causal LM for one device and for dp=4 with ZeRO-3, trains each
2 steps, and compares per-rank parameter + gradient + optimizer-state bytes:
parameters and optimizer state as measured in the largest rank's checkpoint
(the tensors a rank holds), gradients as each plan's manifest gives them
(they live in the arena, as the optimizer update reads them).

usage: /usr/bin/python3 check_memory.py WORKDIR
"""
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_plans  # noqa: E402

LIMIT = 0.30


def state_bytes(ckpt, ranks):
    """Bytes of the tensors the largest rank holds (its state file, less
    the safetensors header)."""
    import struct
    worst = 0
    for r in range(ranks):
        name = f"state.rank{r}.safetensors" if ranks > 1 else \
            "state.safetensors"
        path = os.path.join(ckpt, "step-00000002", name)
        with open(path, "rb") as f:
            (header,) = struct.unpack("<Q", f.read(8))
        worst = max(worst, os.path.getsize(path) - 8 - header)
    return worst


def main():
    work = sys.argv[1]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    onnx_path, data_args = check_plans.export("causal_lm", work)
    totals = {}
    for name, flags, ranks in (("single", [], 1),
                               ("zero3", ["--dp", "4", "--zero", "3"], 4)):
        bundle = os.path.join(work, name)
        ckpt = os.path.join(work, name + ".ckpt")
        check_plans.ct.run(["weftc", "compile", onnx_path, "-o", bundle,
                            "--train", *flags])
        check_plans.ct.run(["weft", "train", bundle, "-n", str(ranks),
                            *data_args, "--steps", "2", "--checkpoint-dir",
                            ckpt])
        manifest = json.load(open(os.path.join(bundle, "manifest.json")))
        grads = manifest["predicted"]["memory_breakdown_bytes"]["gradients"]
        state = state_bytes(ckpt, ranks)
        totals[name] = state + grads
        print(f"{name}: parameters + optimizer state {state} B (measured), "
              f"gradients {grads} B (planned), total {totals[name]} B")
    ratio = totals["zero3"] / totals["single"]
    ok = ratio <= LIMIT
    print(f"dp=4 zero=3 per rank / single device: {ratio:.3f} "
          f"({'ok' if ok else 'FAILED'}, limit {LIMIT})")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
