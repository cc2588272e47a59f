#!/bin/bash
# Usage: bench-side-by-side.sh BEFORE AFTER OUT.jsonl [GAME...]: `meeple bench GAME --json
# --seconds 2` of two builds, alternated twice per game in one run (so both meet the same
# machine), one JSON line each with the build's label added. OUT must not exist.
set -euo pipefail
B=$1; A=$2; OUT=$3; shift 3
GAMES=("$@"); ((${#GAMES[@]})) || GAMES=(catan:players=3 santorini connect4 sagrada)
[ -e "$OUT" ] && { echo "$OUT exists; give a new file" >&2; exit 2; }
TMP=$OUT.part; : > "$TMP"
for g in "${GAMES[@]}"; do
  for rep in 1 2; do
    for build in before after; do
      bin=$B; [ $build = after ] && bin=$A
      "$bin" bench "$g" --json --seconds 2 | python3 -c "import json,sys; d=json.load(sys.stdin); d['build']='$build'; d['repetition']=$rep; print(json.dumps(d))" >> "$TMP"
    done
  done
done
mv "$TMP" "$OUT"
