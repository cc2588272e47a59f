//! `meeple._meeple`, the compiled core of the `meeple` Python package: games and states in the
//! spirit of OpenSpiel's pyspiel, every agent the command line knows, the arena, records, and a
//! vector environment. The PettingZoo and Gymnasium environments are Python on top of it.
//!
//! Every error is a Python exception (`ValueError` for a bad value, `TypeError` for a wrong
//! type) whose message says what was wrong and what is accepted. Work that can take long
//! (agents thinking, matches, vector steps) runs with the interpreter released.

mod dynamic;
mod vector_env;

use dynamic::{DynAgent, DynGame, DynState, check_threads, make_game};
use meeple_arena::MatchConfig;
use meeple_arena::records::{Entry, ReadOptions};
use meeple_game::{Action, Budget, Error, GameRecord, Turn, limits, parse_duration, rng_from_seed};
use meeple_learn::vecenv::{self, DynVecEnv, VecEnvConfig};
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use vector_env::VecEnv;

/// `current_player` at a chance node (as in OpenSpiel).
const CHANCE: i64 = -1;
/// `current_player` once the game is over (as in OpenSpiel).
const TERMINAL: i64 = -4;

fn value_error(e: Error) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn json_loads<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (text,))
}

/// The names of every game, in the order `meeple games` lists them.
#[pyfunction]
fn games() -> Vec<&'static str> {
    meeple_games::GAMES.iter().map(|g| g.name).collect()
}

/// Every game with what it is and the parameters its spec accepts.
#[pyfunction]
fn game_infos<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
    let infos: Vec<serde_json::Value> = meeple_games::GAMES
        .iter()
        .map(|g| {
            serde_json::json!({
                "name": g.name,
                "about": g.about,
                "params": g.params.iter().map(|p| serde_json::json!({
                    "name": p.name, "default": p.default, "accepts": p.accepts, "help": p.help,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    json_loads(py, &serde_json::Value::from(infos).to_string())
}

/// A game: its rules and parameters, from a spec like `connect4` or `catan:players=3`.
#[pyclass(module = "meeple._meeple", frozen)]
struct Game {
    inner: Arc<dyn DynGame>,
}

#[pymethods]
impl Game {
    #[new]
    fn new(spec: &str) -> PyResult<Self> {
        Ok(Game { inner: make_game(spec).map_err(value_error)? })
    }

    /// The canonical spec, every parameter spelled out.
    #[getter]
    fn spec(&self) -> String {
        self.inner.spec()
    }

    #[getter]
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    #[getter]
    fn num_players(&self) -> usize {
        self.inner.num_players()
    }

    /// Player actions are ids `0..num_actions`.
    #[getter]
    fn num_actions(&self) -> usize {
        self.inner.num_actions()
    }

    /// Chance outcomes are ids `0..max_chance_outcomes` (0 for games without chance).
    #[getter]
    fn max_chance_outcomes(&self) -> usize {
        self.inner.max_chance_outcomes()
    }

    #[getter]
    fn observation_shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.observation_shape())
    }

    fn new_initial_state(&self) -> State {
        State { inner: self.inner.initial_state(), game: self.inner.clone() }
    }

    /// The names of the agents that can play this game (`meeple.Agent(spec, game)`).
    fn agents(&self) -> Vec<&'static str> {
        self.inner.agent_names()
    }

    /// Replays a record (a dict from `read_records`, or its JSON line) and returns every state
    /// from the first to the last; a record of another game or with an illegal move is an error.
    fn replay(&self, py: Python<'_>, record: &Bound<'_, PyAny>) -> PyResult<Vec<State>> {
        let text: String = if let Ok(s) = record.cast::<PyString>() {
            s.to_string()
        } else {
            py.import("json")?.call_method1("dumps", (record,))?.extract()?
        };
        let record = GameRecord::from_json(&text).map_err(value_error)?;
        let states = self.inner.replay(&record).map_err(value_error)?;
        Ok(states.into_iter().map(|s| State { inner: s, game: self.inner.clone() }).collect())
    }

    fn __repr__(&self) -> String {
        format!("Game('{}')", self.inner.spec())
    }

    fn __str__(&self) -> String {
        self.inner.spec()
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Game>().is_ok_and(|o| o.get().inner.spec() == self.inner.spec())
    }

    fn __hash__(&self) -> u64 {
        meeple_game::zobrist::splitmix64(self.inner.spec().bytes().fold(0u64, |h, b| h.wrapping_mul(31) ^ b as u64))
    }

    fn __getnewargs__(&self) -> (String,) {
        (self.inner.spec(),)
    }
}

/// A random generator for chance outcomes, seeded by the user.
#[pyclass(module = "meeple._meeple")]
struct Rng {
    inner: meeple_game::Rng,
}

#[pymethods]
impl Rng {
    #[new]
    #[pyo3(signature = (seed = 0))]
    fn new(seed: u64) -> Self {
        Rng { inner: rng_from_seed(seed) }
    }
}

/// A position. Actions are integer ids; chance nodes (`is_chance_node()`) take a chance
/// outcome from `chance_outcomes()` or are resolved with `resolve_chance(rng)`.
#[pyclass(module = "meeple._meeple")]
struct State {
    inner: Box<dyn DynState>,
    game: Arc<dyn DynGame>,
}

impl State {
    fn player_arg(&self, player: Option<i64>) -> PyResult<usize> {
        let n = self.game.num_players();
        let p = match player {
            Some(p) => p,
            None => match self.inner.turn() {
                Turn::Player(p) => p as i64,
                _ => {
                    return Err(PyValueError::new_err(
                        "no player is to move (chance node or game over): give the player, 0 to num_players - 1",
                    ));
                }
            },
        };
        if p < 0 || p as u64 >= n as u64 {
            return Err(PyValueError::new_err(format!(
                "player {p} is out of range: {} has players 0 to {}",
                self.game.spec(),
                n - 1
            )));
        }
        Ok(p as usize)
    }

    fn action_arg(&self, action: i64) -> PyResult<Action> {
        let limit = match self.inner.turn() {
            Turn::Chance => self.game.max_chance_outcomes(),
            _ => self.game.num_actions(),
        };
        if action < 0 || action as u64 >= limit as u64 {
            let what = if self.inner.turn() == Turn::Chance { "chance outcome" } else { "action" };
            return Err(PyValueError::new_err(format!(
                "{what} {action} is out of range: {what}s are 0 to {}",
                limit.max(1) - 1
            )));
        }
        Ok(action as Action)
    }
}

#[pymethods]
impl State {
    /// The player to move; `meeple.CHANCE` (-1) at a chance node, `meeple.TERMINAL` (-4) once over.
    #[getter]
    fn current_player(&self) -> i64 {
        match self.inner.turn() {
            Turn::Player(p) => p as i64,
            Turn::Chance => CHANCE,
            Turn::Terminal => TERMINAL,
        }
    }

    #[getter]
    fn game(&self) -> Game {
        Game { inner: self.game.clone() }
    }

    fn is_chance_node(&self) -> bool {
        self.inner.turn() == Turn::Chance
    }

    fn is_terminal(&self) -> bool {
        self.inner.turn() == Turn::Terminal
    }

    /// `[(outcome, probability), ...]` at a chance node; empty elsewhere.
    fn chance_outcomes(&self) -> Vec<(Action, f64)> {
        let mut out = Vec::new();
        self.inner.chance_outcomes(&mut out);
        out
    }

    /// The legal action ids of the player to move, ascending; empty at chance and terminal states.
    fn legal_actions(&self) -> Vec<Action> {
        let mut out = Vec::new();
        self.inner.legal_actions(&mut out);
        out
    }

    /// An int8 array of `num_actions`: 1 where the action is legal.
    fn legal_action_mask<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i8>> {
        let mut legal = Vec::new();
        self.inner.legal_actions(&mut legal);
        let mut mask = vec![0i8; self.game.num_actions()];
        for a in legal {
            mask[a as usize] = 1;
        }
        PyArray1::from_vec(py, mask)
    }

    /// pyspiel's spelling of `legal_action_mask` (its `player` must be the player to move:
    /// meeple lists the legal moves of the player to move only).
    #[pyo3(signature = (player = None))]
    fn legal_actions_mask<'py>(&self, py: Python<'py>, player: Option<i64>) -> PyResult<Bound<'py, PyArray1<i8>>> {
        if let Some(p) = player
            && p != self.current_player()
        {
            return Err(PyValueError::new_err(format!(
                "legal_actions_mask({p}): only the player to move ({}) has legal actions here",
                self.current_player()
            )));
        }
        Ok(self.legal_action_mask(py))
    }

    /// Applies a legal action (or, at a chance node, a possible outcome); otherwise raises
    /// `ValueError` with the rule's reason and leaves the state as it was.
    fn apply_action(&mut self, action: i64) -> PyResult<()> {
        let a = self.action_arg(action)?;
        self.inner.apply(a).map_err(value_error)
    }

    /// Applies an action written in the game's notation (`action_to_string`).
    fn apply_action_string(&mut self, text: &str) -> PyResult<()> {
        if self.inner.turn() == Turn::Terminal {
            return Err(value_error(Error::GameOver));
        }
        let a = self.inner.parse_action(text).map_err(value_error)?;
        self.inner.apply(a).map_err(value_error)
    }

    /// Reads an action in the game's notation without applying it.
    fn string_to_action(&self, text: &str) -> PyResult<Action> {
        self.inner.parse_action(text).map_err(value_error)
    }

    fn action_to_string(&self, action: i64) -> PyResult<String> {
        let a = self.action_arg(action)?;
        Ok(self.inner.action_to_string(a))
    }

    /// Resolves chance nodes with `rng` until a player is to move or the game is over.
    fn resolve_chance(&mut self, rng: &mut Rng) {
        let mut buf = Vec::new();
        self.inner.resolve_chance(&mut rng.inner, &mut buf);
    }

    /// `player`'s view (default: the player to move) as a float32 array of the game's
    /// `observation_shape`, values in 0..1; hidden information is absent.
    #[pyo3(signature = (player = None))]
    fn observation<'py>(&self, py: Python<'py>, player: Option<i64>) -> PyResult<Bound<'py, PyAny>> {
        let p = self.player_arg(player)?;
        let mut out = Vec::new();
        self.inner.observation(p, &mut out);
        let shape = self.game.observation_shape();
        let flat = PyArray1::from_vec(py, out);
        if shape.len() == 1 { Ok(flat.into_any()) } else { Ok(flat.reshape(shape)?.into_any()) }
    }

    /// pyspiel's spelling: `player`'s view as a flat float32 array (`observation` shaped).
    #[pyo3(signature = (player = None))]
    fn observation_tensor<'py>(&self, py: Python<'py>, player: Option<i64>) -> PyResult<Bound<'py, PyArray1<f32>>> {
        let p = self.player_arg(player)?;
        let mut out = Vec::new();
        self.inner.observation(p, &mut out);
        Ok(PyArray1::from_vec(py, out))
    }

    #[pyo3(signature = (player = None))]
    fn observation_string(&self, player: Option<i64>) -> PyResult<String> {
        let p = self.player_arg(player)?;
        Ok(self.inner.observation_string(p))
    }

    /// Per-player results once the game is over (win 1, loss 0, draw 0.5, or the game's
    /// ranking values); `None` before the end.
    fn returns(&self) -> Option<Vec<f64>> {
        self.inner.returns()
    }

    /// Per-player game scores (points); defined at every state.
    fn scores(&self) -> Vec<f64> {
        self.inner.scores()
    }

    /// A full state consistent with what `player` knows, sampled from `seed` (hidden
    /// information redealt); the state itself for games without hidden information.
    #[pyo3(signature = (player, seed = 0))]
    fn determinize(&self, player: i64, seed: u64) -> PyResult<State> {
        let p = self.player_arg(Some(player))?;
        Ok(State { inner: self.inner.determinize(p, seed), game: self.game.clone() })
    }

    fn clone(&self) -> State {
        State { inner: self.inner.clone_box(), game: self.game.clone() }
    }

    fn __copy__(&self) -> State {
        self.clone()
    }

    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> State {
        self.clone()
    }

    fn __str__(&self) -> String {
        self.inner.text()
    }

    fn __repr__(&self) -> String {
        format!("<meeple.State of {}: {}>", self.game.spec(), self.inner.debug())
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<State>().is_ok_and(|o| self.inner.same(o.borrow().inner.as_ref()))
    }

    fn __hash__(&self) -> u64 {
        self.inner.zobrist()
    }
}

/// Reads a move time: seconds as a number, or a duration string like `500ms`.
fn duration_arg(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Duration> {
    let bad = || {
        PyValueError::new_err(format!(
            "{what}: expected seconds (a positive number) or a duration like '500ms', at most 7 days"
        ))
    };
    let d = if let Ok(text) = value.extract::<String>() {
        parse_duration(&text).ok_or_else(bad)?
    } else if let Ok(secs) = value.extract::<f64>() {
        if !(secs > 0.0 && secs.is_finite()) {
            return Err(bad());
        }
        Duration::try_from_secs_f64(secs).map_err(|_| bad())?
    } else {
        return Err(PyTypeError::new_err(format!("{what}: expected seconds (a number) or a string like '500ms'")));
    };
    if d.is_zero() || d > limits::MAX_MOVE_TIME {
        return Err(bad());
    }
    Ok(d)
}

/// An agent for one game, from a spec like `mcts:iters=1000` or `az:model=FILE` (every agent
/// `meeple agents` lists).
#[pyclass(module = "meeple._meeple", frozen)]
struct Agent {
    inner: Mutex<Box<dyn DynAgent>>,
    game: Arc<dyn DynGame>,
}

#[pymethods]
impl Agent {
    #[new]
    #[pyo3(signature = (spec, game, seed = 0))]
    fn new(spec: &str, game: &Bound<'_, PyAny>, seed: u64) -> PyResult<Self> {
        let game = game_arg(game)?;
        let agent = game.agent(spec, seed).map_err(value_error)?;
        Ok(Agent { inner: Mutex::new(agent), game })
    }

    #[getter]
    fn spec(&self) -> String {
        self.inner.lock().expect("agent lock").spec()
    }

    /// The agent's move in `state` (the player to move must be a player, not chance), within
    /// `time` (seconds, or a string like '500ms') when given, else the agent's own budget.
    #[pyo3(signature = (state, time = None))]
    fn act(&self, py: Python<'_>, state: &State, time: Option<&Bound<'_, PyAny>>) -> PyResult<Action> {
        if state.game.spec() != self.game.spec() {
            return Err(PyValueError::new_err(format!(
                "this agent plays {}; the state is of {}",
                self.game.spec(),
                state.game.spec()
            )));
        }
        let budget = match time {
            Some(t) => Budget::time(duration_arg(t, "time")?),
            None => Budget::UNLIMITED,
        };
        let position = state.inner.clone_box();
        let agent = &self.inner;
        py.detach(move || agent.lock().expect("agent lock").act(position.as_ref(), &budget)).map_err(value_error)
    }

    fn __repr__(&self) -> String {
        format!("Agent('{}', '{}')", self.spec(), self.game.spec())
    }
}

/// A `Game`, or a spec string naming one.
fn game_arg(game: &Bound<'_, PyAny>) -> PyResult<Arc<dyn DynGame>> {
    if let Ok(g) = game.cast::<Game>() {
        Ok(g.get().inner.clone())
    } else if let Ok(s) = game.extract::<String>() {
        make_game(&s).map_err(value_error)
    } else {
        Err(PyTypeError::new_err("game: expected a meeple.Game or a game spec string like 'connect4'"))
    }
}

/// Plays a match between `agents` (one spec per seat, or more for a round robin in two-player
/// games) and returns its summary: the dict `meeple arena --json` writes. `sprt=(elo0, elo1)` or
/// `(elo0, elo1, alpha, beta)` stops a two-agent match once the test decides. `records`: a file
/// for the games (one checked JSON line each, as `meeple arena --records` writes); it is not
/// replaced unless `force`, and `resume` keeps its finished games (checked and replayed) and
/// plays only the missing ones, whether this function or `meeple arena` started the match.
#[pyfunction]
#[pyo3(signature = (
    game, agents, games = 100, seed = 0, threads = None, opening_plies = 0, move_time = None,
    records = None, resume = false, force = false, sprt = None
))]
#[allow(clippy::too_many_arguments)]
fn arena<'py>(
    py: Python<'py>,
    game: &Bound<'py, PyAny>,
    agents: Vec<String>,
    games: usize,
    seed: u64,
    threads: Option<usize>,
    opening_plies: usize,
    move_time: Option<&Bound<'py, PyAny>>,
    records: Option<std::path::PathBuf>,
    resume: bool,
    force: bool,
    sprt: Option<Vec<f64>>,
) -> PyResult<Bound<'py, PyAny>> {
    let game = game_arg(game)?;
    let config = match_config(agents, games, seed, threads, opening_plies, move_time, sprt)?;
    if resume && records.is_none() {
        return Err(PyValueError::new_err("resume=True needs records=PATH: the file of the match to go on with"));
    }
    if let Some(path) = &records {
        let allowed = force || resume;
        meeple_arena::files::check_new_output_with(
            path,
            "records file",
            allowed,
            "pass",
            Some("resume=True"),
            "force=True",
        )
        .map_err(PyValueError::new_err)?;
    }
    let text = py.detach(|| game.arena(&config, records.as_deref(), resume)).map_err(value_error)?;
    json_loads(py, &text)
}

/// A match's settings from the keyword arguments the arena functions share.
#[allow(clippy::too_many_arguments)]
fn match_config(
    agents: Vec<String>,
    games: usize,
    seed: u64,
    threads: Option<usize>,
    opening_plies: usize,
    move_time: Option<&Bound<'_, PyAny>>,
    sprt: Option<Vec<f64>>,
) -> PyResult<MatchConfig> {
    let mut config = MatchConfig::new(agents, games, seed);
    config.threads = check_threads(threads).map_err(value_error)?;
    config.opening_plies = opening_plies;
    if let Some(t) = move_time {
        config.budget = Budget::time(duration_arg(t, "move_time")?);
    }
    config.sprt = match sprt.as_deref() {
        None => None,
        Some(&[elo0, elo1]) => Some(meeple_arena::ratings::Sprt { elo0, elo1, alpha: 0.05, beta: 0.05 }),
        Some(&[elo0, elo1, alpha, beta]) => Some(meeple_arena::ratings::Sprt { elo0, elo1, alpha, beta }),
        Some(other) => {
            return Err(PyValueError::new_err(format!(
                "sprt: expected (elo0, elo1) or (elo0, elo1, alpha, beta), got {} numbers",
                other.len()
            )));
        }
    };
    Ok(config)
}

/// The number of games a match plays (`games` seeds times the seatings, or a round robin's
/// pairings), after checking the match as `arena` does.
#[pyfunction]
#[pyo3(signature = (game, agents, games = 100, seed = 0, threads = None, opening_plies = 0, move_time = None, sprt = None))]
#[allow(clippy::too_many_arguments)]
fn arena_total(
    game: &Bound<'_, PyAny>,
    agents: Vec<String>,
    games: usize,
    seed: u64,
    threads: Option<usize>,
    opening_plies: usize,
    move_time: Option<&Bound<'_, PyAny>>,
    sprt: Option<Vec<f64>>,
) -> PyResult<usize> {
    let game = game_arg(game)?;
    let config = match_config(agents, games, seed, threads, opening_plies, move_time, sprt)?;
    game.arena_total(&config).map_err(value_error)
}

/// Plays exactly the games `indices` of the match the other arguments describe, each as
/// `arena` would play it (same seats, seeds and openings), and returns their records-file
/// lines in the order asked: the piece of a match one worker plays (`meeple.distributed`).
#[pyfunction]
#[pyo3(signature = (game, agents, indices, games = 100, seed = 0, threads = None, opening_plies = 0, move_time = None, sprt = None))]
#[allow(clippy::too_many_arguments)]
fn arena_games(
    py: Python<'_>,
    game: &Bound<'_, PyAny>,
    agents: Vec<String>,
    indices: Vec<usize>,
    games: usize,
    seed: u64,
    threads: Option<usize>,
    opening_plies: usize,
    move_time: Option<&Bound<'_, PyAny>>,
    sprt: Option<Vec<f64>>,
) -> PyResult<Vec<String>> {
    let game = game_arg(game)?;
    let config = match_config(agents, games, seed, threads, opening_plies, move_time, sprt)?;
    py.detach(|| game.arena_games(&config, &indices)).map_err(value_error)
}

/// Merges the records-file lines of a match played in pieces: `("done", summary)` (the dict
/// `arena` returns) once every game the match needs is in, else `("missing", indices)`: all
/// games not yet played, or for an SPRT match those of its next batch. Each line is checked
/// (checksum, the same match, and a replay through the rules); a game given twice is an error.
#[pyfunction]
#[pyo3(signature = (game, agents, lines, games = 100, seed = 0, threads = None, opening_plies = 0, move_time = None, sprt = None))]
#[allow(clippy::too_many_arguments)]
fn arena_merge<'py>(
    py: Python<'py>,
    game: &Bound<'py, PyAny>,
    agents: Vec<String>,
    lines: Vec<String>,
    games: usize,
    seed: u64,
    threads: Option<usize>,
    opening_plies: usize,
    move_time: Option<&Bound<'py, PyAny>>,
    sprt: Option<Vec<f64>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let game = game_arg(game)?;
    let config = match_config(agents, games, seed, threads, opening_plies, move_time, sprt)?;
    match py.detach(|| game.arena_merge(&config, &lines)).map_err(value_error)? {
        Ok(summary) => PyTuple::new(py, [PyString::new(py, "done").into_any(), json_loads(py, &summary)?]),
        Err(missing) => {
            PyTuple::new(py, [PyString::new(py, "missing").into_any(), PyList::new(py, missing)?.into_any()])
        }
    }
}

/// What a training run does around its rounds in Python: a progress callback, and Ctrl-C
/// (Python's KeyboardInterrupt), which stops the run after its round with a checkpoint.
struct PyHooks<'py> {
    py: Python<'py>,
    progress: Option<Bound<'py, PyAny>>,
    interrupted: std::cell::RefCell<Option<PyErr>>,
    failed: Option<PyErr>,
}

impl meeple_learn::run::Hooks for PyHooks<'_> {
    fn round(&mut self, p: &meeple_learn::run::Progress, round: &meeple_learn::run::Round) {
        if let (Some(f), None) = (&self.progress, &self.failed) {
            let figures: std::collections::BTreeMap<&str, f64> =
                round.losses.iter().chain(&round.figures).map(|(n, v)| (n.as_str(), *v)).collect();
            let call = f.call1((p.episodes, p.steps, p.seconds, figures.into_pyobject(self.py).ok()));
            if let Err(e) = call {
                self.failed = Some(e);
            }
        }
    }

    fn should_stop(&self) -> bool {
        if self.failed.is_some() || self.interrupted.borrow().is_some() {
            return true;
        }
        match self.py.check_signals() {
            Ok(()) => false,
            Err(e) => {
                *self.interrupted.borrow_mut() = Some(e);
                true
            }
        }
    }
}

/// Trains `kind` (`az`, `td`, `value`, `dqn`, `ppo`, `vae`, `rootstrap`, `treestrap`, `tdleaf`) on
/// `game` into the run directory `out`, as `meeple train KIND` does: the same layout
/// (`run.json`, `metrics.jsonl`, `ckpt/last.*`), resume, limits and checks. The keyword
/// settings are the trainer's config's (`lr`, `net`, `train={"lr": ...}`, ...; an unknown one
/// is refused with the accepted ones). `eval_every` is `--eval-every`: 0, a time ("10m") or a
/// count of rounds (None: the trainer's default); `ladder` the evaluation's opponents (None:
/// the default ladder) and `equal_time` the opponent given the checkpoint's own time a move
/// (None: `mcts`, as on the command line; "none" leaves it out). `resume` goes on with the run in `out` with its
/// limits; `extend` with `resume` makes the limits given the run's new end, its learning rate
/// going on from where it stands. The bootstrap learners also take `starts=N` and
/// `select_games=G`: N runs from random weights (seeds `seed`, `seed + 1`, ...) in
/// `out/start1`, ..., a round robin among them of G games a pair, the winner's weights in
/// `out/chosen.txt` (the round robin in `out/select.json`), as `meeple train ... --starts`.
/// `progress(games, steps, seconds, figures)` is called
/// after each round; Ctrl-C stops after the round with a checkpoint, then raises
/// KeyboardInterrupt. Gives the progress reached, as `run.json` keeps it.
#[pyfunction]
#[pyo3(signature = (kind, game, out, *, resume = false, extend = false, minutes = None, games = None, steps = None, seed = 1, threads = 1, eval_every = None, eval_games = None, ladder = None, equal_time = None, export = None, progress = None, **settings))]
#[allow(clippy::too_many_arguments)]
fn train<'py>(
    py: Python<'py>,
    kind: &str,
    game: &str,
    out: std::path::PathBuf,
    resume: bool,
    extend: bool,
    minutes: Option<f64>,
    games: Option<u64>,
    steps: Option<u64>,
    seed: u64,
    threads: usize,
    eval_every: Option<Bound<'py, PyAny>>,
    eval_games: Option<usize>,
    ladder: Option<Vec<String>>,
    equal_time: Option<String>,
    export: Option<std::path::PathBuf>,
    progress: Option<Bound<'py, PyAny>>,
    settings: Option<&Bound<'py, pyo3::types::PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let threads = limits::check_threads("threads", threads).map_err(value_error)?;
    if minutes.is_some_and(|m| !(m.is_finite() && m > 0.0)) {
        return Err(PyValueError::new_err("minutes must be a positive number"));
    }
    let eval = match eval_every {
        None => None,
        Some(e) => Some(
            e.str()?
                .to_string()
                .parse::<meeple_learn::run::Every>()
                .map_err(|why| PyValueError::new_err(format!("eval_every={why}")))?,
        ),
    };
    let g = make_game(game).map_err(value_error)?;
    let settings: serde_json::Value = match settings {
        Some(d) => {
            let text: String = py.import("json")?.call_method1("dumps", (d,))?.extract()?;
            serde_json::from_str(&text).map_err(|e| PyValueError::new_err(format!("settings: {e}")))?
        }
        None => serde_json::json!({}),
    };
    let options = meeple_learn::run::RunOptions {
        resume,
        extend,
        minutes,
        games,
        steps,
        seed,
        threads,
        eval,
        eval_games,
        ladder: ladder.unwrap_or_default(),
        equal_time: match equal_time {
            None => meeple_learn::run::RunOptions::new(&out).equal_time,
            Some(s) if s.trim().eq_ignore_ascii_case("none") => None,
            Some(s) => Some(s.trim().to_string()),
        },
        commands: vec![format!("meeple.train({kind:?}, {game:?}, {:?}, ...)", out.display().to_string())],
        export,
        ..meeple_learn::run::RunOptions::new(&out)
    };
    let mut hooks = PyHooks { py, progress, interrupted: std::cell::RefCell::new(None), failed: None };
    let reached = g.train(kind, &settings, &options, &mut hooks).map_err(|e| PyValueError::new_err(e.to_string()))?;
    if let Some(e) = hooks.failed.take().or_else(|| hooks.interrupted.take()) {
        return Err(e);
    }
    json_loads(py, &serde_json::to_string(&reached).expect("progress serialises"))
}

/// The finished games of an interrupted records file, as lines to pass to `arena_merge` (a
/// last line cut off mid-write is cut from the file); none if the file does not exist.
#[pyfunction]
fn resume_records(path: std::path::PathBuf, max_games: usize) -> PyResult<Vec<String>> {
    let (games, _) = meeple_arena::records::resume(&path, max_games.min(limits::MAX_GAMES)).map_err(value_error)?;
    Ok(games.iter().map(meeple_arena::PlayedGame::to_line).collect())
}

/// Writes a match's records file as games arrive, in game order whatever order they arrive in
/// (one flushed line each, so an interrupted run keeps every finished game): `RecordsWriter(path,
/// kept)` starts a new file, or with `kept` (the lines `resume_records` gave) appends to it.
#[pyclass(module = "meeple._meeple", frozen)]
struct RecordsWriter {
    inner: Mutex<Option<meeple_arena::records::Writer>>,
}

#[pymethods]
impl RecordsWriter {
    #[new]
    #[pyo3(signature = (path, kept = None))]
    fn new(path: std::path::PathBuf, kept: Option<Vec<String>>) -> PyResult<Self> {
        let resume = kept.is_some();
        let kept = kept
            .unwrap_or_default()
            .iter()
            .map(|l| meeple_arena::PlayedGame::from_line(l))
            .collect::<Result<Vec<_>, _>>()
            .map_err(value_error)?;
        let w = meeple_arena::records::Writer::open(&path, resume, &kept).map_err(value_error)?;
        Ok(RecordsWriter { inner: Mutex::new(Some(w)) })
    }

    /// Adds finished games (record lines).
    fn push(&self, lines: Vec<String>) -> PyResult<()> {
        let guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let w = guard.as_ref().ok_or_else(|| PyValueError::new_err("the records writer is closed"))?;
        for l in &lines {
            w.push(&meeple_arena::PlayedGame::from_line(l).map_err(value_error)?);
        }
        Ok(())
    }

    /// Reports the first write error, if any; the writer takes no more games.
    fn close(&self) -> PyResult<()> {
        match self.inner.lock().unwrap_or_else(|e| e.into_inner()).take() {
            Some(w) => w.finish().map_err(value_error),
            None => Ok(()),
        }
    }
}

/// A float32 matrix for Python.
type Matrix<'py> = Bound<'py, numpy::PyArray2<f32>>;

/// A saved network's outputs, as meeple's agents compute them: `(logits, values)` for a batch
/// of observations (`obs`: `[batch, *input]` float32, or one observation without the batch
/// axis), logits `[batch, actions]` and values `[batch, seats]` (after the sigmoid, mover first).
/// For checking another implementation of the same network (`meeple.netfile`, `meeple.torch`).
#[pyfunction]
fn evaluate<'py>(
    py: Python<'py>,
    model: std::path::PathBuf,
    obs: numpy::PyReadonlyArrayDyn<'py, f32>,
) -> PyResult<(Matrix<'py>, Matrix<'py>)> {
    let (net, _) = meeple_nn::Network::load(&model, None, 1).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let config = net.config().clone();
    let n = config.input_len();
    let data: Vec<f32> = obs.as_array().iter().copied().collect();
    if n == 0 || !data.len().is_multiple_of(n) {
        return Err(PyValueError::new_err(format!(
            "obs holds {} values: not a whole number of observations of {n} (the network's input {:?})",
            data.len(),
            config.input
        )));
    }
    let batch = data.len() / n;
    let out = py.detach(|| net.evaluate(&data, batch)).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let shape = |v: Vec<f32>, cols: usize| PyArray1::from_vec(py, v).reshape([batch, cols]);
    Ok((shape(out.logits, config.actions)?, shape(out.values, config.seats)?))
}

/// Plays `games` self-play games for the `meeple train az --selfplay external` run in `run`
/// (its settings from `run.json`, the newest `ckpt/last.safetensors`) and writes them whole to
/// `out` (a `.jsonl` file in the run's `--shards` directory). Returns `(games, positions,
/// seconds)`.
#[pyfunction]
#[pyo3(signature = (game, run, out, games, seed, threads = 1))]
fn play_external(
    py: Python<'_>,
    game: &Bound<'_, PyAny>,
    run: std::path::PathBuf,
    out: std::path::PathBuf,
    games: usize,
    seed: u64,
    threads: usize,
) -> PyResult<(u64, u64, f64)> {
    let game = game_arg(game)?;
    let threads = check_threads(Some(threads)).map_err(value_error)?.unwrap_or(1);
    if games == 0 || games > limits::MAX_GAMES {
        return Err(PyValueError::new_err(format!("games {games}: give 1 to {}", limits::MAX_GAMES)));
    }
    py.detach(|| game.play_external(&run, games, seed, threads, &out)).map_err(PyValueError::new_err)
}

/// Most positions a batch from shards may hold.
const MAX_SHARD_BATCH: usize = 1 << 16;

/// A training batch of `size` positions drawn from self-play shard files (`RUN/selfplay/gen-*.jsonl`)
/// as `meeple train az` draws one (uniformly, each under a random symmetry; value targets mixing
/// the result and the root value by `value_mix`, that root value a short-term one with weight
/// `value_lambda` as `--value-lambda` makes it, the result on the score margin by `value_score`
/// as `--value-score` makes it), for the network whose sidecar `"net"` is
/// `net` (JSON): a dict of float32 arrays `obs [size, *input]`, `legal`, `policy [size, actions]`,
/// `policy_weight [size]`, `value [size, seats]` (mover first), and `ownership [size, cells]`,
/// `ownership_weight [size]` where the network has an ownership head, and `score [size]`,
/// `score_weight [size]` where it has a score-margin head. The same seed gives the same batch.
#[pyfunction]
#[pyo3(signature = (game, shards, net, size, seed, value_mix, value_lambda = 0.0, value_score = 0.0))]
#[allow(clippy::too_many_arguments)]
fn shard_batch<'py>(
    py: Python<'py>,
    game: &Bound<'py, PyAny>,
    shards: Vec<std::path::PathBuf>,
    net: &str,
    size: usize,
    seed: u64,
    value_mix: f64,
    value_lambda: f64,
    value_score: f64,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let game = game_arg(game)?;
    let net: meeple_nn::NetConfig =
        serde_json::from_str(net).map_err(|e| PyValueError::new_err(format!("net: not a network description: {e}")))?;
    if size == 0 || size > MAX_SHARD_BATCH {
        return Err(PyValueError::new_err(format!("size {size}: give 1 to {MAX_SHARD_BATCH} positions")));
    }
    let target = meeple_learn::az::train::ValueTarget::new(value_mix, value_lambda)
        .and_then(|t| t.with_score(value_score))
        .map_err(|e| PyValueError::new_err(format!("value_mix, value_lambda, value_score: {e}")))?;
    let batch = py.detach(|| game.shard_batch(&shards, &net, target, size, seed)).map_err(PyValueError::new_err)?;
    batch_dict(py, &batch, &net)
}

fn batch_dict<'py>(
    py: Python<'py>,
    b: &meeple_nn::Batch,
    net: &meeple_nn::NetConfig,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let d = pyo3::types::PyDict::new(py);
    let n = b.size;
    let mut shape = vec![n];
    shape.extend(&net.input);
    d.set_item("obs", PyArray1::from_slice(py, &b.obs).reshape(shape)?)?;
    d.set_item("legal", PyArray1::from_slice(py, &b.legal).reshape([n, net.actions])?)?;
    d.set_item("policy", PyArray1::from_slice(py, &b.policy).reshape([n, net.actions])?)?;
    d.set_item("policy_weight", PyArray1::from_slice(py, &b.policy_weight))?;
    d.set_item("value", PyArray1::from_slice(py, &b.value).reshape([n, net.seats])?)?;
    if net.ownership_cells() > 0 {
        d.set_item("ownership", PyArray1::from_slice(py, &b.ownership).reshape([n, net.ownership_cells()])?)?;
        d.set_item("ownership_weight", PyArray1::from_slice(py, &b.ownership_weight))?;
    }
    if net.score {
        d.set_item("score", PyArray1::from_slice(py, &b.score))?;
        d.set_item("score_weight", PyArray1::from_slice(py, &b.score_weight))?;
    }
    Ok(d)
}

/// meeple's own training losses at a checkpoint's weights on a batch (`shard_batch`'s dict):
/// `{"policy", "value", "ownership", "score"}` from one forward pass in training mode (BatchNorm on the
/// batch's statistics), as `meeple train az` computes them before its step. For checking another
/// trainer's loss against meeple's.
#[pyfunction]
fn shard_loss<'py>(
    py: Python<'py>,
    model: std::path::PathBuf,
    batch: &Bound<'py, pyo3::types::PyDict>,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let get = |k: &str| -> PyResult<Vec<f32>> {
        match batch.get_item(k)? {
            Some(v) => Ok(v.extract::<numpy::PyReadonlyArrayDyn<'py, f32>>()?.as_array().iter().copied().collect()),
            None => Ok(Vec::new()),
        }
    };
    let mut b = meeple_nn::Batch {
        obs: get("obs")?,
        legal: get("legal")?,
        policy: get("policy")?,
        policy_weight: get("policy_weight")?,
        value: get("value")?,
        ownership: get("ownership")?,
        ownership_weight: get("ownership_weight")?,
        score: get("score")?,
        score_weight: get("score_weight")?,
        ..Default::default()
    };
    b.size = b.policy_weight.len();
    let (mut trainer, _) = meeple_nn::Trainer::warm_start(&model, meeple_nn::TrainConfig::default(), 1)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let losses = py.detach(|| trainer.train_step(&b)).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let d = pyo3::types::PyDict::new(py);
    d.set_item("policy", losses.policy)?;
    d.set_item("value", losses.value)?;
    d.set_item("ownership", losses.ownership)?;
    d.set_item("score", losses.score)?;
    Ok(d)
}

/// Reads a records file (`meeple arena --records`): one dict per game, each checked against
/// its checksum; an error names the line that is not a record. `Game(record["game"]).replay(record)`
/// gives its states.
#[pyfunction]
fn read_records<'py>(py: Python<'py>, path: std::path::PathBuf) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    let mut lines = Vec::new();
    meeple_arena::records::visit(&path, ReadOptions::arena(limits::MAX_GAMES), &mut |entry| {
        if let Entry::Played(g) = entry {
            lines.push(g.to_line());
        }
    })
    .map_err(value_error)?;
    for l in lines {
        out.append(json_loads(py, &l)?)?;
    }
    Ok(out)
}

#[pymodule]
fn _meeple(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("CHANCE", CHANCE)?;
    m.add("TERMINAL", TERMINAL)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("SPRT_BATCH", meeple_arena::SPRT_BATCH)?;
    m.add_function(wrap_pyfunction!(games, m)?)?;
    m.add_function(wrap_pyfunction!(game_infos, m)?)?;
    m.add_function(wrap_pyfunction!(arena, m)?)?;
    m.add_function(wrap_pyfunction!(train, m)?)?;
    m.add_function(wrap_pyfunction!(read_records, m)?)?;
    m.add_function(wrap_pyfunction!(arena_total, m)?)?;
    m.add_function(wrap_pyfunction!(arena_games, m)?)?;
    m.add_function(wrap_pyfunction!(arena_merge, m)?)?;
    m.add_function(wrap_pyfunction!(resume_records, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(shard_batch, m)?)?;
    m.add_function(wrap_pyfunction!(shard_loss, m)?)?;
    m.add_function(wrap_pyfunction!(play_external, m)?)?;
    m.add_class::<RecordsWriter>()?;
    m.add_class::<Game>()?;
    m.add_class::<State>()?;
    m.add_class::<Rng>()?;
    m.add_class::<Agent>()?;
    m.add_class::<VecEnv>()?;
    Ok(())
}
