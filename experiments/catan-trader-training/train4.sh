#!/bin/sh
# Run B: the four-player trader. catan4-td (four players, trained without player trading)
# widened to the trading game (its offer inputs at weight zero) and trained on against three
# trading catan-value players with the recipe that gains strength in three players (run A:
# lr 1e-4, weight decay 1e-4, clip 1.0, squared value loss, the result alone as the target,
# one game a batch), evaluated every 10 minutes against three catan-value (96 games, every
# seating, no random opening plies), the best evaluation kept as run4/ckpt/best.
# The run is finished and its checkpoint files are not kept (ckpt/removed.sha256): to train
# again, move the folder away first. Stopped (Ctrl-C, TERM) a run checkpoints; the same command goes on from run4/.
# MEEPLE names the binary (default: target/release/meeple).
set -e
M=${MEEPLE:-target/release/meeple}
OUT=experiments/catan-trader-training/run4
RESUME=
[ -f "$OUT/run.json" ] && RESUME=--resume
# The metrics travel compressed (a line a game): unpacked to go on, packed again when it stops.
[ -f "$OUT/metrics.jsonl.gz" ] && [ ! -f "$OUT/metrics.jsonl" ] && gunzip -k "$OUT/metrics.jsonl.gz"
$M train td catan:players=4,trades=true --init models/catan4-td.safetensors --opponent catan-value \
    --net resmlp:blocks=2,width=256 --lambda 0.9 --lr 1e-4 --weight-decay 1e-4 --clip 1.0 --huber 0 \
    --score-weight 0 --minibatch 256 --batch-games 1 --epsilon 0.001 --undecided 0 \
    --eval-every 10m --ladder catan-value --equal-time none --eval-games 96 --eval-opening-plies 0 \
    --threads 1 --minutes 240 --seed 31 --out "$OUT" $RESUME
gzip -kf "$OUT/metrics.jsonl"
