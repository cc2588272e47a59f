#!/usr/bin/env bash
# The god-against-god table: every ordered pairing of the ten gods (the first god's player moves
# first), played by one agent against itself, random worker placement (4 opening plies).
# Rerun with the same settings to resume: finished pairings are kept, a cut one is resumed.
# When every pairing is played, the per-pairing files (arena JSON, records, printed table) are
# packed into $OUT/games.tar.gz, which table.py reads as it is.
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
# A packed table is unpacked to go on with it.
if [ -f "$OUT/games.tar.gz" ] && ! compgen -G "$OUT/*+*.json" > /dev/null; then tar xzf "$OUT/games.tar.gz" -C "$OUT"; fi
for a in $GODS; do
  for b in $GODS; do
    name="$a+$b"
    [ -s "$OUT/$name.json" ] && continue
    resume=()
    [ -s "$OUT/$name.jsonl" ] && resume=(--resume)
    "$MEEPLE" arena "santorini:gods=$name" "$AGENT" "$AGENT" --games "$GAMES" --seed "$SEED" --opening-plies 4 \
      --threads "${THREADS:-2}" --records "$OUT/$name.jsonl" --json "$OUT/$name.json" "${resume[@]}" > "$OUT/$name.txt" 2>&1
    echo "$name done"
  done
done
(cd "$OUT" && tar czf games.tar.gz --sort=name --owner=0 --group=0 --mtime=2026-01-01 ./*+*.json ./*+*.jsonl ./*+*.txt && rm ./*+*.json ./*+*.jsonl ./*+*.txt)
python3 experiments/santorini-gods/table.py "$OUT"
