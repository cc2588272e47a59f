"""meeple: board-game AI with a Rust core.

The core follows OpenSpiel's pyspiel: ``Game(spec)`` builds a game, ``new_initial_state()`` a
``State`` whose actions are integer ids. ``Agent(spec, game)`` is any agent the ``meeple``
command line knows (random, alpha-beta, MCTS, ISMCTS, the games' own, learned ``az`` and
``policy``); ``arena`` plays matches; ``read_records`` reads ``meeple arena --records`` files.

Environments for learning: ``meeple.pettingzoo.env(spec)`` (PettingZoo AEC, every seat),
``meeple.gymnasium.env(spec, opponents=...)`` (one seat against meeple agents) and
``VecEnv(spec, num_envs)`` (many games stepped together in Rust, numpy in and out).

Training: ``train(kind, game, out, games=..., **settings)`` runs any trainer of
``meeple train`` (``az``, ``td``, ``value``, ``dqn``, ``ppo``, ``vae``, ``rootstrap``, ``treestrap``,
``tdleaf``) with the same run directory, progress, interruption and resume.
"""

from ._meeple import (
    CHANCE,
    TERMINAL,
    Agent,
    Game,
    Rng,
    State,
    VecEnv,
    __version__,
    arena,
    game_infos,
    games,
    read_records,
    train,
)

__all__ = [
    "CHANCE",
    "TERMINAL",
    "Agent",
    "Game",
    "Rng",
    "State",
    "VecEnv",
    "__version__",
    "arena",
    "game_infos",
    "games",
    "read_records",
    "train",
    "gymnasium",
    "pettingzoo",
]


def __getattr__(name):
    # The environment modules need pettingzoo/gymnasium; import them only when asked for, so
    # `import meeple` works with numpy alone.
    if name in ("pettingzoo", "gymnasium"):
        import importlib

        return importlib.import_module(f"meeple.{name}")
    raise AttributeError(f"module 'meeple' has no attribute '{name}'")
