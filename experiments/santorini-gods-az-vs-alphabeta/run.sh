#!/bin/sh
# The network trained on every god pairing (`az`) against alpha-beta on the gods evaluator,
# both at 100 ms a move, random pairings, 4 random opening plies (the draw of the gods is the
# first), every seed played with both seatings. MEEPLE names the binary (default: meeple).
set -e
M=${MEEPLE:-meeple}
NET=${NET:-models/santorini-gods-az.safetensors}
AB="alphabeta:time=100ms,eval=(gods:threats=true)"
run() { out=$1; shift; $M arena santorini:gods=random "$@" --opening-plies 4 --threads 2 --json "$out.json" --records "$out-records.jsonl"; gzip -f "$out-records.jsonl"; }
# Choosing the root's value scale (the base game's network plays best with rescale=false).
run choice-rescale-true-seed1 "az:model=$NET,time=100ms,rescale=true" "$AB" --games 100 --seed 1
run choice-rescale-false-seed1 "az:model=$NET,time=100ms,rescale=false" "$AB" --games 100 --seed 1
# The confirmation, on a seed no choice used (the chosen setting is the model's default).
run az-vs-alphabeta-100ms "az:model=$NET,time=100ms" "$AB" --games 200 --seed 1001
