#!/bin/sh
# The four shipped TD networks' matches of ../README.md, same commands and seed, on the rules
# that let progress cards be played before the roll. Run from the repository root's
# experiments/catan-td-vs-catan-value/progress-before-roll; MEEPLE names the binary.
set -e
M=${MEEPLE:-meeple}
R=../../..
$M arena "catan:players=3,board=random" "catan-td:model=$R/models/catan-td-shuffled.safetensors" \
    catan-value catan-value --games 600 --seed 1001 --threads 1 --json td-shuffled-vs-two-catan-value.json
$M arena catan:players=3 "catan-td:model=$R/models/catan-td.safetensors" catan-value catan-value \
    --games 600 --seed 1001 --threads 1 --json catan-td-vs-catan-value.json
$M arena catan:players=3 "catan-td:model=$R/models/catan-td-selfplay.safetensors" catan-value catan-value \
    --games 600 --seed 1001 --threads 1 --json catan-td-selfplay-vs-catan-value.json
$M arena catan:players=4 "catan-td:model=$R/models/catan4-td.safetensors" catan-value catan-value catan-value \
    --games 2400 --seed 1001 --threads 1 --json catan4-td-vs-catan-value.json
