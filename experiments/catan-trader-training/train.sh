#!/bin/sh
# Why did TD training against trading catan-value lose strength, and what recipe keeps it?
# Run A: the widened start (catan-td, trained without player trading, its 21 offer inputs at
# weight zero) trained on against two trading catan-value players with the recipe that made
# catan-td's own last stage (lr 1e-4, weight decay 1e-4, clip 1.0, squared value loss, the result
# alone as the target: no score share, one game a batch), evaluated every 10 minutes against two
# catan-value (120 games, every seating), the best evaluation kept as run/ckpt/best.
# The run is finished and its checkpoint files are not kept (ckpt/removed.sha256): to train
# again, move the folder away first. Stopped (Ctrl-C, TERM) a run checkpoints; the same command goes on from run/.
# MEEPLE names the binary (default: target/release/meeple).
set -e
M=${MEEPLE:-target/release/meeple}
OUT=experiments/catan-trader-training/run
RESUME=
[ -f "$OUT/run.json" ] && RESUME=--resume
# The metrics travel compressed (a line a game): unpacked to go on, packed again when it stops.
[ -f "$OUT/metrics.jsonl.gz" ] && [ ! -f "$OUT/metrics.jsonl" ] && gunzip -k "$OUT/metrics.jsonl.gz"
$M train td catan:players=3,trades=true --init models/catan-td.safetensors --opponent catan-value \
    --net resmlp:blocks=2,width=256 --lambda 0.9 --lr 1e-4 --weight-decay 1e-4 --clip 1.0 --huber 0 \
    --score-weight 0 --minibatch 256 --batch-games 1 --epsilon 0.001 \
    --eval-every 10m --ladder catan-value --equal-time none --eval-games 120 --eval-opening-plies 0 \
    --threads 1 --minutes 240 --seed 11 --out "$OUT" $RESUME
gzip -kf "$OUT/metrics.jsonl"
