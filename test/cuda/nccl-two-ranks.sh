#!/usr/bin/env bash
# Runs NcclCommTest as two ranks the way torchrun starts them (RANK,
# WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; no MPI): the ranks meet
# over weft's TCP rendezvous and build their NCCL communicators over it.
#
#   1. two-ranks       every collective and crossing pipeline transfers
#   2. order-mismatch  rank 1 receives in another order than rank 0 sends:
#                      it must stop with an error saying so
#   3. dead-peer       rank 1 dies: rank 0's all_reduce must end in an error
#                      naming it (WEFT_COMM_TIMEOUT=10), not hang
#
# On one GPU the two ranks share it, which NCCL allows from 2.30 on with
# NCCL_MULTI_RANK_GPU_ENABLE=1 (set here unless the caller set it). Where it
# does not (no GPU, an older NCCL), the test binary says why and every run
# exits 77: skipped.
#
# usage: nccl-two-ranks.sh PATH/TO/NcclCommTest
set -u
bin=${1:?usage: nccl-two-ranks.sh PATH/TO/NcclCommTest}
export NCCL_MULTI_RANK_GPU_ENABLE=${NCCL_MULTI_RANK_GPU_ENABLE:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

free_port() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
  else
    echo $((20000 + RANDOM % 20000))
  fi
}

# run_pair MODE SECONDS [VAR=VALUE...]: both ranks; their exit codes in rc0
# and rc1, their output in $work/MODE.0 and $work/MODE.1.
run_pair() {
  local mode=$1 limit=$2
  shift 2
  local port
  port=$(free_port)
  local pids=()
  for r in 0 1; do
    env "$@" RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 \
      MASTER_PORT="$port" timeout -k 10 "$limit" "$bin" "$mode" \
      >"$work/$mode.$r" 2>&1 &
    pids+=($!)
  done
  wait "${pids[0]}"
  rc0=$?
  wait "${pids[1]}"
  rc1=$?
}

show() {
  for r in 0 1; do
    echo "--- $1, rank $r:"
    cat "$work/$1.$r"
  done
}

passed=0
failed=0

run_pair two-ranks 300 WEFT_COMM_TIMEOUT=120
if [ "$rc0" = 77 ] || [ "$rc1" = 77 ]; then
  grep -h '^SKIP' "$work/two-ranks.0" "$work/two-ranks.1" | head -1
  exit 77
fi
if [ "$rc0" = 0 ] && [ "$rc1" = 0 ]; then
  passed=$((passed + 1))
  grep -h 'passed' "$work/two-ranks.0" "$work/two-ranks.1"
else
  failed=$((failed + 1))
  echo "FAIL: two-ranks (exit codes $rc0, $rc1)"
  show two-ranks
fi

run_pair order-mismatch 120 WEFT_COMM_TIMEOUT=20
if [ "$rc1" != 0 ] && [ "$rc1" != 124 ] && [ "$rc1" != 137 ] &&
  grep -q 'different orders' "$work/order-mismatch.1"; then
  passed=$((passed + 1))
  echo "order-mismatch: rank 1 stopped (exit $rc1):"
  grep -h 'different orders' "$work/order-mismatch.1" | head -1
else
  failed=$((failed + 1))
  echo "FAIL: order-mismatch (exit codes $rc0, $rc1)"
  show order-mismatch
fi

run_pair dead-peer 120 WEFT_COMM_TIMEOUT=10
if [ "$rc0" != 0 ] && [ "$rc0" != 124 ] && [ "$rc0" != 137 ] &&
  grep -q 'all_reduce' "$work/dead-peer.0"; then
  passed=$((passed + 1))
  echo "dead-peer: rank 0 stopped (exit $rc0):"
  grep -h 'error' "$work/dead-peer.0" | head -1
else
  failed=$((failed + 1))
  echo "FAIL: dead-peer (exit codes $rc0, $rc1)"
  show dead-peer
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
