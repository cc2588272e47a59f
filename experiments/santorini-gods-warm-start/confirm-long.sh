#!/bin/sh
# The long warm run's best checkpoint (chosen by its 40-game evaluations) on a seed nothing
# chose (1002): 200 games against alpha-beta on the gods evaluator, both at 100 ms a move, random
# pairings, 4 random opening plies, every seed from both seatings; the shipped gods network in
# the same match for comparison. The checkpoint is copied to runs/ first, as the run goes on
# writing its ckpt/. MEEPLE names the binary.
set -e
M=${MEEPLE:-target/release/meeple}
HERE=experiments/santorini-gods-warm-start
AB="alphabeta:time=100ms,eval=(gods:threats=true)"
mkdir -p runs
[ -f runs/gods-long-best.safetensors ] || {
    cp "$HERE/long/ckpt/best.safetensors" runs/gods-long-best.safetensors
    cp "$HERE/long/ckpt/best.json" runs/gods-long-best.json
}
run() { # name, agent
    [ -f "$HERE/$1.json" ] && return 0
    $M arena santorini:gods=random "$2" "$AB" --games 200 --seed 1002 --opening-plies 4 --threads 1 \
        --records "runs/$1-records.jsonl" --force --json "$HERE/$1.json"
    gzip -c "runs/$1-records.jsonl" > "$HERE/$1-records.jsonl.gz"
}
run long-best-vs-alphabeta-100ms-seed1002 "az:model=runs/gods-long-best.safetensors,time=100ms"
run shipped-vs-alphabeta-100ms-seed1002 "az:model=models/santorini-gods-az.safetensors,time=100ms"
# Later in the run, generation 120 scored 87.5% in its 40-game evaluation and became
# long/ckpt/best (copied to runs/gods-long-best120.*): the same match on seed 1003.
run120() {
    [ -f "$HERE/long-best120-vs-alphabeta-100ms-seed1003.json" ] && return 0
    $M arena santorini:gods=random "az:model=runs/gods-long-best120.safetensors,time=100ms" "$AB" --games 200 --seed 1003 \
        --opening-plies 4 --threads 1 --records runs/long-best120-records.jsonl --force \
        --json "$HERE/long-best120-vs-alphabeta-100ms-seed1003.json"
    gzip -c runs/long-best120-records.jsonl > "$HERE/long-best120-vs-alphabeta-100ms-seed1003-records.jsonl.gz"
}
[ "${1:-}" = 120 ] && run120
# A later generation's kept checkpoint (ckpt/gen-NNNNNN, copied to runs/), chosen as the newest
# whose 40-game evaluation at equal time scored at least 70%, on a seed of its own, 200 games
# unless told: `confirm-long.sh gen 220 1004`, `confirm-long.sh gen 250 1005 600`.
gen() { # generation, seed, games
    name=long-gen$1-vs-alphabeta-100ms-seed$2
    [ -f "$HERE/$name.json" ] && return 0
    ckpt=$(printf "$HERE/long/ckpt/gen-%06d" "$1")
    [ -f "runs/gods-long-gen$1.safetensors" ] || {
        cp "$ckpt.safetensors" "runs/gods-long-gen$1.safetensors"
        cp "$ckpt.json" "runs/gods-long-gen$1.json"
    }
    $M arena santorini:gods=random "az:model=runs/gods-long-gen$1.safetensors,time=100ms" "$AB" --games "${3:-200}" \
        --seed "$2" --opening-plies 4 --threads 1 --records "runs/$name-records.jsonl" --force --json "$HERE/$name.json"
    gzip -c "runs/$name-records.jsonl" > "$HERE/$name-records.jsonl.gz"
}
[ "${1:-}" = gen ] && gen "$2" "$3" "${4:-200}"
