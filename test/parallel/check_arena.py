"""Whether the first bundle's planned intermediates arena (plan.txt) is
smaller than the second's.
usage: check_arena.py SMALLER/plan.txt LARGER/plan.txt [NAME_SMALLER NAME_LARGER]
(the names label the report; 1f1b and gpipe by default)"""
import re
import sys


def arena_kib(path):
    text = open(path).read()
    m = re.search(r"intermediates arena\s+([0-9.]+) (B|KiB|MiB|GiB)", text)
    if not m:
        sys.exit(f"{path}: no intermediates arena line")
    scale = {"B": 1 / 1024, "KiB": 1, "MiB": 1024, "GiB": 1024 * 1024}
    return float(m.group(1)) * scale[m.group(2)]


names = sys.argv[3:5] if len(sys.argv) >= 5 else ["1f1b", "gpipe"]
small, large = arena_kib(sys.argv[1]), arena_kib(sys.argv[2])
ok = small < large
print(f"{names[0]} arena {small:.2f} KiB < {names[1]} arena {large:.2f} KiB: "
      + ("ok" if ok else "FAILED"))
sys.exit(0 if ok else 1)
