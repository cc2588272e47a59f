#!/bin/sh
# Catan with player trading, four players, the beginner board, every seating of each seed
# (the arena's paired seats). MEEPLE names the binary (default: meeple on the PATH).
set -e
M=${MEEPLE:-meeple}
G="catan:players=4,trades=true"
T=catan-value
N=catan-value:trade=false
run() { out=$1; shift; $M arena "$@" --threads 1 --json "$out.json"; }
# Trading agents against the same agent that never trades, both ways round, and two each.
run one-trader-vs-three "$G" $T $N $N $N --games 24000 --seed 1
run one-non-trader-vs-three "$G" $N $T $T $T --games 24000 --seed 2
run two-traders-vs-two "$G" $T $T $N $N --games 24000 --seed 3
# Game length in self-play, with and without trading.
run selfplay-trading "$G" $T $T $T $T --games 24000 --seed 4
run selfplay-no-trading "$G" $N $N $N $N --games 24000 --seed 4
# A search on the evaluator sees offers as moves and others' answers as catan-value gives them
# (alphabeta-paranoid-answers-vs-three-traders.* is the same match by the build before that,
# which searched the answers as the paranoid worst for the searcher).
run alphabeta-vs-three-traders "$G" "alphabeta:depth=2,eval=catan-value" $T $T $T --games 2400 --seed 5
run alphabeta-vs-three-traders-seed6 "$G" "alphabeta:depth=2,eval=catan-value" $T $T $T --games 1200 --seed 6
run alphabeta-vs-three-traders-no-trading "catan:players=4" "alphabeta:depth=2,eval=catan-value" $T $T $T --games 2400 --seed 5
