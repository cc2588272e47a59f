#!/usr/bin/env python3
"""How often each agent offers, accepts and is accepted, from `meeple arena --records` files.

    python3 trade_rates.py RECORDS.jsonl [MORE.jsonl ...] [--json OUT.json]

Every game's moves are read with the seat that made each (`move_seats`; chance outcomes such as
`dice:8` have none). For each agent spec (the same spec in several seats pooled):
  offers a game       offers it put to the table, a game it played;
  accepts             of the offers put to it, the share it answered `accept`;
  accepted            of its offers, the share that at least one player accepted;
  traded             of its offers, the share that ended in a trade (`with:k`), not `withdraw`;
  trades a game       trades it took part in (either side), a game.
"""

import json
import sys
from collections import defaultdict

CHANCE = ("dice:", "card:", "stole:", "tile:", "red:", "number:", "harbour:")


def rates(paths):
    n = defaultdict(lambda: defaultdict(int))
    for path in paths:
        with open(path) as f:
            for line in f:
                g = json.loads(line)
                agents = g["agents"]
                moves = [a for a in g["actions"] if not a.startswith(CHANCE)]
                if len(moves) != len(g["move_seats"]):
                    sys.exit(f"{path} game {g['index']}: {len(moves)} moves but {len(g['move_seats'])} seats")
                for a in set(agents):
                    n[a]["games"] += agents.count(a)
                offer = None  # (offering seat, anyone accepted)
                for a, seat in zip(moves, g["move_seats"]):
                    who = agents[seat]
                    if a.startswith("offer:"):
                        offer = [seat, False]
                        n[who]["offers"] += 1
                    elif a in ("accept", "decline"):
                        n[who]["answers"] += 1
                        if a == "accept":
                            n[who]["accepts"] += 1
                            if offer and not offer[1]:
                                offer[1] = True
                                n[agents[offer[0]]]["accepted"] += 1
                    elif a.startswith("with:"):
                        n[who]["traded"] += 1
                        n[who]["trades"] += 1
                        n[agents[int(a[5:])]]["trades"] += 1
                        offer = None
                    elif a == "withdraw":
                        offer = None
    out = {}
    for a, c in sorted(n.items()):
        share = lambda x, y: x / y if y else None  # noqa: E731
        out[a] = {
            "games": c["games"],
            "offers_a_game": c["offers"] / c["games"],
            "accepts": share(c["accepts"], c["answers"]),
            "accepted": share(c["accepted"], c["offers"]),
            "traded": share(c["traded"], c["offers"]),
            "trades_a_game": c["trades"] / c["games"],
            "counts": dict(c),
        }
    return out


def main():
    args = sys.argv[1:]
    out_json = None
    if "--json" in args:
        i = args.index("--json")
        out_json = args[i + 1]
        del args[i : i + 2]
    if not args:
        sys.exit(__doc__)
    r = rates(args)
    pct = lambda x: "-" if x is None else f"{100 * x:.1f}%"  # noqa: E731
    print("| agent | seat-games | offers a game | accepts (of offers put to it) | accepted (of its offers) | "
          "traded (of its offers) | trades a game |")
    print("|---|---|---|---|---|---|---|")
    for a, v in r.items():
        print(f"| `{a}` | {v['games']} | {v['offers_a_game']:.2f} | {pct(v['accepts'])} | {pct(v['accepted'])} | "
              f"{pct(v['traded'])} | {v['trades_a_game']:.2f} |")
    if out_json:
        with open(out_json, "w") as f:
            json.dump(r, f, indent=1)


if __name__ == "__main__":
    main()
