"""Writes a bundle's parameter file on the GPU machine from its header.

A GPT-2-small training bundle holds about 1.5 GB of parameters and AdamW
state: too much to carry to the lent GPU machine. bench/gpu/prepare.sh keeps
only the safetensors header (names, dtypes, shapes, offsets); this script
writes a file with that header and GPT-2's initialization by name: optimizer
state and the step counter 0, LayerNorm scales 1, biases 0, positions
N(0, 0.01), other weights N(0, 0.02). Throughput does not depend on the
values; the loss of the first step is about ln(vocabulary).

usage: python3 fill_params.py HEADER.json OUT.safetensors
"""
import json
import struct
import sys

import numpy as np

DTYPES = {"F32": np.float32, "I64": np.int64, "BF16": np.uint16,
          "F16": np.float16, "I32": np.int32}


def values(name, dtype, shape, rng):
    role_zero = (name == "step" or name.startswith("adamw.") or
                 name.startswith("sgd.") or name.endswith(".bias"))
    if dtype != "F32" or role_zero:
        return np.zeros(shape, DTYPES[dtype])
    if ".ln_" in name or name.startswith("ln_f"):
        return np.ones(shape, np.float32)
    std = 0.01 if name == "wpe" else 0.02
    return (rng.standard_normal(shape, dtype=np.float32) * np.float32(std))


def main(header_path, out_path):
    header = json.load(open(header_path))
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)
    rng = np.random.default_rng(0)
    entries = sorted(((k, v) for k, v in header.items() if k != "__metadata__"),
                     key=lambda kv: kv[1]["data_offsets"][0])
    with open(out_path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        base = f.tell()
        for name, info in entries:
            begin, end = info["data_offsets"]
            data = values(name, info["dtype"], info["shape"], rng).tobytes()
            if len(data) != end - begin:
                sys.exit(f"{name}: {len(data)} bytes for offsets {begin}..{end}")
            f.seek(base + begin)
            f.write(data)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
