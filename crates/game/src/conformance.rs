//! The conformance kit: one routine every game's tests call.
//!
//! It plays seeded random games and checks, at every state, the contracts the rest of meeple
//! relies on: legal actions exist unless terminal, every legal action applies, the checked apply
//! refuses illegal ids without touching the state, clones are equal and hash equal, records
//! replay to the same states and returns, notation round-trips, the same seed gives the same
//! game, observations have the declared shape and values in 0..=1 (and ownership, where a game
//! has it, one value of -1, 0 or 1 per board cell), `determinize` keeps the observer's view,
//! and returns exist exactly at terminal states.
//!
//! The number of games comes from [`Config::games`]; `MEEPLE_CONFORMANCE_GAMES` overrides it so a
//! long run is one environment variable away while CI stays quick, and
//! `MEEPLE_CONFORMANCE_DEEP_EVERY` overrides [`Config::deep_check_every`] so a run of many long
//! games (Catan's run to thousands of plies) can check every state cheaply and every n-th fully.

use crate::{Action, Game, GameRecord, Player, State, Turn, derive_seed, replay, rng_from_seed};
use rand::RngExt;

/// How much to check.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Random games to play.
    pub games: usize,
    /// Base seed; game `i` uses `derive_seed(seed, i)`.
    pub seed: u64,
    /// Random ids to probe per state, besides every id below 64, the space size and `u32::MAX`.
    pub illegal_probes: usize,
    /// A game longer than this is reported as not terminating.
    pub max_plies: usize,
    /// Every how many plies the expensive per-state checks run (1 = every state).
    pub deep_check_every: usize,
}

impl Config {
    /// `games` random games, overridden by `MEEPLE_CONFORMANCE_GAMES` when set; every state gets
    /// the full check unless `MEEPLE_CONFORMANCE_DEEP_EVERY` says every how many plies.
    ///
    /// # Panics
    /// If either variable is set to something other than a positive whole number: a typo must not
    /// quietly run the default and be read as the long run.
    pub fn with_games(games: usize) -> Self {
        let games = env_count("MEEPLE_CONFORMANCE_GAMES").unwrap_or(games);
        let deep_check_every = env_count("MEEPLE_CONFORMANCE_DEEP_EVERY").unwrap_or(1);
        Config { games, seed: 0x6d65_6570_6c65, illegal_probes: 8, max_plies: 100_000, deep_check_every }
    }

    /// Sets how often the full per-state checks run, unless `MEEPLE_CONFORMANCE_DEEP_EVERY` is set
    /// (the variable wins, so a long run can tighten or loosen any game's default).
    pub fn deep_every(mut self, plies: usize) -> Self {
        if std::env::var_os("MEEPLE_CONFORMANCE_DEEP_EVERY").is_none() {
            self.deep_check_every = plies.max(1);
        }
        self
    }
}

fn env_count(name: &str) -> Option<usize> {
    let text = std::env::var(name).ok()?;
    match text.trim().parse::<usize>() {
        Ok(n) if n > 0 => Some(n),
        _ => panic!("{name}={text:?} is not a positive whole number"),
    }
}

/// What a passing run covered.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// Games played.
    pub games: usize,
    /// States checked.
    pub states: usize,
    /// Chance nodes met.
    pub chance_nodes: usize,
    /// Sum of each player's returns over all games (to eyeball balance).
    pub total_returns: Vec<f64>,
}

/// Runs the kit on `game`. Returns the first broken contract as a message naming the game, seed,
/// ply and what went wrong.
pub fn check<G: Game>(game: &G, config: &Config) -> Result<Report, String> {
    let n = game.num_players();
    if n == 0 || n > crate::MAX_PLAYERS {
        return Err(format!("num_players {n} outside 1..={}", crate::MAX_PLAYERS));
    }
    let shape = game.observation_shape();
    if shape.is_empty() || shape.contains(&0) {
        return Err(format!("observation shape {shape:?} has no elements"));
    }
    check_action_planes(game)?;
    let mut report = Report { total_returns: vec![0.0; n], ..Report::default() };
    for i in 0..config.games {
        let seed = derive_seed(config.seed, i as u64);
        let ctx = |ply: usize, msg: String| format!("{} seed {seed} ply {ply}: {msg}", game.spec());
        let (states, actions) = play_random(game, seed, config, Some(&mut report)).map_err(|(ply, m)| ctx(ply, m))?;

        // Same seed, same game (its states were checked the first time).
        let (_, again) = play_random(game, seed, config, None).map_err(|(ply, m)| ctx(ply, m))?;
        if again != actions {
            return Err(ctx(0, "the same seed gave a different game".into()));
        }

        // The record replays to the same states, hashes and returns.
        let last = states.last().expect("at least the initial state");
        let returns = last.returns().ok_or_else(|| ctx(actions.len(), "random game ended without returns".into()))?;
        let mut notation = Vec::with_capacity(actions.len());
        for (s, &a) in states.iter().zip(&actions) {
            notation.push(s.action_to_string(a));
        }
        let record = GameRecord {
            game: game.spec().to_string(),
            seed,
            agents: vec!["random".into(); n],
            actions: notation,
            returns: Some(returns.to_vec()),
            scores: last.scores().to_vec(),
            metrics: last.metrics().into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            resigned: None,
        };
        let record = GameRecord::from_json(&record.to_json()).map_err(|e| ctx(0, e.to_string()))?;
        let replayed = replay(game, &record).map_err(|e| ctx(0, e.to_string()))?;
        for (ply, (a, b)) in states.iter().zip(&replayed).enumerate() {
            if a != b || a.zobrist() != b.zobrist() {
                return Err(ctx(ply, "replay from the record reached a different state".into()));
            }
        }
        for (p, r) in returns.iter().enumerate() {
            report.total_returns[p] += r;
        }
        report.games += 1;
    }
    Ok(report)
}

type Failure = (usize, String);

/// Action planes, where a game has them, cover every action id with a distinct cell of the
/// observation's board.
fn check_action_planes<G: Game>(game: &G) -> Result<(), String> {
    let Some(planes) = game.action_planes() else { return Ok(()) };
    let shape = game.observation_shape();
    let ctx = |msg: String| format!("{} action planes: {msg}", game.spec());
    let [_, rows, cols] = shape[..] else {
        return Err(ctx(format!("the observation {shape:?} is not board planes [planes, rows, cols]")));
    };
    if planes.index.len() != game.num_actions() {
        return Err(ctx(format!("{} cells for {} actions", planes.index.len(), game.num_actions())));
    }
    let cells = planes.planes * rows * cols;
    let mut seen = vec![false; cells];
    for (a, &i) in planes.index.iter().enumerate() {
        let i = i as usize;
        if i >= cells {
            return Err(ctx(format!("action {a} at cell {i}, beyond {} planes of {rows}x{cols}", planes.planes)));
        }
        if std::mem::replace(&mut seen[i], true) {
            return Err(ctx(format!("action {a} shares cell {i} with another action")));
        }
    }
    Ok(())
}

/// Every symmetry commutes with the rules: the image's legal actions are the images of the legal
/// actions, and applying then transforming equals transforming then applying; symmetry 0 is the
/// identity; the image has the same turn and, at the end, the same returns.
fn check_symmetries<G: Game>(game: &G, state: &G::State, legal: &[Action]) -> Result<(), String> {
    let k_all = state.symmetries();
    if k_all == 0 {
        return Err("symmetries() is 0: the identity always counts".into());
    }
    if state.symmetric(0) != *state {
        return Err("symmetry 0 is not the identity".into());
    }
    for k in 1..k_all {
        let image = state.symmetric(k);
        if image.turn() != state.turn() || image.returns() != state.returns() {
            return Err(format!("symmetry {k} changes the turn or the returns"));
        }
        let mut image_legal = Vec::new();
        image.legal_actions(&mut image_legal);
        let mut mapped: Vec<Action> = legal.iter().map(|&a| state.symmetric_action(a, k)).collect();
        mapped.sort_unstable();
        if mapped != image_legal {
            return Err(format!("symmetry {k}: the images of the legal actions are not the image's legal actions"));
        }
        // Commutation on up to 16 moves spread over the list (Cathedral has thousands).
        let step = legal.len().div_ceil(16).max(1);
        for &a in legal.iter().step_by(step) {
            let mut after = state.clone();
            after.apply_unchecked(a);
            let mut image_after = image.clone();
            image_after.apply_unchecked(state.symmetric_action(a, k));
            if after.symmetric(k) != image_after {
                return Err(format!("symmetry {k} does not commute with {} ({a})", state.action_to_string(a)));
            }
        }
    }
    let _ = game;
    Ok(())
}

/// Plays one random game, checking every state when it has a report to count them in; returns
/// the states and the actions taken.
fn play_random<G: Game>(
    game: &G,
    seed: u64,
    config: &Config,
    mut report: Option<&mut Report>,
) -> Result<(Vec<G::State>, Vec<Action>), Failure> {
    let mut rng = rng_from_seed(seed);
    let mut state = game.initial_state();
    let mut states = vec![state.clone()];
    let mut actions = Vec::new();
    let mut legal = Vec::new();
    let mut outcomes = Vec::new();
    for ply in 0.. {
        if ply > config.max_plies {
            return Err((ply, format!("no end after {} plies", config.max_plies)));
        }
        if let Some(report) = report.as_deref_mut() {
            let deep = ply % config.deep_check_every.max(1) == 0;
            check_state(game, &state, deep, seed ^ ply as u64, config).map_err(|m| (ply, m))?;
            report.states += 1;
            report.chance_nodes += usize::from(state.turn() == Turn::Chance);
        }
        let action = match state.turn() {
            Turn::Terminal => break,
            Turn::Player(_) => {
                state.legal_actions(&mut legal);
                if legal.is_empty() {
                    return Err((ply, "no legal actions in a non-terminal state".into()));
                }
                legal[rng.random_range(0..legal.len())]
            }
            Turn::Chance => crate::draw_chance(&state, &mut outcomes, &mut rng),
        };
        state.apply_unchecked(action);
        actions.push(action);
        states.push(state.clone());
    }
    Ok((states, actions))
}

fn check_state<G: Game>(game: &G, state: &G::State, deep: bool, seed: u64, config: &Config) -> Result<(), String> {
    let n = game.num_players();
    let turn = state.turn();
    let copy = state.clone();
    if copy != *state || copy.zobrist() != state.zobrist() {
        return Err("a clone differs from its original (== or zobrist)".into());
    }
    if state.scores().len() != n {
        return Err(format!("scores() has {} values for {n} players", state.scores().len()));
    }
    match (turn, state.returns()) {
        (Turn::Terminal, None) => return Err("terminal state without returns".into()),
        (Turn::Terminal, Some(r)) if r.len() != n || r.iter().any(|v| !v.is_finite()) => {
            return Err(format!("returns {r:?} are not {n} finite values"));
        }
        (Turn::Player(_) | Turn::Chance, Some(r)) => return Err(format!("returns {r:?} before the end")),
        _ => {}
    }
    let mut legal = Vec::new();
    let mut outcomes = Vec::new();
    state.legal_actions(&mut legal);
    state.chance_outcomes(&mut outcomes);
    let applicable: Vec<Action> = match turn {
        Turn::Terminal => {
            if !legal.is_empty() || !outcomes.is_empty() {
                return Err("terminal state lists actions".into());
            }
            Vec::new()
        }
        Turn::Player(p) => {
            if p >= n {
                return Err(format!("player {p} to move in a {n}-player game"));
            }
            if legal.is_empty() {
                return Err("no legal actions in a non-terminal state".into());
            }
            if !outcomes.is_empty() {
                return Err("a player's turn lists chance outcomes".into());
            }
            if legal.windows(2).any(|w| w[0] >= w[1]) {
                return Err(format!("legal actions not ascending and unique: {legal:?}"));
            }
            if let Some(&a) = legal.iter().find(|&&a| a as usize >= game.num_actions()) {
                return Err(format!("legal action {a} >= num_actions {}", game.num_actions()));
            }
            if let Some(a) = state.unanswered().filter(|a| !legal.contains(a)) {
                return Err(format!("unanswered() is {a}, not a legal move here"));
            }
            legal.clone()
        }
        Turn::Chance => {
            if outcomes.is_empty() || !legal.is_empty() {
                return Err("a chance node must list outcomes and no player actions".into());
            }
            let sum: f64 = outcomes.iter().map(|o| o.1).sum();
            if outcomes.iter().any(|o| !(o.1 > 0.0 && o.1.is_finite())) || (sum - 1.0).abs() > 1e-9 {
                return Err(format!("chance probabilities must be positive and sum to 1, got sum {sum}"));
            }
            if let Some(o) = outcomes.iter().find(|o| o.0 as usize >= game.max_chance_outcomes()) {
                return Err(format!("chance outcome {} >= max_chance_outcomes {}", o.0, game.max_chance_outcomes()));
            }
            outcomes.iter().map(|o| o.0).collect()
        }
    };
    check_observations(game, state, seed, deep)?;
    if !deep {
        return Ok(());
    }
    check_symmetries(game, state, &legal)?;
    if let Turn::Player(_) = turn {
        let mut rng = rng_from_seed(seed ^ 0x5eed);
        let mut buf = Vec::new();
        for _ in 0..4 {
            let a = state.random_action(&mut rng, &mut buf);
            if !applicable.contains(&a) {
                return Err(format!("random_action gave {a}, which is not a legal action"));
            }
        }
    }
    for &a in &applicable {
        let text = state.action_to_string(a);
        match state.parse_action(&text) {
            Ok(b) if b == a => {}
            Ok(b) => return Err(format!("notation '{text}' of action {a} parses back as {b}")),
            Err(e) => return Err(format!("notation '{text}' of action {a} does not parse: {e}")),
        }
        if !state.is_legal(a) {
            return Err(format!("is_legal({a}) is false for a listed action"));
        }
        let mut checked = state.clone();
        checked.apply(a).map_err(|e| format!("checked apply refused legal action {a} ('{text}'): {e}"))?;
        let mut fast = state.clone();
        fast.apply_unchecked(a);
        if checked != fast || checked.zobrist() != fast.zobrist() {
            return Err(format!("checked and unchecked apply of {a} differ"));
        }
    }
    // Probe ids from both spaces: a player's id is illegal at a chance node and vice versa.
    let space = game.num_actions().max(game.max_chance_outcomes()) as u64;
    let mut probes: Vec<Action> = (0..space.min(64) as Action).collect();
    probes.extend([space.min(u32::MAX as u64) as Action, Action::MAX]);
    let mut rng = rng_from_seed(seed);
    for _ in 0..config.illegal_probes {
        if space > 0 {
            probes.push(rng.random_range(0..space) as Action);
        }
    }
    for a in probes {
        if applicable.contains(&a) {
            continue;
        }
        if state.is_legal(a) {
            return Err(format!("is_legal({a}) is true for an unlisted action"));
        }
        let mut s = state.clone();
        if s.apply(a).is_ok() {
            return Err(format!("checked apply accepted illegal action {a}"));
        }
        if s != *state || s.zobrist() != state.zobrist() {
            return Err(format!("refused action {a} changed the state"));
        }
    }
    check_view(game, state, &legal, seed)
}

/// Where a game says who holds its cells: one value per cell of the observation's board, each
/// -1, 0 or 1, and in a two-player game the one player's view the other's negated.
fn check_ownership<G: Game>(game: &G, state: &G::State, p: Player) -> Result<(), String> {
    let mut own = Vec::new();
    if !state.ownership(p, &mut own) {
        return if own.is_empty() { Ok(()) } else { Err("ownership() is false but filled its output".into()) };
    }
    let shape = game.observation_shape();
    let [_, rows, cols] = shape[..] else {
        return Err(format!("ownership() needs board planes; the observation is {shape:?}"));
    };
    if own.len() != rows * cols {
        return Err(format!("ownership for player {p} has {} values, the board {rows}x{cols}", own.len()));
    }
    if let Some(v) = own.iter().find(|v| ![-1.0, 0.0, 1.0].contains(*v)) {
        return Err(format!("ownership for player {p} holds {v}, not -1, 0 or 1"));
    }
    if game.num_players() == 2 {
        let mut other = Vec::new();
        state.ownership(1 - p, &mut other);
        if other.iter().zip(&own).any(|(a, b)| *a != -*b) {
            return Err(format!("ownership for player {} is not player {p}'s negated", 1 - p));
        }
    }
    Ok(())
}

/// Observations every state; the worlds of `determinize` at the states given the full check.
fn check_observations<G: Game>(game: &G, state: &G::State, seed: u64, deep: bool) -> Result<(), String> {
    let len: usize = game.observation_shape().iter().product();
    let mut obs = Vec::new();
    let mut seen = Vec::new();
    let mut rng = rng_from_seed(seed);
    for p in 0..game.num_players() as Player {
        state.observation(p, &mut obs);
        if obs.len() != len {
            return Err(format!("observation for player {p} has {} values, shape says {len}", obs.len()));
        }
        // Learners and the Python spaces (a Box from 0 to 1) rely on this range.
        if let Some(v) = obs.iter().find(|v| !(0.0..=1.0).contains(*v)) {
            return Err(format!("observation for player {p} holds {v}, outside 0..=1"));
        }
        check_ownership(game, state, p)?;
        if !deep {
            continue;
        }
        for (how, world) in
            [("determinize", state.determinize(p, &mut rng)), ("determinize_open", state.determinize_open(p, &mut rng))]
        {
            world.observation(p, &mut seen);
            if seen != obs {
                return Err(format!("{how}({p}) changed player {p}'s own observation"));
            }
            if world.turn() != state.turn() {
                return Err(format!("{how}({p}) changed whose turn it is"));
            }
            if state.current_player() == Some(p) {
                let (mut a, mut b) = (Vec::new(), Vec::new());
                state.legal_actions(&mut a);
                world.legal_actions(&mut b);
                if a != b {
                    return Err(format!("{how}({p}) changed the mover's legal actions"));
                }
            }
        }
        if state.observation_string(p).is_empty() {
            return Err(format!("observation_string({p}) is empty"));
        }
    }
    Ok(())
}

/// The page's hooks: every legal action has a click path of `kind:name` targets, no path is
/// another's (or a prefix of another's, which a page could never finish), and each viewer's view
/// is the same in every world that viewer cannot tell apart, so it leaks nothing hidden.
fn check_view<G: Game>(game: &G, state: &G::State, legal: &[Action], seed: u64) -> Result<(), String> {
    let mut paths: Vec<(Vec<String>, Action)> = Vec::with_capacity(legal.len());
    for &a in legal {
        let path = state.action_path(a);
        if path.is_empty() {
            return Err(format!("action {a} has an empty click path"));
        }
        if let Some(t) = path.iter().find(|t| !t.split_once(':').is_some_and(|(k, n)| !k.is_empty() && !n.is_empty())) {
            return Err(format!("click path of action {a} holds '{t}', not kind:name"));
        }
        paths.push((path, a));
    }
    paths.sort();
    for w in paths.windows(2) {
        if w[1].0.starts_with(&w[0].0) {
            return Err(format!(
                "click path {:?} of action {} is (a prefix of) the path of action {}",
                w[0].0, w[0].1, w[1].1
            ));
        }
    }
    let mut rng = rng_from_seed(seed ^ 0x71e3);
    let spectator = state.view(None);
    if !spectator.is_object() {
        return Err("view(None) is not a JSON object".into());
    }
    for p in 0..game.num_players() as Player {
        let own = state.view(Some(p));
        if !own.is_object() {
            return Err(format!("view({p}) is not a JSON object"));
        }
        let world = state.determinize(p, &mut rng);
        if world.view(Some(p)) != own {
            return Err(format!(
                "view({p}) differs in a world player {p} cannot tell apart: it shows hidden information"
            ));
        }
        if world.view(None) != spectator {
            return Err(format!(
                "the spectator's view differs in a world determinized for {p}: it shows hidden information"
            ));
        }
    }
    Ok(())
}
