#!/bin/sh
# The learned trader: catan-td (three players, the beginner board, trained without player
# trading) widened to the trading game's observation (the 21 offer features weighted zero at the
# start) and trained on by TD(lambda) against two trading catan-value players, the learner's seat
# rotating. MEEPLE names the binary (default: meeple on the PATH).
set -e
M=${MEEPLE:-meeple}
$M train td catan:players=3,trades=true --init models/catan-td.safetensors --opponent catan-value \
    --lambda 0.9 --lr 1e-4 --minibatch 256 --batch-games 2 --score-weight 0.5 --undecided 0 \
    --threads 1 --eval-every 0 --minutes 40 --seed 3 --out runs/ctd-trades \
    --export models/catan-td-trades.safetensors
