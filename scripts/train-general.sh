#!/usr/bin/env bash
# Trains (or resumes) the two general-domain models side by side, one thread each, in the background at low
# priority; progress goes to $RUNS/general-SRC-TGT.log. Run it again after an interruption: it resumes.
# The run directories and the best checkpoints so far live outside the work tree, in $RUNS.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-~/.cache/transformer-anatomy/runs}
mkdir -p "$RUNS"
# Batches of varying shapes fragment glibc's heap: without these a run grew past 9 GB in an hour. Large blocks
# from mmap are handed back to the system when freed.
export MALLOC_MMAP_THRESHOLD_=131072 MALLOC_TRIM_THRESHOLD_=131072 MALLOC_ARENA_MAX=2
for pair in "de en" "en de"; do
  set -- $pair
  name=general-$1-$2
  nohup nice -n 10 python -m transformer.train --src "$1" --tgt "$2" \
    --corpus tatoeba --corpus multi30k --corpus newstest:0.6 --corpus europarl-v7-head20k:0.3 \
    --data-root "${ANATOMY_DATA_ROOT:-../shared/data}" --domain everyday \
    --out "$RUNS/$name/best" --run-dir "$RUNS/$name" --preset small --vocab-size 10000 \
    --epochs 6 --max-tokens 4000 --lr 1e-3 --warmup 1000 --max-val-pairs 1000 \
    --threads 1 --no-progress >> "$RUNS/$name.log" 2>&1 &
  echo "$name: pid $!, log $RUNS/$name.log"
done
