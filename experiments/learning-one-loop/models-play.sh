#!/bin/bash
# Every shipped model loads and plays a short match against random (MEEPLE: the binary).
M=${MEEPLE:-meeple}
cd "$(git rev-parse --show-toplevel)"
# run GAME AGENT [GAMES [OPPONENTS...]]
run() {
    local game=$1 agent=$2 games=${3:-2}
    shift 3 2>/dev/null || shift $#
    local others=("$@")
    ((${#others[@]})) || others=(random)
    out=$($M arena "$game" "$agent" "${others[@]}" --games "$games" --threads 1 2>&1)
    if echo "$out" | grep -q "^agent"; then echo "ok   $agent"; else echo "FAIL $agent: $(echo "$out" | tail -1)"; fi
}
run connect4 "az:model=models/connect4-az.safetensors,sims=16"
run santorini "az:model=models/santorini-az.safetensors,sims=16"
run cathedral "az:model=models/cathedral-az.safetensors,sims=16"
run cathedral:size=8 "dqn:model=models/cathedral8-dqn.safetensors"
run cathedral:size=8 "ppo:model=models/cathedral8-ppo.safetensors"
run catan:players=3 "catan-td:model=models/catan-td.safetensors" 6 random random
run catan:players=3 "value:model=models/catan-td-selfplay.safetensors" 6 random random
run catan:players=3,board=random "value:model=models/catan-td-shuffled.safetensors" 6 random random
run catan:players=4 "value:model=models/catan4-td.safetensors" 24 random random random
run catan:players=3,trades=true "value:model=models/catan-td-trades.safetensors,offer=trade" 6 random random
run catan:players=4,trades=true "value:model=models/catan4-td-trades.safetensors,offer=trade" 24 random random random
run santorini:gods=random "az:model=models/santorini-gods-az.safetensors,sims=16"
run sagrada "az:model=models/sagrada-az.safetensors,sims=16"
for v in ann cnn combined mcts-ann mcts-cnn; do run santorini "value:model=models/santorini-value-$v.safetensors"; done
for w in linear8-rootstrap linear8-treestrap linear8-tdleaf; do
    run santorini "alphabeta:depth=2,eval=(linear8:weights=models/santorini-$w.txt)"
done
run santorini "alphabeta:depth=2,eval=(linear22:weights=models/santorini-linear22-rootstrap.txt)"
run santorini "alphabeta:depth=2,eval=(table36:weights=models/santorini-table36-tdleaf.txt)"
run santorini "alphabeta:depth=2,eval=(tempo16:weights=models/santorini-tempo16-tdleaf.txt)"
