#!/usr/bin/env bash
# The matches that measure the web table's levels: each level against the one below it, paired
# seats, one thread a match, two matches side by side. Run from the repository root:
#   bash experiments/web-levels/run.sh [MEEPLE]      (MEEPLE: the binary, default target/release/meeple)
# Each match writes experiments/web-levels/GAME-UPPER-vs-LOWER.json; an existing file is kept
# (delete it to play that match again).
set -euo pipefail
meeple=${1:-target/release/meeple}
out=experiments/web-levels
match() { # name game games opening agents...
    local name=$1 game=$2 games=$3 opening=$4
    shift 4
    [ -f "$out/$name.json" ] && return 0
    "$meeple" arena "$game" "$@" --games "$games" --opening-plies "$opening" --seed 1 --threads 1 \
        --json "$out/$name.json"
}
lane1() {
    match tictactoe-fair-vs-easy tictactoe 200 0 "mcts:iters=50" random
    match tictactoe-perfect-vs-fair tictactoe 200 0 alphabeta "mcts:iters=50"
    match connect4-medium-vs-easy connect4 100 2 "mcts:iters=2000" "mcts:iters=100"
    match connect4-hard-vs-medium connect4 100 2 "alphabeta:time=500ms,eval=lines" "mcts:iters=2000"
    match connect4-strongest-vs-hard connect4 60 2 "az:model=models/connect4-az.safetensors,time=1s" "alphabeta:time=500ms,eval=lines"
    # Catan with trading between players and hidden stolen cards, as the rulebook plays it
    # (history-catan-*-no-trading: the levels without trading; *-open-hands: with every card seen).
    match catan-medium-vs-easy catan:trades=true,hidden_hands=true 48 0 catan-value catan-weighted catan-weighted catan-weighted
    match catan-strongest-vs-medium catan:trades=true,hidden_hands=true 96 0 "alphabeta:depth=2,eval=catan-value" catan-value catan-value catan-value
    match sagrada-medium-vs-easy sagrada 100 0 sagrada-rules random
    match sagrada-hard-vs-medium sagrada 100 0 "alphabeta:depth=1,filter=true,eval=thesis" sagrada-rules
}
lane2() {
    match santorini-medium-vs-easy santorini 100 4 "alphabeta:depth=2,eval=linear8" "mcts:iters=100"
    match santorini-hard-vs-medium santorini 100 4 "alphabeta:time=500ms,eval=linear8" "alphabeta:depth=2,eval=linear8"
    match santorini-strongest-vs-hard santorini 60 4 "az:model=models/santorini-az.safetensors,time=1s" "alphabeta:time=500ms,eval=linear8"
    match cathedral-medium-vs-easy cathedral 100 2 "mcts:iters=3000,eval=area,cutoff=20" cathedral-largest
    match cathedral-hard-vs-medium cathedral 60 2 "mcts:time=500ms,eval=area,cutoff=20" "mcts:iters=3000,eval=area,cutoff=20"
    match cathedral-strongest-vs-hard cathedral 60 2 "az:model=models/cathedral-az.safetensors,time=1s" "mcts:time=500ms,eval=area,cutoff=20"
    match sagrada-strongest-vs-hard sagrada 60 0 "ismcts:playout=sagrada-rules,margin=smooth,filter=true,eval=thesis,c=1.4,time=1s" "alphabeta:depth=1,filter=true,eval=thesis"
}
# Santorini with gods drawn at random: its Strongest against Hard is the gods network's match at
# equal time (experiments/santorini-gods-az-vs-alphabeta/az-vs-alphabeta-100ms.json, 200 games).
lane3() {
    match santorini-gods-medium-vs-easy santorini:gods=random 100 4 "alphabeta:depth=2,eval=(gods:threats=true)" "mcts:iters=100"
    match santorini-gods-hard-vs-medium santorini:gods=random 100 4 "alphabeta:time=100ms,eval=(gods:threats=true)" "alphabeta:depth=2,eval=(gods:threats=true)"
}
lane1 &
lane2 &
lane3 &
wait
