import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def repo_root():
    return ROOT


@pytest.fixture(scope="session")
def meeple_cli():
    """The meeple binary (MEEPLE_BIN, or one cargo built in target/), for side-by-side checks."""
    candidates = [os.environ.get("MEEPLE_BIN")] + [str(ROOT / "target" / p / "meeple") for p in ("debug", "release")]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    return None
