"""The pyspiel-like core on every game: spaces, states, agents, arena, records, bad input."""

import copy
import gzip
import json
import random
import subprocess

import numpy as np
import pytest

import meeple

SPECS = [
    "tictactoe",
    "connect4",
    "santorini",
    "santorini:supply=official",
    "cathedral",
    "cathedral:size=8",
    "sagrada",
    "sagrada:players=3",
    "sagrada:players=4",
    "catan",
    "catan:players=4",
    "catan:trades=true",
]


def play_random(state, rng, max_plies=5000):
    for _ in range(max_plies):
        if state.is_terminal():
            return state
        if state.is_chance_node():
            outcomes = state.chance_outcomes()
            assert abs(sum(p for _, p in outcomes) - 1.0) < 1e-9
            state.apply_action(outcomes[rng.randrange(len(outcomes))][0])
        else:
            state.apply_action(rng.choice(state.legal_actions()))
    return state


def test_games_lists_every_game():
    assert meeple.games() == ["tictactoe", "connect4", "santorini", "cathedral", "sagrada", "catan"]
    infos = meeple.game_infos()
    assert [i["name"] for i in infos] == meeple.games()
    assert all("params" in i and "about" in i for i in infos)


@pytest.mark.parametrize("spec", SPECS)
def test_random_games_keep_the_contracts(spec):
    game = meeple.Game(spec)
    assert game.spec.startswith(game.name)
    assert meeple.Game(game.spec) == game
    rng = random.Random(7)
    for _ in range(2):
        state = game.new_initial_state()
        plies = 0
        while not state.is_terminal() and plies < 3000:
            plies += 1
            if state.is_chance_node():
                assert state.current_player == meeple.CHANCE
                assert state.legal_actions() == []
                outcome = rng.choice(state.chance_outcomes())[0]
                state.apply_action(outcome)
                continue
            p = state.current_player
            assert 0 <= p < game.num_players
            legal = state.legal_actions()
            mask = state.legal_action_mask()
            assert mask.dtype == np.int8 and mask.shape == (game.num_actions,)
            assert list(np.flatnonzero(mask)) == legal
            for q in range(game.num_players):
                obs = state.observation(q)
                assert obs.dtype == np.float32 and obs.shape == tuple(game.observation_shape)
                assert obs.min() >= 0.0 and obs.max() <= 1.0
                assert isinstance(state.observation_string(q), str)
            a = rng.choice(legal)
            text = state.action_to_string(a)
            assert state.string_to_action(text) == a
            before = state.clone()
            state.apply_action_string(text)
            assert state != before
            assert state.returns() is None or state.is_terminal()
        if state.is_terminal():
            assert state.current_player == meeple.TERMINAL
            r = state.returns()
            assert len(r) == game.num_players and all(0.0 <= x <= 1.0 for x in r)
            assert len(state.scores()) == game.num_players
            with pytest.raises(ValueError, match="over"):
                state.apply_action(0)


def test_clone_copy_and_equality():
    game = meeple.Game("connect4")
    s = game.new_initial_state()
    s.apply_action(3)
    for c in (s.clone(), copy.copy(s), copy.deepcopy(s)):
        assert c == s and hash(c) == hash(s)
        c.apply_action(3)
        assert c != s
    assert str(s).count("\n") >= 6
    assert "connect4" in repr(s)


def test_determinize_hides_what_the_viewer_does_not_know():
    game = meeple.Game("sagrada")
    state = game.new_initial_state()
    play_random(state, random.Random(1), max_plies=8)
    for seed in range(5):
        world = state.determinize(0, seed)
        np.testing.assert_array_equal(world.observation(0), state.observation(0))
    worlds = {str(state.determinize(0, seed)) for seed in range(10)}
    assert len(worlds) > 1, "the opponent's private colour should be redealt"


def test_resolve_chance_is_reproducible():
    game = meeple.Game("catan")
    a, b = game.new_initial_state(), game.new_initial_state()
    a.resolve_chance(meeple.Rng(5))
    b.resolve_chance(meeple.Rng(5))
    assert a == b and not a.is_chance_node()


def test_agents_play_legal_moves_and_release_the_interpreter():
    game = meeple.Game("connect4")
    assert {"random", "mcts", "alphabeta", "az", "policy"} <= set(game.agents())
    state = game.new_initial_state()
    for spec in ["random", "first", "mcts:iters=50", "alphabeta:depth=2"]:
        agent = meeple.Agent(spec, game, seed=3)
        assert agent.act(state) in state.legal_actions()
    timed = meeple.Agent("mcts", "connect4", seed=1)
    assert timed.act(state, time=0.05) in state.legal_actions()
    assert timed.act(state, time="20ms") in state.legal_actions()


def test_an_agent_finds_the_winning_move():
    game = meeple.Game("connect4")
    state = game.new_initial_state()
    for a in [0, 6, 0, 6, 0]:
        state.apply_action(a)
    # Player 2 must block column 1; player 1 then wins there if it does not.
    agent = meeple.Agent("alphabeta:depth=4", game)
    assert agent.act(state) == 0


def test_learned_agents_load_the_committed_model(repo_root):
    model = repo_root / "models" / "connect4-az.safetensors"
    game = meeple.Game("connect4")
    state = game.new_initial_state()
    for spec in [f"policy:model={model}", f"az:model={model},sims=16"]:
        assert meeple.Agent(spec, game).act(state) in state.legal_actions()
    with pytest.raises(ValueError, match="tictactoe|connect4|shape|network"):
        meeple.Agent(f"policy:model={model}", meeple.Game("tictactoe"))


def test_arena_gives_the_cli_summary(tmp_path, meeple_cli):
    summary = meeple.arena("tictactoe", ["alphabeta", "random"], games=20, seed=4, threads=1)
    assert summary["games"] == 20
    names = [a["name"] for a in summary["agents"]]
    assert names == ["alphabeta", "random"]
    first = summary["agents"][0]
    assert first["losses"] == 0 and first["wins"] + first["draws"] == 20
    if meeple_cli is not None:
        out = tmp_path / "s.json"
        subprocess.run([meeple_cli, "arena", "tictactoe", "alphabeta", "random", "--games", "20", "--seed", "4",
                        "--threads", "1", "--json", str(out)], check=True, capture_output=True)
        cli = json.loads(out.read_text())
        for key in ["games", "agents"]:
            strip = lambda x: json.loads(json.dumps(x).replace("ms_per_move", ""))  # noqa: E731
            assert [(a["wins"], a["draws"], a["losses"]) for a in cli["agents"]] == \
                [(a["wins"], a["draws"], a["losses"]) for a in summary["agents"]], key
            assert strip(cli["games"]) == strip(summary["games"])


def test_records_read_and_replay(tmp_path, meeple_cli):
    if meeple_cli is None:
        pytest.skip("the meeple binary is not built")
    path = tmp_path / "r.jsonl"
    subprocess.run([meeple_cli, "arena", "catan:players=3", "random", "random", "random", "--games", "6",
                    "--seed", "2", "--threads", "1", "--records", str(path)], check=True, capture_output=True)
    records = meeple.read_records(str(path))
    assert len(records) == 6
    # Kept gzip-compressed, the same records.
    packed = tmp_path / "r.jsonl.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    assert meeple.read_records(str(packed)) == records
    for r in records:
        game = meeple.Game(r["game"])
        states = game.replay(r)
        assert len(states) == len(r["actions"]) + 1
        assert states[-1].is_terminal() and states[-1].returns() == r["returns"]
    lines = path.read_text().splitlines()
    bad = json.loads(lines[0])
    bad["returns"] = [1.0, 0.0, 0.0] if bad["returns"] != [1.0, 0.0, 0.0] else [0.0, 1.0, 0.0]
    path.write_text(json.dumps(bad) + "\n")
    with pytest.raises(ValueError, match="checksum"):
        meeple.read_records(str(path))
    with pytest.raises(ValueError, match="replay gives"):
        meeple.Game(bad["game"]).replay(bad)


def test_a_match_resumes_across_python_and_the_cli(tmp_path, meeple_cli):
    if meeple_cli is None:
        pytest.skip("the meeple binary is not built")
    agents = ["mcts:iters=30", "random"]
    whole = meeple.arena("connect4", agents, games=12, seed=5, threads=1)
    # The CLI plays the first 6 of 12 games (a finished 6-game match keeps the same seeds), then
    # Python resumes the 12-game match from its records.
    cli_first = tmp_path / "cli-first.jsonl"
    subprocess.run([meeple_cli, "arena", "connect4", *agents, "--games", "6", "--seed", "5", "--threads", "1",
                    "--records", str(cli_first)], check=True, capture_output=True)
    with pytest.raises(ValueError, match="resume=True"):
        meeple.arena("connect4", agents, games=12, seed=5, threads=1, records=str(cli_first))
    resumed = meeple.arena("connect4", agents, games=12, seed=5, threads=1, records=str(cli_first), resume=True)
    wdl = lambda s: [(a["wins"], a["draws"], a["losses"]) for a in s["agents"]]  # noqa: E731
    assert wdl(resumed) == wdl(whole)
    assert [r["index"] for r in meeple.read_records(str(cli_first))] == list(range(12))
    # And the reverse: Python starts, the CLI finishes; a cut last line is dropped on resume.
    py_first = tmp_path / "py-first.jsonl"
    meeple.arena("connect4", agents, games=6, seed=5, threads=1, records=str(py_first))
    text = py_first.read_text()
    py_first.write_text(text[: len(text) - 40])
    out = tmp_path / "out.json"
    done = subprocess.run([meeple_cli, "arena", "connect4", *agents, "--games", "12", "--seed", "5", "--threads",
                           "1", "--records", str(py_first), "--resume", "--json", str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "unfinished last line 6" in done.stderr and "5 finished games kept" in done.stderr, done.stderr
    assert wdl(json.loads(out.read_text())) == wdl(whole)
    # Reading (not resuming) names a cut line instead of dropping it.
    py_first.write_text(py_first.read_text()[:-30])
    with pytest.raises(ValueError, match="line 12"):
        meeple.read_records(str(py_first))


@pytest.mark.parametrize(
    "call, error, pattern",
    [
        (lambda: meeple.Game("chess"), ValueError, "unknown game 'chess'; accepted: tictactoe"),
        (lambda: meeple.Game("connect4:rows=x"), ValueError, "rows"),
        (lambda: meeple.Game(7), TypeError, "str"),
        (lambda: meeple.Agent("nosuch", "connect4"), ValueError, "unknown agent 'nosuch'; accepted:"),
        (lambda: meeple.Agent("mcts:iters=-1", "connect4"), ValueError, "iters"),
        (lambda: meeple.Agent("random", 3.5), TypeError, "game"),
        (lambda: meeple.Game("connect4").new_initial_state().apply_action(7), ValueError, "out of range: actions are 0 to 6"),
        (lambda: meeple.Game("connect4").new_initial_state().apply_action(-1), ValueError, "out of range"),
        (lambda: meeple.Game("connect4").new_initial_state().apply_action(2**70), OverflowError, "int"),
        (lambda: meeple.Game("connect4").new_initial_state().apply_action("3"), TypeError, "int"),
        (lambda: meeple.Game("connect4").new_initial_state().apply_action_string("z9"), ValueError, "z9"),
        (lambda: meeple.Game("connect4").new_initial_state().observation(2), ValueError, "players 0 to 1"),
        (lambda: meeple.Game("connect4").new_initial_state().action_to_string(99), ValueError, "out of range"),
        (lambda: meeple.Agent("mcts", "connect4").act(meeple.Game("connect4").new_initial_state(), time=-1),
         ValueError, "time"),
        (lambda: meeple.Agent("mcts", "connect4").act(meeple.Game("tictactoe").new_initial_state()),
         ValueError, "another|tictactoe"),
        (lambda: meeple.arena("connect4", ["random"], games=2), ValueError, "2 seats"),
        (lambda: meeple.arena("connect4", ["random", "random"], games=3), ValueError, "multiple of 2"),
        (lambda: meeple.arena("connect4", ["random", "random"], threads=100000), ValueError, "threads"),
        (lambda: meeple.read_records("/nonexistent/records.jsonl"), ValueError, "cannot read"),
    ],
)
def test_bad_input_is_a_clear_exception(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


def test_an_illegal_move_names_the_rule_and_leaves_the_state():
    state = meeple.Game("connect4").new_initial_state()
    for _ in range(6):
        state.apply_action(0)
    before = state.clone()
    with pytest.raises(ValueError, match="legal"):
        state.apply_action(0)
    assert state == before


def test_the_type_stubs_name_what_the_module_has():
    import ast
    import pathlib

    from meeple import _meeple

    path = pathlib.Path(meeple.__file__).with_name("_meeple.pyi")
    tree = ast.parse(path.read_text())
    stubbed = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            stubbed[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
        elif isinstance(node, ast.FunctionDef):
            stubbed[node.name] = None
    public = {n for n in dir(_meeple) if not n.startswith("_") and n not in ("CHANCE", "TERMINAL", "SPRT_BATCH")}
    internal = {"arena_total", "arena_games", "arena_merge", "resume_records", "evaluate", "shard_batch",
                "shard_loss", "play_external"}
    assert public - internal - set(stubbed) == set(), "names without a stub"
    assert set(stubbed) - public == set(), "stubs of names the module lacks"
    for name, methods in stubbed.items():
        if methods is None:
            continue
        cls = getattr(_meeple, name)
        missing = {m for m in methods if m != "__init__" and not hasattr(cls, m)}
        assert missing == set(), f"{name}: stubbed methods the class lacks"
        own = {m for m in vars(cls) if not m.startswith("_")}
        assert own - methods == set(), f"{name}: methods without a stub"
    assert path.with_name("py.typed").exists()
