#!/bin/sh
# What makes the Santorini gods network cheaper to train, curve against curve: the same az run
# (the shipped gods network's settings: resnet 4x32, 128 simulations, half the games opened by
# 8 random plies) for the same 3,840 self-play games (15 generations of 256), one thread, seed 7,
#   scratch   fresh weights,
#   warm      --init models/santorini-az (the base game's network; god planes start at zero),
#   teacher   fresh weights, its first 3 generations played by alpha-beta on the gods evaluator,
# each evaluated every 3 generations: 40 games against alpha-beta on the gods evaluator given the
# network's own time a move, and 40 against a fixed rung, alpha-beta depth 2 on it, 4 random
# opening plies (the god draw and the placements). Arms to run are the arguments (default all);
# a finished arm is skipped, a stopped one resumes. MEEPLE names the binary.
set -e
M=${MEEPLE:-target/release/meeple}
HERE=experiments/santorini-gods-warm-start
GODS="alphabeta:eval=(gods:threats=true)"
for arm in ${@:-scratch warm teacher}; do
    case $arm in
        scratch) extra="--net resnet:blocks=4,channels=32,policy_filters=4,value_filters=4" ;;
        warm) extra="--init models/santorini-az.safetensors" ;;
        teacher) extra="--net resnet:blocks=4,channels=32,policy_filters=4,value_filters=4 --teacher alphabeta:depth=2,eval=(gods:threats=true) --teacher-generations 3" ;;
        *) echo "unknown arm $arm (scratch, warm, teacher)"; exit 2 ;;
    esac
    out=$HERE/$arm
    resume=
    if [ -f "$out/run.json" ]; then
        python3 -c "import json,sys; sys.exit(json.load(open('$out/run.json'))['progress']['episodes'] < 3840)" && continue
        resume=--resume
    fi
    $M train az santorini:gods=random $extra --sims 128 --random-opening-share 0.5 --random-opening-plies 8 \
        --eval-every 3 --eval-games 40 --eval-opening-plies 4 --ladder "alphabeta:depth=2,eval=(gods:threats=true)" \
        --equal-time "$GODS" --threads 1 --games 3840 --seed 7 --out "$out" $resume
done
