"""A Gymnasium single-agent environment: the learner plays one seat, meeple agents the others.

``env(spec, opponents="mcts:iters=200", seat=0)``: the observation is the learner's own view
(a float32 ``Box(0, 1)`` of the game's observation shape); the legal moves are in
``info["action_mask"]`` and ``action_masks()`` (the convention of sb3-contrib's MaskablePPO).
The opponents move inside ``step`` (and inside ``reset`` when they sit before the learner);
chance is resolved from the environment's seeded generator. The reward is 0 until the end,
then +1 win, -1 loss, 0 draw (two players) or the learner's return mapped to [-1, 1].

Every game is registered with Gymnasium at its default variant, as ``meeple/<Name>-v0``
(``gymnasium.make("meeple/Connect4-v0", opponents="mcts:iters=200")``; other keywords go to
``env``, ``spec=`` picks a variant). Installing meeple makes the ids known to
``gymnasium.make`` without importing meeple first (an entry point in the ``gymnasium.envs``
group).

An illegal action (``illegal="lose"``, the default) ends the episode with reward -1 and
``info["illegal"]`` giving the rule's reason, as pgx and PettingZoo's ``TerminateIllegalWrapper``
do; ``illegal="raise"`` raises ``ValueError`` instead. An action outside ``action_space`` always
raises.
"""

from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium import spaces

from . import _meeple

__all__ = ["env", "MeepleGymEnv", "ENV_IDS", "register_envs"]


class MeepleGymEnv(gymnasium.Env):
    """One seat of a meeple game against meeple agents."""

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, spec="connect4", opponents="mcts:iters=200", seat=0, max_turns=None, illegal="lose",
                 render_mode=None):
        super().__init__()
        self.game = spec if isinstance(spec, _meeple.Game) else _meeple.Game(spec)
        n = self.game.num_players
        if isinstance(opponents, str):
            opponents = [opponents] * (n - 1)
        opponents = list(opponents)
        if len(opponents) != n - 1 or not all(isinstance(o, str) for o in opponents):
            raise ValueError(
                f"opponents: give one agent spec, or a list of {n - 1} (one per other seat of {self.game.spec})")
        # Build each once here, so that a bad spec fails now with the spec's own error.
        for o in opponents:
            _meeple.Agent(o, self.game, 0)
        self.opponents = opponents
        if seat != "random" and (isinstance(seat, bool) or not isinstance(seat, (int, np.integer))
                                 or not 0 <= seat < n):
            raise ValueError(f"seat {seat!r}: give a seat from 0 to {n - 1}, or 'random'")
        self.seat_choice = seat if seat == "random" else int(seat)
        if max_turns is not None and (isinstance(max_turns, bool) or not isinstance(max_turns, (int, np.integer))
                                      or max_turns <= 0):
            raise ValueError(f"max_turns {max_turns!r}: give a positive integer or None")
        self.max_turns = max_turns
        if illegal not in ("lose", "raise"):
            raise ValueError(f"illegal {illegal!r}: accepted are 'lose' and 'raise'")
        self.illegal = illegal
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode {render_mode!r}: accepted are None and 'ansi'")
        self.render_mode = render_mode
        self.observation_space = spaces.Box(0.0, 1.0, tuple(self.game.observation_shape), np.float32)
        self.action_space = spaces.Discrete(self.game.num_actions)
        self._state = None

    def _info(self, **extra):
        info = {"action_mask": self._state.legal_action_mask(), "seat": self.seat, "turns": self._turns}
        info.update(extra)
        return info

    def _play_opponents(self):
        state = self._state
        while True:
            state.resolve_chance(self._rng)
            p = state.current_player
            if p < 0 or p == self.seat or (self.max_turns is not None and self._turns >= self.max_turns):
                return
            k = (p - self.seat - 1) % self.game.num_players
            state.apply_action(self._agents[k].act(state))
            self._turns += 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        episode_seed = int(self.np_random.integers(0, 2**63))
        n = self.game.num_players
        self.seat = int(self.np_random.integers(0, n)) if self.seat_choice == "random" else self.seat_choice
        self._rng = _meeple.Rng(episode_seed)
        self._agents = [_meeple.Agent(o, self.game, (episode_seed + 1 + k) % 2**64)
                        for k, o in enumerate(self.opponents)]
        self._state = self.game.new_initial_state()
        self._turns = 0
        self._over = False
        self._play_opponents()
        return self._state.observation(self.seat), self._info()

    def _result(self):
        state = self._state
        if state.is_terminal():
            r = state.returns()[self.seat]
            return float(np.clip(2.0 * r - 1.0, -1.0, 1.0)), True, False
        if self.max_turns is not None and self._turns >= self.max_turns:
            return 0.0, False, True
        return 0.0, False, False

    def step(self, action):
        if self._state is None:
            raise ValueError("step() before reset(): call reset() first")
        if self._over:
            raise ValueError("the episode is over: call reset() to play again")
        if isinstance(action, np.ndarray) and action.shape in ((), (1,)):
            action = action.reshape(()).item()
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            raise TypeError(f"action: expected an integer action id, got {type(action).__name__}")
        if not 0 <= action < self.game.num_actions:
            raise ValueError(f"action {action} is out of range: actions are 0 to {self.game.num_actions - 1}")
        try:
            self._state.apply_action(int(action))
        except ValueError as e:
            if self.illegal == "raise":
                raise
            obs = self._state.observation(self.seat)
            info = self._info(illegal=str(e))
            self._over = True
            return obs, -1.0, True, False, info
        self._turns += 1
        self._play_opponents()
        reward, terminated, truncated = self._result()
        self._over = terminated or truncated
        info = self._info()
        if terminated or truncated:
            info.update(returns=self._state.returns(), scores=self._state.scores())
        return self._state.observation(self.seat), reward, terminated, truncated, info

    def action_masks(self):
        """The legal moves now, as a bool array (for sb3-contrib's MaskablePPO)."""
        return self._state.legal_action_mask().astype(bool)

    def render(self):
        if self.render_mode is None:
            return None
        return str(self._state)


def env(spec="connect4", opponents="mcts:iters=200", seat=0, max_turns=None, illegal="lose", render_mode=None):
    """A meeple game as a Gymnasium environment for one seat (see the module's help)."""
    return MeepleGymEnv(spec, opponents=opponents, seat=seat, max_turns=max_turns, illegal=illegal,
                        render_mode=render_mode)


#: The Gymnasium id of each game, in the order ``meeple.games()`` lists them.
ENV_IDS = {
    name: "meeple/" + {"tictactoe": "TicTacToe", "connect4": "Connect4"}.get(name, name.capitalize()) + "-v0"
    for name in _meeple.games()
}


def register_envs():
    """Registers every game with Gymnasium (``meeple/Connect4-v0`` ...); safe to call twice."""
    for name, env_id in ENV_IDS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point="meeple.gymnasium:MeepleGymEnv", kwargs={"spec": name})


register_envs()
