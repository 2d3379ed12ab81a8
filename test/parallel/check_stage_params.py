"""Whether a pipeline bundle's ranks hold their own stage's parameters only.

usage: check_stage_params.py BUNDLE
Reads the signature (BUNDLE/model --print-signature) and each rank's
parameter file header, and requires every parameter slot with a "stage" to
be in exactly the files of that stage's ranks (and every other slot in
every file); prints the parameter bytes per rank.
"""
import json
import struct
import subprocess
import sys


def header(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return {k: v for k, v in json.loads(f.read(n)).items()
                if k != "__metadata__"}


def main(bundle):
    sig = json.loads(subprocess.run([f"{bundle}/model", "--print-signature"],
                                    check=True, capture_output=True,
                                    text=True).stdout)
    shape, axis = sig["mesh"]["shape"], sig["pipeline_axis"]
    stride = 1
    for d in shape[axis + 1:]:
        stride *= d
    ok = True
    sizes = []
    for rank in range(sig["world_size"]):
        stage = rank // stride % shape[axis]
        held = header(f"{bundle}/params.rank{rank}.safetensors")
        sizes.append(sum(v["data_offsets"][1] - v["data_offsets"][0]
                         for v in held.values()))
        for slot in sig["params"]:
            want = slot.get("stage", stage) == stage
            if (slot["name"] in held) != want:
                ok = False
                print(f"rank {rank} (stage {stage}): '{slot['name']}' "
                      f"(stage {slot.get('stage')}) "
                      + ("missing" if want else "held"))
    print(f"parameter bytes per rank {sizes}: "
          + ("each rank holds its stage's parameters only" if ok else "FAILED"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main(sys.argv[1])
