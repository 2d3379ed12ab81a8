"""Compares what `weftc plan --json` predicts for one plan under two files.

usage: compare_plan_json.py A.json B.json --hides FRACTION
       compare_plan_json.py A.json B.json --same

--hides: the best plan of A and the same plan in B (a cluster whose
collectives overlap work, and the same cluster without overlap): A's
exposed communication must be at most (1 - FRACTION) of B's, and its step
shorter by the difference. Prints "A hides N% of B's exposed
communication".

--same: every plan of A is in B with the same prediction (the search's
timings aside). Prints "same N plans".

Exits 1 saying what differs.
"""
import json
import sys


def key(plan):
    return tuple(
        plan[k]
        for k in ("dp", "tp", "pp", "zero", "microbatches", "schedule",
                  "virtual_stages", "recompute", "sequence_parallel"))


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    a, b = (json.load(open(p)) for p in sys.argv[1:3])
    mode = sys.argv[3]
    if mode == "--same":
        for d in (a, b):
            d.pop("profile_seconds", None)
            d.pop("search_seconds", None)
        if a != b:
            others = {key(p): p for p in b["plans"]}
            for p in a["plans"]:
                if others.get(key(p)) != p:
                    sys.exit(f"compare_plan_json: {key(p)} differs: {p} "
                             f"against {others.get(key(p))}")
            sys.exit("compare_plan_json: the plan lists differ")
        print(f"same {len(a['plans'])} plans")
        return
    if mode != "--hides" or len(sys.argv) != 5:
        sys.exit(__doc__)
    fraction = float(sys.argv[4])
    plan = a["plans"][0]
    match = [p for p in b["plans"] if key(p) == key(plan)]
    if not match:
        sys.exit(f"compare_plan_json: {key(plan)} is not in {sys.argv[2]}")
    other = match[0]
    hidden = other["exposed_comm_s"] - plan["exposed_comm_s"]
    if hidden < fraction * other["exposed_comm_s"]:
        sys.exit(f"compare_plan_json: {plan['exposed_comm_s']} s exposed "
                 f"against {other['exposed_comm_s']} s: less than "
                 f"{fraction:.0%} hidden")
    saved = other["step_time_s"] - plan["step_time_s"]
    if abs(saved - hidden) > 1e-9 + 1e-6 * other["step_time_s"]:
        sys.exit(f"compare_plan_json: the step is {saved} s shorter, the "
                 f"exposed communication {hidden} s")
    print(f"A hides {round(100 * hidden / other['exposed_comm_s'])}% "
          "of B's exposed communication")


if __name__ == "__main__":
    main()
