"""Starts a command on N ranks the way torchrun does: N processes with RANK,
WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1 and MASTER_PORT (a free port)
set, and no MPI launcher. Exits with the first non-zero exit code of the
ranks (0 when all succeed); a rank still running after TIMEOUT seconds is
killed and counts as a failure.

usage: torchrun_launch.py N [--timeout S] -- COMMAND [ARGS...]
"""
import os
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    args = sys.argv[1:]
    n = int(args.pop(0))
    timeout = 120.0
    if args and args[0] == "--timeout":
        timeout = float(args[1])
        args = args[2:]
    if not args or args[0] != "--":
        sys.exit("usage: torchrun_launch.py N [--timeout S] -- COMMAND ...")
    cmd = args[1:]
    port = str(free_port())
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMPI_", "PMIX_", "PMI_", "SLURM_"))}
    procs = []
    for r in range(n):
        e = dict(env, RANK=str(r), WORLD_SIZE=str(n), LOCAL_RANK=str(r),
                 MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        procs.append(subprocess.Popen(cmd, env=e))
    deadline = time.time() + timeout
    codes = [None] * n
    while any(c is None for c in codes):
        for i, p in enumerate(procs):
            if codes[i] is None:
                codes[i] = p.poll()
        if time.time() > deadline:
            for i, p in enumerate(procs):
                if codes[i] is None:
                    p.kill()
                    codes[i] = -9
            print(f"torchrun_launch: ranks still running after {timeout} s "
                  "were killed", file=sys.stderr)
        time.sleep(0.02)
    bad = [c for c in codes if c != 0]
    sys.exit(bad[0] if bad else 0)


if __name__ == "__main__":
    main()
