#!/bin/sh
# Ships the long warm run's generation 250 as models/santorini-gods-az (its checkpoint and
# sidecar as the run kept them, `ckpt/gen-000250.*`, copied to runs/ by `confirm-long.sh gen 250`),
# then plays the shipped file itself on a seed nothing chose (1006): 400 games against alpha-beta
# on the gods evaluator, both at 100 ms a move, random pairings, 4 random opening plies, two
# threads on an otherwise idle machine. MEEPLE names the binary.
set -e
M=${MEEPLE:-target/release/meeple}
HERE=experiments/santorini-gods-warm-start
cp runs/gods-long-gen250.safetensors models/santorini-gods-az.safetensors
cp runs/gods-long-gen250.json models/santorini-gods-az.json
name=shipped250-vs-alphabeta-100ms-seed1006
[ -f "$HERE/$name.json" ] && exit 0
$M arena santorini:gods=random "az:model=models/santorini-gods-az.safetensors,time=100ms" \
    "alphabeta:time=100ms,eval=(gods:threats=true)" --games 400 --seed 1006 --opening-plies 4 --threads 2 \
    --records "runs/$name-records.jsonl" --force --json "$HERE/$name.json"
gzip -c "runs/$name-records.jsonl" > "$HERE/$name-records.jsonl.gz"
