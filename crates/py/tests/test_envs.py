"""PettingZoo, Gymnasium and the vector environment: the interfaces' own checkers, identical
trajectories against the plain API, and bad input."""

import random

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import api_test, seed_test

import meeple
import meeple.gymnasium
import meeple.pettingzoo

# Every game and every rule variant it offers.
VARIANTS = [
    "tictactoe",
    "connect4",
    "santorini:supply=unlimited",
    "santorini:supply=official",
    "cathedral:size=10",
    "cathedral:size=8",
    "sagrada:players=2",
    "sagrada:players=3",
    "sagrada:players=4",
    "catan:players=3",
    "catan:players=4",
    # Player trading: an answer to an offer is the answering player's turn.
    "catan:players=4,trades=true",
    "catan:players=3,trades=true,hidden_hands=true",
    # God powers: a random pairing is drawn by a chance move; a turn is a few steps of one player.
    "santorini:gods=random",
    "santorini:gods=random,supply=official",
]


@pytest.mark.parametrize("spec", VARIANTS)
def test_pettingzoo_api_test(spec):
    api_test(meeple.pettingzoo.env(spec), num_cycles=1000)


@pytest.mark.parametrize("spec", VARIANTS)
def test_pettingzoo_seed_test(spec):
    seed_test(lambda: meeple.pettingzoo.env(spec), num_cycles=500)


def test_pettingzoo_rewards_truncation_and_render():
    env = meeple.pettingzoo.env("connect4", render_mode="ansi")
    env.reset(seed=1)
    # Player 0 stacks column 0 and wins on its fourth stone.
    for a in [0, 1, 0, 1, 0, 1, 0]:
        env.step(a)
    assert all(env.terminations.values())
    assert env.rewards == {"player_0": 1.0, "player_1": -1.0}
    assert env.infos["player_0"]["returns"] == [1.0, 0.0]
    assert "X" in env.render() or "x" in env.render().lower()
    for agent in env.agent_iter():
        _, reward, terminated, _, _ = env.last()
        assert terminated
        env.step(None)
    assert env.agents == []
    with pytest.raises(ValueError, match="reset"):
        env.step(0)

    env = meeple.pettingzoo.env("catan", max_turns=5)
    env.reset(seed=3)
    steps = 0
    for agent in env.agent_iter():
        obs, _, terminated, truncated, info = env.last()
        if terminated or truncated:
            assert truncated and not terminated and "scores" in info
            env.step(None)
            continue
        env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        steps += 1
    assert steps == 5


def test_pettingzoo_hidden_information_stays_hidden():
    env = meeple.pettingzoo.env("catan")
    env.reset(seed=9)
    rng = random.Random(0)
    for _ in range(200):
        agent = env.agent_selection
        obs = env.observe(agent)
        env.step(rng.choice(list(np.flatnonzero(obs["action_mask"]))))
    state = env.state_object
    for seat in range(3):
        own = state.observation(seat)
        for k in range(5):
            np.testing.assert_array_equal(state.determinize(seat, k).observation(seat), own)


def test_pettingzoo_an_answer_to_an_offer_is_the_answering_players_turn():
    env = meeple.pettingzoo.env("catan:players=4,trades=true")
    env.reset(seed=3)
    rng = random.Random(1)
    answered = 0
    for _ in range(20000):
        agent = env.agent_selection
        mask = env.observe(agent)["action_mask"]
        legal = list(np.flatnonzero(mask))
        if env.terminations[agent] or env.truncations[agent]:
            break
        # Prefer offers, so that many are made.
        offers = [a for a in legal if env.state_object.action_to_string(int(a)).startswith("offer:")]
        action = int(rng.choice(offers or legal))
        env.step(action)
        if offers:
            mover = int(agent.split("_")[1])
            asked = env.agent_selection
            assert asked == f"player_{(mover + 1) % 4}", (agent, asked)
            names = {env.state_object.action_to_string(int(a)) for a in np.flatnonzero(env.observe(asked)["action_mask"])}
            assert names <= {"accept", "decline"} and "decline" in names, names
            assert not env.observe(agent)["action_mask"].any(), "the mover has no move while an answer is awaited"
            answered += 1
            if answered == 5:
                break
    assert answered == 5


def test_pettingzoo_a_turn_with_gods_is_steps_of_one_player():
    env = meeple.pettingzoo.env("santorini:gods=artemis+demeter")
    env.reset(seed=5)
    rng = random.Random(2)
    seen = {"move again": 0, "build again": 0}
    for _ in range(5000):
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            break
        legal = [int(a) for a in np.flatnonzero(env.observe(agent)["action_mask"])]
        names = [env.state_object.action_to_string(a) for a in legal]
        action = rng.choice(legal)
        before = env.state_object.action_to_string(action)
        env.step(action)
        if env.agent_selection == agent and not any(env.terminations.values()):
            after = {env.state_object.action_to_string(int(a)) for a in np.flatnonzero(env.observe(agent)["action_mask"])}
            if "-" in before and any("-" in n for n in after):
                seen["move again"] += 1
            if "+" in before and "end" in after:
                seen["build again"] += 1
        assert names, "a player to move always has a step"
    assert seen["move again"] > 0 and seen["build again"] > 0, seen


def test_pettingzoo_bad_input():
    env = meeple.pettingzoo.env("connect4")
    with pytest.raises(ValueError, match="reset"):
        env.step(0)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="out of range"):
        env.step(9)
    with pytest.raises(TypeError, match="integer"):
        env.step("3")
    with pytest.raises(ValueError, match="None"):
        env.step(None)
    env.step(np.int32(3))
    for bad, error in [(dict(render_mode="rgb"), ValueError), (dict(max_turns=0), ValueError),
                       (dict(seed=-1), ValueError), (dict(max_turns="5"), TypeError)]:
        with pytest.raises(error):
            meeple.pettingzoo.env("connect4", **bad)
    with pytest.raises(ValueError, match="unknown game"):
        meeple.pettingzoo.env("go")


@pytest.mark.parametrize("spec, opponents", [("connect4", "mcts:iters=50"), ("catan:players=3", "random"),
                                             ("catan:trades=true", "catan-value"), ("sagrada", "random"),
                                             ("santorini:gods=random", "alphabeta:depth=2,eval=gods")])
def test_gymnasium_check_env(spec, opponents):
    check_env(meeple.gymnasium.env(spec, opponents=opponents, seat="random").unwrapped, skip_render_check=True)


def test_gymnasium_make_knows_every_game():
    import gymnasium

    assert list(meeple.gymnasium.ENV_IDS) == meeple.games()
    meeple.gymnasium.register_envs()  # a second registration changes nothing
    for name, env_id in meeple.gymnasium.ENV_IDS.items():
        env = gymnasium.make(env_id, opponents="random")
        assert env.unwrapped.game.spec.startswith(name), (env_id, env.unwrapped.game.spec)
        obs, info = env.reset(seed=1)
        assert obs.shape == env.observation_space.shape
        env.close()
    env = gymnasium.make("meeple/Connect4-v0", spec="connect4:rows=5,cols=6", opponents="random")
    assert env.unwrapped.game.spec == "connect4:rows=5,cols=6"


def test_pyspiel_spellings():
    state = meeple.Game("connect4").new_initial_state()
    assert (state.legal_actions_mask() == state.legal_action_mask()).all()
    assert (state.legal_actions_mask(0) == state.legal_action_mask()).all()
    with pytest.raises(ValueError, match="only the player to move"):
        state.legal_actions_mask(1)
    assert (state.observation_tensor(0) == state.observation(0).ravel()).all()


def test_gymnasium_plays_against_the_opponents():
    env = meeple.gymnasium.env("tictactoe", opponents="alphabeta", seat=1)
    rng = np.random.default_rng(0)
    results = []
    for episode in range(10):
        obs, info = env.reset(seed=episode)
        done = False
        while not done:
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
            obs, reward, terminated, truncated, info = env.step(action)
            done = terminated or truncated
        results.append(reward)
    assert all(r <= 0 for r in results), "perfect play never loses at tic-tac-toe"
    obs, info = env.reset(seed=0)
    illegal = int(np.flatnonzero(info["action_mask"] == 0)[0])
    _, reward, terminated, _, info = env.step(illegal)
    assert reward == -1.0 and terminated and "illegal" in info
    with pytest.raises(ValueError, match="over"):
        env.step(0)
    strict = meeple.gymnasium.env("tictactoe", opponents="random", illegal="raise")
    strict.reset(seed=0)
    strict.step(4)
    with pytest.raises(ValueError):
        strict.step(4)
    with pytest.raises(ValueError, match="seat"):
        meeple.gymnasium.env("tictactoe", seat=2)
    with pytest.raises(ValueError, match="opponents"):
        meeple.gymnasium.env("catan", opponents=["random"])


def reference_trajectory(spec, seed, actions_for):
    """Plays one game with the plain API, chance resolved from the seed the VecEnv gives it."""
    game = meeple.Game(spec)
    state = game.new_initial_state()
    rng = meeple.Rng(seed)
    state.resolve_chance(rng)
    return game, state, rng


@pytest.mark.parametrize("spec", ["tictactoe", "connect4", "santorini", "cathedral:size=8", "sagrada:players=3",
                                  "catan", "catan:trades=true", "santorini:gods=random"])
@pytest.mark.parametrize("threads", [1, 2])
def test_vecenv_matches_the_plain_api(spec, threads):
    n, seed, steps = 6, 11, 150
    venv = meeple.VecEnv(spec, n, seed=seed, threads=threads)
    game = venv.game
    obs, mask, player = venv.reset()
    assert obs.shape == (n, *game.observation_shape) and obs.dtype == np.float32
    assert mask.shape == (n, game.num_actions) and mask.dtype == np.bool_
    assert player.shape == (n,) and player.dtype == np.int8
    states, rngs = [], []
    for i in range(n):
        s = game.new_initial_state()
        r = meeple.Rng(seed + i)
        s.resolve_chance(r)
        states.append(s)
        rngs.append(r)
    episodes = [0] * n
    rng = np.random.default_rng(5)
    finished = 0
    for _ in range(steps):
        for i, s in enumerate(states):
            np.testing.assert_array_equal(obs[i], s.observation(s.current_player))
            np.testing.assert_array_equal(mask[i], s.legal_action_mask().astype(bool))
            assert player[i] == s.current_player
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in mask])
        obs, mask, player, rewards, terminated, truncated = venv.step(actions)
        assert not truncated.any()
        for i, s in enumerate(states):
            mover = s.current_player
            s.apply_action(int(actions[i]))
            s.resolve_chance(rngs[i])
            if s.is_terminal():
                assert terminated[i]
                expected = np.clip(2 * np.array(s.returns()) - 1, -1, 1)
                np.testing.assert_allclose(rewards[i], expected, rtol=1e-6)
                np.testing.assert_array_equal(venv.final_observation()[i], s.observation(mover))
                finished += 1
                episodes[i] += 1
                s2 = game.new_initial_state()
                rngs[i] = meeple.Rng(seed + i + episodes[i] * n)
                s2.resolve_chance(rngs[i])
                states[i] = s2
            else:
                assert not terminated[i] and not rewards[i].any()
    assert venv.episode_seeds() == [seed + i + episodes[i] * n for i in range(n)]
    if spec in ("tictactoe", "connect4"):
        assert finished > 0


def test_vecenv_opponents_truncation_and_threads_agree():
    runs = []
    for threads in (1, 2):
        venv = meeple.VecEnv("connect4", 16, seed=3, threads=threads, opponents="mcts:iters=20", seat="random",
                             max_turns=30)
        obs, mask, player = venv.reset()
        rng = np.random.default_rng(1)
        trace = []
        for _ in range(60):
            actions = np.array([rng.choice(np.flatnonzero(m)) for m in mask])
            obs, mask, player, rewards, terminated, truncated = venv.step(actions)
            trace.append((obs.copy(), rewards.copy(), terminated.copy(), truncated.copy(), player.copy()))
        runs.append(trace)
        assert any(t[2].any() for t in trace)
        seats = {int(p) for t in trace for p in t[4]}
        assert seats == {0, 1}, "a random seat puts the learner in both seats"
    for a, b in zip(*runs):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


def test_vecenv_bad_input():
    venv = meeple.VecEnv("connect4", 4, seed=0)
    with pytest.raises(ValueError, match="reset"):
        venv.step(np.zeros(4, np.int64))
    venv.reset()
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        venv.step(np.zeros(3, np.int64))
    with pytest.raises(TypeError, match="integer"):
        venv.step(np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="out of range"):
        venv.step(np.array([0, 0, 0, 7]))
    for _ in range(6):
        venv.step(np.zeros(4, np.int32))
    with pytest.raises(ValueError, match="environment 0: .*legal"):
        venv.step(np.zeros(4, np.int64))
    for kwargs, error, pattern in [
        (dict(num_envs=0), ValueError, "num_envs"),
        (dict(num_envs=4, threads=0), ValueError, "threads"),
        (dict(num_envs=4, opponents="nosuch"), ValueError, "unknown agent"),
        (dict(num_envs=4, opponents=["random", "random"]), ValueError, "opponents"),
        (dict(num_envs=4, opponents="random", seat=5), ValueError, "seat"),
        (dict(num_envs=4, seat=0), ValueError, "opponents"),
        (dict(num_envs=4, max_turns=0), ValueError, "max_turns"),
        (dict(num_envs=4, opponents=3), TypeError, "opponents"),
    ]:
        with pytest.raises(error, match=pattern):
            meeple.VecEnv("connect4", **kwargs)
    # 2**24 Cathedral games would need about 420 GB of step buffers: refused before allocating.
    with pytest.raises(ValueError, match="quarter of this machine's memory"):
        meeple.VecEnv("cathedral", 2**24)
    with pytest.raises(ValueError, match="num_envs"):
        meeple.VecEnv("connect4", 2**24 + 1)
