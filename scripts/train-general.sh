#!/usr/bin/env bash
# Trains (or resumes) the two general-domain models side by side, one thread each, in the background at low
# priority; progress goes to $RUNS/general-SRC-TGT.log. Run it again after an interruption: it resumes.
# The run directories and the best checkpoints so far live outside the work tree, in $RUNS.
#
# Phases, because the machine holding a run's state is not always kept between sessions:
#   phase 1 (PHASE=1): from scratch, 6 epochs scheduled; stopped after epoch 1 (its best: git show
#   1c70d17:training-snapshots/general-SRC-TGT/...).
#   phase 2 (PHASE=2): from phase 1's best, a fresh optimizer, a new data order (seed 2) and a schedule that
#   decays to 0 over 100 minutes of training (1.2 epochs; val BLEU mean 8.6 -> 16.3 de-en; its best: commit
#   241fae2, training-snapshots/).
#   phase 3 (PHASE=3): from phase 2's best, seed 3, peak lr 5e-4, warmup 200, decaying to 0 over 110 minutes of
#   training (1.7 epochs; val BLEU mean 16.3 -> 19.8 de-en, 13.7 -> 17.0 en-de). Its best ships as
#   checkpoints/general-*.
#   phase 4 (PHASE=4): from checkpoints/general-* (phase 3's best), seed 4, bf16 autocast (--precision auto on
#   this CPU), more news in the mix (newstest x1.0, Europarl x0.5: news val BLEU was 5-6, the furthest from its
#   goal, and long news sentences loop), peak lr 5e-4, warmup 200, decaying to 0 over $TOKENS target tokens
#   (default 29M: with phases 1-3's 11.4M de-en / 11.9M en-de, replayed by `python -m transformer.tokens_seen`,
#   over 40M in all). A token budget, not a time budget: the machine is shared with other work, so a schedule
#   by the clock would decay over however little it got. It spans sessions: rerun this script to resume.
#   Its epoch-2 best (18.2M / 19.0M target tokens in all) ships as checkpoints/general-*. Should its run state
#   be lost, move $RUNS/general-*-phase4* away and start again from those with TOKENS=22M (over 40M in all).
#   phase 5 (default): for a lent GPU (one H100 here; --device auto takes it, bf16 autocast): from
#   checkpoints/general-* (phase 4's epoch-2 best), seed 5, phase 4's mix, batches 4x larger (16k padded tokens:
#   fewer, larger steps suit a GPU) with peak lr 7e-4, warmup 150, decaying to 0 over $BUDGET of training. A time
#   budget here: the GPU is lent for minutes, not tokens, and both directions share it. Ran on one H100 with
#   THREADS=4 in two device calls: BUDGET=13m, stopped by SIGTERM, then resumed with BUDGET=12m (the schedule
#   jumped ahead) to end inside the second call. ~140k target tokens/s per direction once the batch shapes had
#   been seen, ~58k in a process's first epoch (see docs/training.md); 26 / 25 epochs, 88M target
#   tokens each; greedy val BLEU mean 23.4 -> 32.2 de-en, 20.3 -> 27.8 en-de. Its best (106.3M / 107.8M target
#   tokens in all) ships as checkpoints/general-*.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-~/.cache/transformer-anatomy/runs}
PHASE=${PHASE:-5}
max_tokens=4000
mix=(--corpus tatoeba --corpus multi30k --corpus newstest:0.6 --corpus europarl-v7-head20k:0.3)
mkdir -p "$RUNS"
# Batches of varying shapes fragment glibc's heap: without these a run grew past 9 GB in an hour. Large blocks
# from mmap are handed back to the system when freed.
export MALLOC_MMAP_THRESHOLD_=131072 MALLOC_TRIM_THRESHOLD_=131072 MALLOC_ARENA_MAX=2
for pair in "de en" "en de"; do
  set -- $pair
  if [ "$PHASE" = 1 ]; then
    name=general-$1-$2
    schedule=(--epochs 6 --lr 1e-3 --warmup 1000)
  elif [ "$PHASE" = 2 ]; then
    name=general-$1-$2-phase2
    schedule=(--init-from "$RUNS/general-$1-$2/best" --seed 2 --time-budget "${BUDGET:-100m}"
              --lr 7e-4 --warmup 100)
  elif [ "$PHASE" = 3 ]; then
    name=general-$1-$2-phase3
    start=$RUNS/general-$1-$2-phase2/best
    [ -f "$start/model.safetensors" ] || start=checkpoints/general-$1-$2
    [ -f "$RUNS/$name/state.pt" ] || echo "$name starts from $start"
    schedule=(--init-from "$start" --seed 3 --time-budget "${BUDGET:-110m}" --lr 5e-4 --warmup 200)
  elif [ "$PHASE" = 4 ]; then
    name=general-$1-$2-phase4
    # A copy: checkpoints/ may hold newer weights by the time a later session resumes this phase.
    start=$RUNS/$name-start
    [ -d "$start" ] || cp -r "checkpoints/general-$1-$2" "$start"
    mix=(--corpus tatoeba --corpus multi30k --corpus newstest:1.0 --corpus europarl-v7-head20k:0.5)
    schedule=(--init-from "$start" --seed 4 --token-budget "${TOKENS:-29M}" --lr 5e-4 --warmup 200)
  else
    name=general-$1-$2-phase5
    start=$RUNS/$name-start
    [ -d "$start" ] || cp -r "checkpoints/general-$1-$2" "$start"
    mix=(--corpus tatoeba --corpus multi30k --corpus newstest:1.0 --corpus europarl-v7-head20k:0.5)
    schedule=(--init-from "$start" --seed 5 --time-budget "${BUDGET:-5m}" --lr 7e-4 --warmup 150)
    max_tokens=16000
  fi
  nohup nice -n 10 python -m transformer.train --src "$1" --tgt "$2" \
    "${mix[@]}" \
    --data-root "${ANATOMY_DATA_ROOT:-../shared/data}" --domain everyday \
    --out "$RUNS/$name/best" --run-dir "$RUNS/$name" --preset small --vocab-size 10000 \
    "${schedule[@]}" --max-tokens "$max_tokens" --max-val-pairs 1000 \
    --threads "${THREADS:-1}" --no-progress >> "$RUNS/$name.log" 2>&1 &
  echo "$name: pid $!, log $RUNS/$name.log"
done
