#!/usr/bin/env bash
# The god-against-god table: every ordered pairing of the ten gods (the first god's player moves
# first), played by one agent against itself, random worker placement (4 opening plies).
# Rerun with the same settings to resume: finished pairings are kept, a cut one is resumed.
# When every pairing is played, the arena summaries are folded into $OUT/matches.json (one file
# for the table, which table.py reads); the records and printed tables stay beside it, untracked.
#   GAMES   games per ordered pairing (a multiple of 2; default 6)
#   AGENT   the agent on both seats (default: the strongest alpha-beta with gods)
#   SEED    base seed (default 1)
#   OUT     output folder (default experiments/santorini-gods/table)
set -euo pipefail
MEEPLE=${MEEPLE:-./target/release/meeple}
GAMES=${GAMES:-6}
AGENT=${AGENT:-"alphabeta:time=50ms,eval=(gods:threats=true)"}
SEED=${SEED:-1}
OUT=${OUT:-experiments/santorini-gods/table}
GODS="apollo artemis athena atlas demeter hephaestus hermes minotaur pan prometheus"
mkdir -p "$OUT"
printf '*.jsonl\n*.txt\n' > "$OUT/.gitignore"
for a in $GODS; do
  for b in $GODS; do
    name="$a+$b"
    [ -s "$OUT/$name.json" ] && continue
    # A pairing already folded into the table's matches.json is done.
    [ -f "$OUT/matches.json" ] && grep -q "\"$name\": {" "$OUT/matches.json" && continue
    resume=()
    [ -s "$OUT/$name.jsonl" ] && resume=(--resume)
    "$MEEPLE" arena "santorini:gods=$name" "$AGENT" "$AGENT" --games "$GAMES" --seed "$SEED" --opening-plies 4 \
      --threads "${THREADS:-2}" --records "$OUT/$name.jsonl" --json "$OUT/$name.json" "${resume[@]}" > "$OUT/$name.txt" 2>&1
    echo "$name done"
  done
done
python3 experiments/bundle.py "$OUT"
python3 experiments/santorini-gods/table.py "$OUT"
