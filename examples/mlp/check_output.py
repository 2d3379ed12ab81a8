"""Prints the example's output and compares it with NumPy's answer."""
import os
import sys

import numpy as np

work = sys.argv[1]
got = np.load(os.path.join(work, "out", "probs.npy"))
want = np.load(os.path.join(work, "expected.npy"))
err = np.linalg.norm(got - want) / np.linalg.norm(want)
np.set_printoptions(precision=4, suppress=True)
print("probs (first 3 rows):\n", got[:3])
print(f"relative L2 error against NumPy: {err:.2e}")
sys.exit(0 if err < 1e-5 else 1)
