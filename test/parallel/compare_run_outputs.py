"""Compares every .npy file of each output directory after the first with
the first's (the single-device run), relative to the reference's largest
magnitude; prints one line per file and exits 1 when any differs by more
than 1e-5 or is missing."""
import os
import sys

import numpy as np


def main():
    ref_dir, others = sys.argv[1], sys.argv[2:]
    names = sorted(f for f in os.listdir(ref_dir) if f.endswith(".npy"))
    if not names:
        raise SystemExit(f"{ref_dir}: no outputs")
    ok = True
    for other in others:
        for name in names:
            ref = np.load(os.path.join(ref_dir, name))
            path = os.path.join(other, name)
            if not os.path.exists(path):
                print(f"{name[:-4]}: missing in {other} (FAILED)")
                ok = False
                continue
            got = np.load(path)
            if got.shape != ref.shape or got.dtype != ref.dtype:
                print(f"{name[:-4]}: {got.dtype}{list(got.shape)} in {other}, "
                      f"expected {ref.dtype}{list(ref.shape)} (FAILED)")
                ok = False
                continue
            scale = max(float(np.max(np.abs(ref))), 1e-30) if ref.size else 1
            err = (float(np.max(np.abs(got.astype(np.float64) - ref))) / scale
                   if ref.size else 0.0)
            good = err <= 1e-5
            ok &= good
            print(f"{name[:-4]}: {os.path.basename(other)} {err:.1e} "
                  f"({'ok' if good else 'FAILED'})")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
