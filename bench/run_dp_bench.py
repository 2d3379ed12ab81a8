#!/usr/bin/python3
"""Data-parallel training step: weft (dp=2, MPI) against PyTorch 1.13 DDP
(gloo), same model, data and ranks, in one run on this machine.

    /usr/bin/python3 bench/run_dp_bench.py [--steps 60] [--warmup 10]
        [--rounds 3] [--json bench/results/dp-cpu.json]

Model: an MLP 512-2048-512 with GELU and an MSE loss, global batch 64, AdamW.
weft: `weftc compile --train --dp 2`, `weft train -n 2` (mpirun), one kernel
thread per rank (WEFT_NUM_THREADS=1); the step time is rank 0's step_time_s
from --metrics. PyTorch: two processes (torch.multiprocessing) joined by
torch.distributed with the gloo backend, DistributedDataParallel, one thread
each (torch.set_num_threads(1), OPENBLAS_NUM_THREADS=1); the step time is
rank 0's perf_counter around zero_grad, forward, backward and step. Median
over the steps after the warm-up, pooled over the rounds; the ratio is
weft / PyTorch (below 1: weft faster). Not part of the tests.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH, DIN, DH = 64, 512, 2048


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(DIN, DH)
        self.l2 = torch.nn.Linear(DH, DIN)

    def forward(self, x, y):
        return torch.mean(torch.square(self.l2(F.gelu(self.l1(x))) - y))


def torch_worker(rank, world, port, state, data, steps, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    model = Mlp()
    model.load_state_dict(state)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(ddp.parameters())
    x, y = torch.from_numpy(data["x"]), torch.from_numpy(data["y"])
    local = BATCH // world
    n = x.shape[0]
    times = []
    import time
    for s in range(steps):
        idx = [(s * BATCH + rank * local + i) % n for i in range(local)]
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = ddp(x[idx], y[idx])
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    if rank == 0:
        with open(out, "w") as f:
            json.dump(times, f)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bucket-mb", default="25",
                    help="weftc --bucket-mb (gradient bucket size)")
    ap.add_argument("--json", default=os.path.join(ROOT, "bench", "results",
                                                   "dp-cpu.json"))
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="weft-dp-bench-")
    torch.manual_seed(0)
    model = Mlp()
    rng = np.random.default_rng(0)
    data = {"x": rng.standard_normal((4 * BATCH, DIN)).astype(np.float32),
            "y": rng.standard_normal((4 * BATCH, DIN)).astype(np.float32)}
    onnx_path = os.path.join(work, "mlp.onnx")
    ex = {k: torch.from_numpy(v[:BATCH]) for k, v in data.items()}
    torch.onnx.export(model, (ex["x"], ex["y"]), onnx_path, opset_version=17,
                      input_names=["x", "y"], output_names=["loss"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    data_args = []
    for k, v in data.items():
        np.save(os.path.join(work, k + ".npy"), v)
        data_args += ["--data", f"{k}={os.path.join(work, k + '.npy')}"]
    bundle = os.path.join(work, "dp2")
    tools = os.path.join(ROOT, "build", "bin")
    env = dict(os.environ, WEFT_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OPENBLAS_NUM_THREADS="1",
               PATH=tools + os.pathsep + os.environ["PATH"])
    subprocess.run(["weftc", "compile", onnx_path, "-o", bundle, "--train",
                    "--dp", "2", "--bucket-mb", args.bucket_mb], check=True,
                   env=env)
    weft_times, torch_times = [], []
    state = model.state_dict()
    for r in range(args.rounds):
        metrics = os.path.join(work, f"m{r}.jsonl")
        subprocess.run(["weft", "train", bundle, "-n", "2", *data_args,
                        "--steps", str(args.steps), "--metrics", metrics],
                       check=True, env=env, stdout=subprocess.DEVNULL)
        weft_times += [json.loads(l)["step_time_s"]
                       for l in open(metrics)][args.warmup:]
        out = os.path.join(work, f"t{r}.json")
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        mp.spawn(torch_worker, args=(2, 29500 + r, state, data, args.steps,
                                     out), nprocs=2, join=True)
        torch_times += json.load(open(out))[args.warmup:]
    w, t = statistics.median(weft_times), statistics.median(torch_times)
    print(f"dp=2 training step, MLP {DIN}-{DH}-{DIN}, global batch {BATCH}, "
          f"AdamW, 1 thread per rank:")
    print(f"  weft (MPI)          {w * 1e3:8.3f} ms")
    print(f"  PyTorch DDP (gloo)  {t * 1e3:8.3f} ms")
    print(f"  ratio weft/torch    {w / t:8.3f}")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"model": f"mlp {DIN}-{DH}-{DIN}", "global_batch": BATCH,
                   "ranks": 2, "threads_per_rank": 1, "steps": args.steps,
                   "warmup": args.warmup, "rounds": args.rounds,
                   "bucket_mb": float(args.bucket_mb), "weft_step_s": w, "torch_ddp_gloo_step_s": t,
                   "ratio": w / t}, f, indent=1)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
