"""PettingZoo AEC environments for every meeple game.

``env(spec)`` gives agents ``player_0`` .. ``player_{n-1}``. Chance (dice, shuffles, draws) is
resolved inside ``reset`` and ``step`` from the environment's own seeded generator, never as an
agent's turn. ``observe(agent)`` returns that agent's own view (hidden information absent) and
an int8 action mask (zeros when it is not that agent's turn). Rewards are 0 until the end; then
every seat gets its reward in the same step: +1 win, -1 loss, 0 draw for two players, the
game's returns mapped to [-1, 1] for more, with raw ``returns`` and ``scores`` in ``infos``.
``max_turns`` cuts a game off (truncation, reward 0). An illegal action raises ``ValueError``
with the rule's reason; wrap the env in PettingZoo's ``TerminateIllegalWrapper`` for
"illegal move loses".
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from . import _meeple

__all__ = ["env", "raw_env", "MeepleEnv"]


def _positive_or_none(value, what):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what}: expected a positive integer or None, got {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"{what}: expected a positive integer or None, got {value}")
    return int(value)


def _seed_or_none(value, what="seed"):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what}: expected a non-negative integer or None, got {type(value).__name__}")
    if not 0 <= value < 2**64:
        raise ValueError(f"{what}: expected an integer from 0 to 2**64 - 1, got {value}")
    return int(value)


class MeepleEnv(AECEnv):
    """One meeple game as a PettingZoo AEC environment."""

    metadata = {"render_modes": ["ansi"], "name": "meeple_v0", "is_parallelizable": False}

    def __init__(self, spec="connect4", seed=None, max_turns=None, render_mode=None):
        super().__init__()
        self.game = spec if isinstance(spec, _meeple.Game) else _meeple.Game(spec)
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode {render_mode!r}: accepted are None and 'ansi'")
        self.render_mode = render_mode
        self.max_turns = _positive_or_none(max_turns, "max_turns")
        self._base_seed = _seed_or_none(seed)
        self._episodes = 0
        n = self.game.num_players
        self.possible_agents = [f"player_{i}" for i in range(n)]
        self._seat = {a: i for i, a in enumerate(self.possible_agents)}
        shape = tuple(self.game.observation_shape)
        actions = self.game.num_actions
        self._obs_spaces = {
            a: spaces.Dict(
                {
                    "observation": spaces.Box(0.0, 1.0, shape, np.float32),
                    "action_mask": spaces.Box(0, 1, (actions,), np.int8),
                }
            )
            for a in self.possible_agents
        }
        self._act_spaces = {a: spaces.Discrete(actions) for a in self.possible_agents}
        self._no_moves = np.zeros(actions, np.int8)
        self.metadata = dict(self.metadata, name=f"meeple_{self.game.name}_v0")
        self._state = None

    def observation_space(self, agent):
        return self._obs_spaces[agent]

    def action_space(self, agent):
        return self._act_spaces[agent]

    @property
    def state_object(self):
        """The underlying ``meeple.State`` (full information: for analysis, not for agents)."""
        return self._state

    def reset(self, seed=None, options=None):
        seed = _seed_or_none(seed)
        if seed is not None:
            self._base_seed = seed
            self._episodes = 0
        # Without a seed, episodes follow on from the last one given (0 if none): every game is
        # reproducible from the seeds the user gave.
        episode_seed = ((self._base_seed or 0) + self._episodes) % 2**64
        self._episodes += 1
        self.episode_seed = episode_seed
        self._rng = _meeple.Rng(episode_seed)
        self._state = self.game.new_initial_state()
        self._state.resolve_chance(self._rng)
        self._turns = 0
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0 for a in self.agents}
        self._cumulative_rewards = {a: 0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self.agent_selection = self.possible_agents[self._state.current_player]

    def observe(self, agent):
        seat = self._seat[agent]
        state = self._state
        mask = state.legal_action_mask() if state.current_player == seat else self._no_moves.copy()
        return {"observation": state.observation(seat), "action_mask": mask}

    def step(self, action):
        if self._state is None:
            raise ValueError("step() before reset(): call reset() first")
        if not self.agents:
            raise ValueError("the game is over and every agent has left: call reset() to play again")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if action is None:
            raise ValueError(f"{agent} is to move: give an action id, not None (None is for finished agents)")
        if isinstance(action, np.ndarray) and action.shape in ((), (1,)):
            action = action.reshape(()).item()
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            raise TypeError(f"action: expected an integer action id, got {type(action).__name__}")
        state = self._state
        state.apply_action(int(action))
        state.resolve_chance(self._rng)
        self._turns += 1
        self._cumulative_rewards[agent] = 0
        player = state.current_player
        if player >= 0:
            if self.max_turns is not None and self._turns >= self.max_turns:
                self._finish(truncated=True)
            else:
                self.agent_selection = self.possible_agents[player]
        else:
            self._finish(truncated=False)

    def _finish(self, truncated):
        state = self._state
        returns = state.returns()
        scores = state.scores()
        for a in self.agents:
            seat = self._seat[a]
            if truncated:
                self.truncations[a] = True
            else:
                self.terminations[a] = True
                self.rewards[a] = float(np.clip(2.0 * returns[seat] - 1.0, -1.0, 1.0))
            self.infos[a] = {"returns": returns, "scores": scores, "turns": self._turns}
        self._accumulate_rewards()
        # Finished agents step None in seat order, starting after the one that moved last.
        seat = self._seat[self.agent_selection]
        n = len(self.possible_agents)
        self.agent_selection = self.possible_agents[(seat + 1) % n]

    def render(self):
        if self.render_mode is None:
            import warnings

            warnings.warn("render() without a render_mode: create the env with render_mode='ansi'", stacklevel=2)
            return None
        if self._state is None:
            return "(not reset)"
        return str(self._state)

    def close(self):
        pass


def raw_env(spec="connect4", seed=None, max_turns=None, render_mode=None):
    """The environment without PettingZoo's wrappers."""
    return MeepleEnv(spec, seed=seed, max_turns=max_turns, render_mode=render_mode)


def env(spec="connect4", seed=None, max_turns=None, render_mode=None):
    """A meeple game as a PettingZoo AEC environment (``spec`` like ``"catan:players=3"``).

    It checks its own input (an out-of-range or illegal action, or a step after the end, is a
    ``ValueError``), so it needs none of PettingZoo's checking wrappers and keeps their cost
    off every step.
    """
    return raw_env(spec, seed=seed, max_turns=max_turns, render_mode=render_mode)
