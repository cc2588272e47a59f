#!/usr/bin/env python3
"""Reads the table's arena JSON (one file per ordered pairing, in the folder or packed in its
matches.json) and writes table.md (the first god's win rate for every ordered pairing, each
god's overall score with its Wilson interval) and table.svg (the same as a heat map). Standard
library only."""
import json
import math
import sys
from pathlib import Path

# Pages mark figures the claims test cannot recompute (here: counted from records).
LEGEND = "° Not recomputed by the test suite: a figure pooled by hand over several matches, counted from game records, read from a training run's evaluations, or whose raw summary was not kept. Every other `S% [L, H]` here is recomputed from an arena summary (`cargo test -p meeple-arena --test claims`)."

GODS = ["apollo", "artemis", "athena", "atlas", "demeter", "hephaestus", "hermes", "minotaur", "pan", "prometheus"]


def wilson(wins, n, z=1.959963984540054):
    if n == 0:
        return (0.0, 1.0)
    p = wins / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def summaries(out):
    """Each pairing's arena summary by its name (`apollo+pan`): the table's matches.json
    (`experiments/bundle.py`), and any pairing's file not folded into it yet."""
    found = {}
    bundle = out / "matches.json"
    if bundle.exists():
        found.update(json.loads(bundle.read_text())["matches"])
    found.update({f.stem: json.loads(f.read_text()) for f in out.glob("*+*.json")})
    return found


def first_seat(d):
    """Wins and games of the first player (seat 0) over a pairing's games."""
    wins = sum(a["by_seat"][0]["wins"] + 0.5 * a["by_seat"][0]["draws"] for a in d["agents"])
    games = sum(sum(a["by_seat"][0][k] for k in ("wins", "draws", "losses")) for a in d["agents"])
    return wins, games, d


def main(out):
    out = Path(out)
    cell = {}
    agent = game = None
    found = summaries(out)
    for a in GODS:
        for b in GODS:
            if f"{a}+{b}" in found:
                w, n, d = first_seat(found[f"{a}+{b}"])
                cell[(a, b)] = (w, n)
                agent = d["agents"][0]["spec"]
    # A god's score: its games as the first player and as the second, mirror pairings aside.
    total = {}
    for g in GODS:
        w = n = 0
        for h in GODS:
            if h == g:
                continue
            if (g, h) in cell:
                w += cell[(g, h)][0]
                n += cell[(g, h)][1]
            if (h, g) in cell:
                w += cell[(h, g)][1] - cell[(h, g)][0]
                n += cell[(h, g)][1]
        total[g] = (w, n)
    first_w = sum(w for (a, b), (w, n) in cell.items())
    first_n = sum(n for (a, b), (w, n) in cell.items())
    lines = [f"Agent on both seats: `{agent}`; {len(cell)} ordered pairings; random placement (4 opening plies).", ""]
    lines.append("First player's win rate, row god first (its player moves first) against the column god:")
    lines.append("")
    lines.append("| first \\ second | " + " | ".join(g[:5] for g in GODS) + " |")
    lines.append("|" + " --- |" * (len(GODS) + 1))
    for a in GODS:
        row = []
        for b in GODS:
            if (a, b) in cell:
                w, n = cell[(a, b)]
                row.append(f"{100 * w / n:.0f}% ({n})")
            else:
                row.append("")
        lines.append(f"| **{a}** | " + " | ".join(row) + " |")
    lines.append("")
    lo, hi = wilson(first_w, first_n)
    lines.append(f"The first player over all pairings: {100 * first_w / max(first_n, 1):.1f}% "
                 f"[{100 * lo:.1f}, {100 * hi:.1f}]° of {first_n} games.")
    lines.append("")
    lines.append("Each god against the nine others, both seats (mirror pairings left out), best first:")
    lines.append("")
    lines.append("| god | score | 95% interval | games |")
    lines.append("| --- | --- | --- | --- |")
    for g in sorted(GODS, key=lambda g: -total[g][0] / max(total[g][1], 1)):
        w, n = total[g]
        lo, hi = wilson(w, n)
        lines.append(f"| {g} | {100 * w / max(n, 1):.1f}% | [{100 * lo:.1f}, {100 * hi:.1f}] | {n} |")
    lines += ["", LEGEND]
    (out / "table.md").write_text("\n".join(lines) + "\n")
    # Heat map: blue where the row god wins, red where it loses.
    size, left, top = 46, 110, 110
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + size * 10 + 20}" height="{top + size * 10 + 40}" '
           'font-family="sans-serif" font-size="12">',
           f'<text x="10" y="20" font-size="14">First player\'s win rate (row god first), {agent}</text>']
    for j, b in enumerate(GODS):
        svg.append(f'<text transform="translate({left + j * size + size / 2 + 4},{top - 6}) rotate(-60)">{b}</text>')
    for i, a in enumerate(GODS):
        svg.append(f'<text x="{left - 6}" y="{top + i * size + size / 2 + 4}" text-anchor="end">{a}</text>')
        for j, b in enumerate(GODS):
            if (a, b) not in cell:
                continue
            w, n = cell[(a, b)]
            p = w / n
            r, g_, bl = (int(255 * (1 - max(0, p - 0.5) * 2)), int(255 * (1 - abs(p - 0.5) * 2)), int(255 * (1 - max(0, 0.5 - p) * 2)))
            svg.append(f'<rect x="{left + j * size}" y="{top + i * size}" width="{size - 2}" height="{size - 2}" '
                       f'fill="rgb({r},{g_},{bl})"/><text x="{left + j * size + size / 2 - 1}" y="{top + i * size + size / 2 + 4}" '
                       f'text-anchor="middle">{100 * p:.0f}</text>')
    svg.append(f'<text x="10" y="{top + size * 10 + 25}">blue: the row god\'s player wins; red: it loses; each cell {n} games</text>')
    svg.append("</svg>")
    (out / "table.svg").write_text("\n".join(svg) + "\n")
    print((out / "table.md").read_text())


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "experiments/santorini-gods/table")
