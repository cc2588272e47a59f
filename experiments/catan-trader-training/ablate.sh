#!/bin/sh
# Why did the shipped trader lose strength? Its recipe differed from the base network's own in
# five settings at once; here each is changed alone, from the same widened start, for the same
# 6,000 games (seed 21, one thread: a games limit makes each run the same on any machine), and
# every network, with the widened start and the shipped trader, plays 600 games (every seating)
# against two trading catan-value on seed 14, no random opening plies, its records kept for
# trade_rates.py. MEEPLE names the binary (default: target/release/meeple).
set -e
M=${MEEPLE:-target/release/meeple}
HERE=experiments/catan-trader-training
OUT=runs/ablate
mkdir -p "$OUT" "$HERE/ablation"
BASE="--lambda 0.9 --lr 1e-4 --minibatch 256 --epsilon 0.001 --undecided 0 --net resmlp:blocks=2,width=256"
# Two copies may run side by side (one core each): a lock folder says which takes what.
train() { # name, the five settings
    [ -f "$OUT/$1.safetensors" ] && return 0
    mkdir "$OUT/$1.lock" 2>/dev/null || return 0
    $M train td catan:players=3,trades=true --init models/catan-td.safetensors --opponent catan-value $BASE \
        $2 --eval-every 0 --threads 1 --games 6000 --seed 21 --out "$OUT/$1-run" --export "$OUT/$1.safetensors"
    rmdir "$OUT/$1.lock"
}
RECIPE="--score-weight 0 --weight-decay 1e-4 --clip 1.0 --huber 0 --batch-games 1"
train base "$RECIPE"
# the widened start: the trader run's command stopped after its first step
[ -f runs/widened.safetensors ] || $M train td catan:players=3,trades=true --init models/catan-td.safetensors \
    --opponent catan-value $BASE $RECIPE --eval-every 0 --threads 1 --steps 1 --seed 11 --out runs/widened-run \
    --export runs/widened.safetensors
train score-weight "--score-weight 0.5 --weight-decay 1e-4 --clip 1.0 --huber 0 --batch-games 1"
train weight-decay "--score-weight 0 --weight-decay 1e-2 --clip 1.0 --huber 0 --batch-games 1"
train clip "--score-weight 0 --weight-decay 1e-4 --clip 0.1 --huber 0 --batch-games 1"
train huber "--score-weight 0 --weight-decay 1e-4 --clip 1.0 --huber 0.5 --batch-games 1"
train batch-games "--score-weight 0 --weight-decay 1e-4 --clip 1.0 --huber 0 --batch-games 2"
train shipped-recipe "--score-weight 0.5 --weight-decay 1e-2 --clip 0.1 --huber 0.5 --batch-games 2"
for n in base score-weight weight-decay clip huber batch-games shipped-recipe widened shipped; do
    case $n in
        widened) model=runs/widened.safetensors ;;
        shipped) model=models/catan-td-trades.safetensors ;;
        *) model=$OUT/$n.safetensors ;;
    esac
    [ -f "$HERE/ablation/$n.json" ] || [ ! -f "$model" ] && continue
    mkdir "$OUT/$n.match.lock" 2>/dev/null || continue
    $M arena catan:players=3,trades=true "catan-td:model=$model" catan-value catan-value --games 600 --seed 14 \
        --threads 1 --records "$OUT/$n.records.jsonl" --json "$HERE/ablation/$n.json" --force \
        > "$HERE/ablation/$n.txt" 2>&1
    python3 "$HERE/trade_rates.py" "$OUT/$n.records.jsonl" --json "$HERE/ablation/$n.trades.json" \
        > "$HERE/ablation/$n.trades.md"
    rmdir "$OUT/$n.match.lock"
done
