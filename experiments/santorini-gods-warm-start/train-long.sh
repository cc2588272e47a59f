#!/bin/sh
# Does the warm start, run long, make a gods network stronger than the shipped one (80 minutes
# from scratch on two threads)? The warm arm's recipe for 480 minutes on one thread, seed 9,
# evaluated every 10 generations (40 games against alpha-beta on the gods evaluator at the
# network's own time a move, and the depth-2 rung), the best kept as long/ckpt/best. Stopped
# (Ctrl-C, TERM) it checkpoints; the same command goes on from long/. MEEPLE names the binary.
# The run ended at 222 minutes (its generation 250 ships) and its checkpoint files are not kept
# (long/ckpt/removed.sha256): to train again, move long/ away first.
set -e
M=${MEEPLE:-target/release/meeple}
OUT=experiments/santorini-gods-warm-start/long
RESUME=
[ -f "$OUT/run.json" ] && RESUME=--resume
$M train az santorini:gods=random --init models/santorini-az.safetensors --sims 128 \
    --random-opening-share 0.5 --random-opening-plies 8 \
    --eval-every 10 --eval-games 40 --eval-opening-plies 4 --ladder "alphabeta:depth=2,eval=(gods:threats=true)" \
    --equal-time "alphabeta:eval=(gods:threats=true)" --threads 1 --minutes 480 --seed 9 --out "$OUT" $RESUME
