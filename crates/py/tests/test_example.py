"""The README's training loop learns: its policy beats the random agent after a short run."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))

import reinforce  # noqa: E402


def test_reinforce_beats_random():
    weights = reinforce.train(updates=80, envs=128, seed=3)
    untrained = reinforce.win_rate(weights * 0, games=300, greedy=False)
    trained = reinforce.win_rate(weights, games=300)
    # 300 games: a 95% interval is about +-6 points around a score.
    assert trained > 0.7 and trained > untrained + 0.15, (untrained, trained)
