#!/bin/sh
# Which trader to ship: run A's best checkpoints (41 minutes, chosen by its evaluations with 2
# random plies; 93 minutes, chosen by its first evaluation with none) against two trading
# catan-value on seed 14 (the ablation's match, where the shipped trader and the widened start
# played too), then the one that scores more confirmed on seed 16, which chooses nothing, beside
# the widened start and the trader shipped before it in the same match. 600 games each, every seating, no random opening plies.
# The checkpoints: run/ckpt/best.* as committed at 75 minutes (best41) and at 136 (best93),
# copied to runs/. MEEPLE names the binary.
set -e
M=${MEEPLE:-target/release/meeple}
HERE=experiments/catan-trader-training
match() { # name, model, seed[, agent options]
    [ -f "$HERE/$1.json" ] && return 0
    # A match already folded into its folder's matches.json (experiments/bundle.py) is done too.
    grep -q "\"${1##*/}\": {" "$HERE/$(dirname "$1")/matches.json" 2>/dev/null && return 0
    $M arena catan:players=3,trades=true "catan-td:model=$2$4" catan-value catan-value --games 600 --seed $3 \
        --threads 1 --records "runs/${1##*/}.records.jsonl" --force --json "$HERE/$1.json"
    python3 "$HERE/trade_rates.py" "runs/${1##*/}.records.jsonl" --json "$HERE/$1.trades.json" > "$HERE/$1.trades.md"
}
case ${1:-choose} in
    choose)
        match ablation/best41 runs/best41.safetensors 14
        match ablation/best93 runs/best93.safetensors 14 ;;
    confirm)
        match "${2:?the chosen checkpoint's name}-vs-two-catan-value-seed16" "runs/$2.safetensors" 16
        match widened-vs-two-catan-value-seed16 runs/widened.safetensors 16
        # the trader shipped before (sha256 009e60a5...; its match ran while it was the file in models/)
        [ -f runs/previous-trader.safetensors ] ||
            git show e0a3d04:models/catan-td-trades.safetensors > runs/previous-trader.safetensors
        match shipped-vs-two-catan-value-seed16 runs/previous-trader.safetensors 16 ;;
    # Once run A has run its 240 minutes: its final best checkpoint (copied to runs/NAME) against
    # the trader that ships (best93) on seed 20, which nothing chose before; the one that scores
    # more is confirmed on seed 21 beside the widened start.
    rechoose)
        match "ablation/${2:?the final best checkpoint's name}-seed20" "runs/$2.safetensors" 20
        match ablation/best93-seed20 runs/best93.safetensors 20 ;;
    reconfirm)
        match "${2:?the chosen checkpoint's name}-vs-two-catan-value-seed21" "runs/$2.safetensors" 21
        match widened-vs-two-catan-value-seed21 runs/widened.safetensors 21 ;;
    # Offers and answers weighed by the trade they would complete (the agent's offer=trade), the
    # same networks: the shipped trader and run A's final best with and without it on seed 22,
    # which nothing chose; the one that scores most confirmed on seed 23 beside the widened start.
    trade-choose)
        match ablation/best93-offer-trade-seed22 runs/best93.safetensors 22 ,offer=trade
        match ablation/best93-seed22 runs/best93.safetensors 22
        match ablation/best205-offer-trade-seed22 runs/best205.safetensors 22 ,offer=trade ;;
    trade-confirm)
        match "${2:?the name of the checkpoint}-offer-trade-vs-two-catan-value-seed23" "runs/$2.safetensors" 23 ,offer=trade
        match widened-vs-two-catan-value-seed23 runs/widened.safetensors 23
        match widened-offer-trade-vs-two-catan-value-seed23 runs/widened.safetensors 23 ,offer=trade ;;
    # Run B's final best checkpoint (copied to runs/NAME) in four players on seeds nothing chose:
    # against three trading catan-value (600 games, seed 44) and three alpha-beta on catan-value
    # with modelled answers (240 games, seed 45).
    confirm4)
        n=${2:?the name of the checkpoint}
        [ -f "$HERE/$n-vs-three-catan-value-seed44.json" ] ||
            $M arena catan:players=4,trades=true "catan-td:model=runs/$n.safetensors" catan-value catan-value catan-value \
                --games 600 --seed 44 --threads 1 --records "runs/$n-seed44.records.jsonl" --force \
                --json "$HERE/$n-vs-three-catan-value-seed44.json"
        python3 "$HERE/trade_rates.py" "runs/$n-seed44.records.jsonl" --json "$HERE/$n-vs-three-catan-value-seed44.trades.json" \
            > "$HERE/$n-vs-three-catan-value-seed44.trades.md"
        AB="alphabeta:depth=2,eval=catan-value"
        [ -f "$HERE/$n-vs-three-alphabeta-seed45.json" ] ||
            $M arena catan:players=4,trades=true "catan-td:model=runs/$n.safetensors" "$AB" "$AB" "$AB" \
                --games 240 --seed 45 --threads 1 --force --json "$HERE/$n-vs-three-alphabeta-seed45.json" ;;
    # The widened start (catan-td, its offer inputs at weight zero, never trained on trades)
    # with offer=trade scored most on seed 23, so it is confirmed on seed 24, which nothing
    # chose; in four players the widened start and run B's best, both with offer=trade, on seed
    # 46 (run B's already played), the one that scores more confirmed with confirm4-trade NAME 48.
    widened-confirm)
        match widened-offer-trade-vs-two-catan-value-seed24 runs/widened.safetensors 24 ,offer=trade
        match widened-vs-two-catan-value-seed24 runs/widened.safetensors 24 ;;
    # The shipped files (the same bytes as the runs/ ones measured above) on the confirming
    # seeds, so that the summaries name them by their place under models/.
    shipped)
        match catan-td-trades-offer-trade-vs-two-catan-value-seed24 models/catan-td-trades.safetensors 24 ,offer=trade
        sh "$0" confirm4-trade catan4-td-trades 48 models/catan4-td-trades.safetensors ;;
    widened4-choose)
        [ -f "$HERE/widened4-offer-trade-vs-three-catan-value-seed46.json" ] ||
            $M arena catan:players=4,trades=true "catan-td:model=runs/widened4.safetensors,offer=trade" catan-value \
                catan-value catan-value --games 600 --seed 46 --threads 1 --force \
                --json "$HERE/widened4-offer-trade-vs-three-catan-value-seed46.json" ;;
    # The same in four players with offers weighed by the trade they would complete, on seeds
    # nothing chose (46, 47).
    confirm4-trade)
        n=${2:?the name of the checkpoint}
        s1=${3:-46}
        s2=$((s1 + 1))
        net=${4:-runs/$n.safetensors}
        [ -f "$HERE/$n-offer-trade-vs-three-catan-value-seed$s1.json" ] ||
            $M arena catan:players=4,trades=true "catan-td:model=$net,offer=trade" catan-value catan-value \
                catan-value --games 600 --seed $s1 --threads 1 --records "runs/$n-offer-trade-seed$s1.records.jsonl" --force \
                --json "$HERE/$n-offer-trade-vs-three-catan-value-seed$s1.json"
        python3 "$HERE/trade_rates.py" "runs/$n-offer-trade-seed$s1.records.jsonl" \
            --json "$HERE/$n-offer-trade-vs-three-catan-value-seed$s1.trades.json" > "$HERE/$n-offer-trade-vs-three-catan-value-seed$s1.trades.md"
        AB="alphabeta:depth=2,eval=catan-value"
        [ -f "$HERE/$n-offer-trade-vs-three-alphabeta-seed$s2.json" ] ||
            $M arena catan:players=4,trades=true "catan-td:model=$net,offer=trade" "$AB" "$AB" "$AB" \
                --games 240 --seed $s2 --threads 1 --force --json "$HERE/$n-offer-trade-vs-three-alphabeta-seed$s2.json" ;;
esac
