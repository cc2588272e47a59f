#!/usr/bin/env python3
"""A table of many small matches kept as one file: folds a folder's arena summaries
(NAME.json, each one match) into FOLDER/matches.json, keyed by NAME, and points the pages that
named a summary at `matches.json#NAME`. Run again after new matches to fold them in.

    python3 experiments/bundle.py FOLDER            fold FOLDER/*.json into FOLDER/matches.json
    python3 experiments/bundle.py FOLDER --extract NAME [--out FILE]
                                                    write one summary back out (for `meeple plot`)

The claims test reads `FOLDER/matches.json#NAME` as it reads a single summary. Standard library
only."""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

BUNDLE = "matches.json"
ABOUT = ("Arena summaries, one per match, keyed by the name of the file each was written to "
         "(NAME.json); `python3 experiments/bundle.py FOLDER --extract NAME` writes one back out.")


def is_summary(value):
    return isinstance(value, dict) and "agents" in value and "games" in value


def load(folder):
    path = folder / BUNDLE
    if not path.exists():
        return {"about": ABOUT, "matches": {}}
    bundle = json.loads(path.read_text())
    if not isinstance(bundle.get("matches"), dict):
        sys.exit(f"{path}: not a bundle of matches (no `matches` object)")
    return bundle


def write(path, value):
    # Whole or not at all: an interruption leaves the old bundle.
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(value, indent=1, sort_keys=False) + "\n")
    os.replace(tmp, path)


def repo_root():
    out = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def repoint_pages(root, folder, names):
    """Every tracked page or script that names a folded file names the bundle's entry instead."""
    listed = subprocess.run(["git", "ls-files", "*.md", "*.sh", "*.py"], capture_output=True, text=True, cwd=root,
                            check=True).stdout.split()
    for page in listed:
        path = root / page
        text = path.read_text()
        new = text
        for name in names:
            target = (folder / f"{name}.json").resolve()
            bundle = (folder / BUNDLE).resolve()
            rel = os.path.relpath(target, path.parent.resolve())
            rel_bundle = os.path.relpath(bundle, path.parent.resolve())
            from_root = os.path.relpath(target, root)
            for old, repl in ((from_root, f"{os.path.relpath(bundle, root)}#{name}"), (rel, f"{rel_bundle}#{name}")):
                new = new.replace(f"]({old})", f"]({repl})").replace(f"`{old}`", f"`{repl}`")
        if new != text:
            path.write_text(new)
            print(f"{page}: points at {BUNDLE}")


def fold(folder):
    bundle = load(folder)
    names = []
    for f in sorted(folder.glob("*.json")):
        if f.name == BUNDLE:
            continue
        value = json.loads(f.read_text())
        if not is_summary(value):
            continue
        name = f.stem
        if name in bundle["matches"] and bundle["matches"][name] != value:
            sys.exit(f"{f}: {BUNDLE} already holds another match named {name}; rename one")
        bundle["matches"][name] = value
        names.append(name)
    if not names:
        sys.exit(f"{folder}: no arena summaries to fold")
    write(folder / BUNDLE, bundle)
    for name in names:
        (folder / f"{name}.json").unlink()
    repoint_pages(repo_root(), folder, names)
    print(f"{folder}/{BUNDLE}: {len(names)} matches folded, {len(bundle['matches'])} in all")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", type=Path)
    ap.add_argument("--extract", metavar="NAME", help="write this match's summary back out")
    ap.add_argument("--out", type=Path, help="where --extract writes (default FOLDER/NAME.json; refused if it exists)")
    args = ap.parse_args()
    if not args.folder.is_dir():
        sys.exit(f"{args.folder}: not a folder")
    if args.extract is None:
        if args.out:
            sys.exit("--out names where --extract writes; without --extract there is nothing to write")
        fold(args.folder)
        return
    matches = load(args.folder)["matches"]
    if args.extract not in matches:
        sys.exit(f"{args.folder / BUNDLE}: no match {args.extract!r}; it holds {', '.join(sorted(matches))}")
    out = args.out or args.folder / f"{args.extract}.json"
    if out.exists():
        sys.exit(f"{out} exists; name another file with --out")
    write(out, matches[args.extract])
    print(out)


if __name__ == "__main__":
    main()
