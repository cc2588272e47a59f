#!/bin/sh
# The learned trader (models/catan-td-trades.safetensors, made by train.sh) with player trading
# on, three players, the beginner board, every seating of each seed (paired): against two
# catan-value players (which trade), against two that never trade, and against two
# alphabeta:depth=2,eval=catan-value. Seed 2001 was used by no earlier match and chose nothing.
# MEEPLE names the binary (default: meeple on the PATH).
set -e
M=${MEEPLE:-meeple}
G="catan:players=3,trades=true"
TD="catan-td:model=models/catan-td-trades.safetensors"
run() { out=$1; shift; $M arena "$@" --threads 1 --json "$out.json"; }
run td-trades-vs-two-catan-value "$G" "$TD" catan-value catan-value --games 600 --seed 2001
run td-trades-vs-two-non-traders "$G" "$TD" catan-value:trade=false catan-value:trade=false --games 600 --seed 2001
run td-trades-vs-two-alphabeta "$G" "$TD" "alphabeta:depth=2,eval=catan-value" "alphabeta:depth=2,eval=catan-value" \
    --games 300 --seed 2001
