#!/usr/bin/env python3
"""Writes each level's measured strength into crates/web/static/levels.json from the arena JSON
of the match that measured it (experiments/web-levels/NAME.json): the level's score against the
level below with its 95% Wilson interval, the games, and both sides' mean ms a move.

    python3 experiments/web-levels/levels.py

crates/web/tests/levels.rs recomputes every figure from the same files; run this after a match is
played again. Standard library only.
"""
import json
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LEVELS = os.path.join(ROOT, "crates", "web", "static", "levels.json")
HERE = os.path.join(ROOT, "experiments", "web-levels")
WORDS = {2: "two", 3: "three", 4: "four", 5: "five"}


def wilson(score, n, z=1.959963984540054):
    centre = (score + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(score * (1 - score) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def short_ms(x):
    """A time a move, to two figures (sub-millisecond agents are not all 0)."""
    if x >= 10:
        return round(x)
    if x >= 1:
        return round(x, 1)
    return float(f"{x:.2g}")


def said_ms(x):
    """A time a move in words."""
    if x >= 10:
        return f"{x:.0f}"
    if x >= 1:
        return f"{x:.1f}"
    if x >= 0.01:
        return f"{x:.2f}"
    return "under 0.01"


def find(agents, name):
    for a in agents:
        if a["name"] == name or a["name"] == name + "#1":
            return a
    raise SystemExit(f"no agent {name!r} among {[a['name'] for a in agents]}")


def measure(level_list):
    """Each level's figures from the match against the level below (where it was measured)."""
    below = None
    for level in level_list:
        m = level.get("measured")
        if m:
            with open(os.path.join(HERE, m["file"] + ".json")) as f:
                result = json.load(f)
            me, them = find(result["agents"], m["as"]), find(result["agents"], m["against"])
            n = me["wins"] + me["draws"] + me["losses"]
            score = (me["wins"] + me["draws"] / 2) / n
            lo, hi = wilson(score, n)
            seats = len(result["agents"])
            m.update({
                "games": n, "wins": me["wins"], "draws": me["draws"], "losses": me["losses"],
                "score": round(100 * score, 1), "ci": [round(100 * lo, 1), round(100 * hi, 1)],
                "ms": [short_ms(me["mean_move_ms"]), short_ms(them["mean_move_ms"])],
            })
            interval = f"{m['score']:.1f}% [{m['ci'][0]:.1f}, {m['ci'][1]:.1f}]"
            # The card's line for players; the full figure is its tooltip.
            if seats > 2:
                level["short"] = (f"wins {m['score']:.0f}% against {WORDS.get(seats - 1, seats - 1)} {below} "
                                  f"(a fair share is {100 / seats:.0f}%)")
            else:
                level["short"] = f"scores {m['score']:.0f}% against {below}"
            if seats > 2:
                level["strength"] = (
                    f"won {interval} of {n} games against {WORDS.get(seats - 1, seats - 1)} {below} players "
                    f"(an equal seat wins {100 / seats:.0f}%)")
            else:
                level["strength"] = f"scored {interval} against {below} over {n} games"
            level["strength"] += f"; {said_ms(m['ms'][0])} ms a move against {said_ms(m['ms'][1])}"
        below = level["name"]


def main():
    with open(LEVELS) as f:
        levels = json.load(f)
    for game, entry in levels["games"].items():
        measure(entry["levels"])
        # A variant (its own setting of the game) has levels of its own, measured in it.
        for variant in entry.get("variants", []):
            if "levels" in variant:
                measure(variant["levels"])
    if "--table" in sys.argv:
        print("| game | level | agent | against the level below | games | ms a move (level, below) |")
        print("|---|---|---|---|---|---|")
        for game, entry in levels["games"].items():
            lists = [(entry["title"], entry["levels"])]
            lists += [(f"{entry['title']} ({v['name'].lower()})", v["levels"]) for v in entry.get("variants", []) if "levels" in v]
            for title, level in ((t, lv) for t, ls in lists for lv in ls):
                m = level.get("measured")
                score = f"{m['score']:.1f}% [{m['ci'][0]:.1f}, {m['ci'][1]:.1f}] (+{m['wins']} ={m['draws']} -{m['losses']})" if m else "the baseline"
                games = m["games"] if m else ""
                ms = f"{said_ms(m['ms'][0])}, {said_ms(m['ms'][1])}" if m else ""
                print(f"| {title} | {level['name']} | `{level['agent']}` | {score} | {games} | {ms} |")
    text = json.dumps(levels, indent=1, ensure_ascii=False) + "\n"
    with open(LEVELS + ".tmp", "w") as f:
        f.write(text)
    os.replace(LEVELS + ".tmp", LEVELS)
    print(f"wrote {LEVELS}")


if __name__ == "__main__":
    sys.exit(main())
