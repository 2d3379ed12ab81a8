"""Re-predicts the pinned plans of a bench/run_plan_accuracy.py result with
today's cost model and a cluster file, against the measurements on record:
how a change to the model (not the machine) moves each plan's error.

usage: /usr/bin/python3 bench/repredict_plan_accuracy.py RESULT.json
           CLUSTER.json MLP.onnx LM.onnx

Each row's plan (dp, tp, pp, ZeRO stage, microbatches, schedule, virtual
stages, recomputation) is pinned whole for `weftc plan --json`, so the
search fills in nothing. Needs weftc on PATH (build/bin).
"""
import json
import subprocess
import sys


def pinned_flags(plan):
    flags = ["--dp", str(plan["dp"]), "--tp", str(plan["tp"]),
             "--pp", str(plan["pp"]), "--zero", str(plan["zero"]),
             "--microbatches", str(plan["microbatches"]),
             "--recompute", plan["recompute"]]
    if plan["pp"] > 1:
        flags += ["--schedule", plan["schedule"],
                  "--virtual-stages", str(plan["virtual_stages"])]
    return flags


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    result, cluster, mlp, lm = sys.argv[1:]
    models = {"mlp": mlp, "lm": lm}
    recorded = json.load(open(result))
    for name, model in recorded["models"].items():
        within = total = 0
        for row in model["rows"]:
            if row["flags"] == "--auto" or "measured_s" not in row:
                continue
            proc = subprocess.run(
                ["weftc", "plan", models[name], "--train", "--devices",
                 str(recorded["ranks"]), "--cluster", cluster, "--json",
                 *pinned_flags(row["plan"])],
                capture_output=True, text=True)
            if proc.returncode != 0:
                sys.exit(f"{name} {row['flags']}: {proc.stderr.strip()}")
            predicted = json.loads(proc.stdout)["plans"][0]["step_time_s"]
            error = row["measured_s"] / predicted - 1
            total += 1
            within += abs(error) <= 0.25
            print(f"{name:4} {row['flags']:44} recorded {row['predicted_s'] * 1e3:7.2f} "
                  f"now {predicted * 1e3:7.2f} measured {row['measured_s'] * 1e3:7.2f} ms "
                  f"({error:+4.0%})")
        print(f"{name}: {within}/{total} pinned plans within 25%")


if __name__ == "__main__":
    main()
