//! Batched self-play: many games in flight in one process, each search stepping until it needs
//! a leaf; the leaves of all games go through one forward pass; finished searches choose moves
//! and record training positions.

use crate::az::search::{Search, SearchConfig, Step};
use crate::{LearnError, PolicyValue};
use meeple_game::{Action, Game, Player, Rng, State, Turn, derive_seed, rng_from_seed};
use rand::RngExt;
use serde::{Deserialize, Serialize};

/// How self-play plays.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct SelfPlayConfig {
    /// The search of a full move (its policy is a training target).
    #[command(flatten)]
    pub search: SearchConfig,
    /// Self-play games in flight at once (their leaves share one forward pass); at most --games.
    #[arg(long)]
    pub in_flight: usize,
    /// Playout-cap randomisation: a move gets the full search with this probability, else a
    /// fast one (`fast_sims`, no noise) that teaches only the value.
    #[arg(skip)]
    pub full_prob: f64,
    #[arg(skip)]
    pub fast_sims: u32,
    /// Plies at the start of a game whose move is sampled in proportion to the visits.
    #[arg(skip)]
    pub temperature_plies: u32,
    /// Longest game in plies before it is stopped and not used (a draw-like guard).
    #[arg(skip)]
    pub max_plies: u32,
    /// Share of self-play games (0 to 1) that open with 1 to --random-opening-plies uniformly
    /// random moves, so the network also learns the untidy positions its own play avoids (and
    /// that opponents and test positions bring). Those moves are not searched and teach nothing.
    #[arg(long, value_name = "P")]
    #[serde(default)]
    pub random_opening_share: f64,
    /// Most random moves opening such a game: each draws 1 to this many, uniformly.
    #[arg(long, value_name = "N")]
    #[serde(default)]
    pub random_opening_plies: u32,
}

/// One decision of a self-play game, with its targets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Position {
    /// Ply of the game (index into its actions).
    pub ply: u32,
    pub mover: Player,
    /// The improved policy over the legal actions (empty for fast searches).
    pub policy: Vec<(Action, f32)>,
    /// The search's value of the position for each seat (absolute seats).
    pub root_value: Vec<f32>,
}

/// A finished self-play game: every action (chance outcomes included), the decisions with
/// their targets, and the returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SelfPlayGame {
    pub seed: u64,
    pub actions: Vec<Action>,
    pub positions: Vec<Position>,
    pub returns: Vec<f64>,
}

/// Counts of a self-play run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SelfPlayStats {
    pub games: u64,
    pub positions: u64,
    pub evaluations: u64,
    pub batches: u64,
    pub seconds: f64,
}

struct Slot<S: State> {
    seed: u64,
    rng: Rng,
    state: S,
    actions: Vec<Action>,
    positions: Vec<Position>,
    search: Option<(Search<S>, bool)>,
    plies: u32,
    /// Random opening moves still to play.
    random_left: u32,
}

/// Plays `games` games of self-play (seeded `seed`, game `i` from `derive_seed(seed, i)`), at
/// most `config.in_flight` at once, and returns them in order of their index.
pub fn self_play<G: Game>(
    game: &G,
    evaluator: &dyn PolicyValue,
    config: &SelfPlayConfig,
    games: usize,
    seed: u64,
    on_game: impl FnMut(&SelfPlayGame),
) -> Result<(Vec<SelfPlayGame>, SelfPlayStats), LearnError> {
    self_play_until(game, evaluator, config, games, seed, 1, &|| false, on_game)
}

/// [`self_play`] on `workers` threads that also ends as soon as `stop()` says so (checked
/// before every forward pass; with several workers, within 10 ms): the games finished by then
/// are returned, those in flight are dropped. A training run's time limit and
/// Ctrl-C end a long generation this way.
///
/// Each worker plays its own share of the games (game `i` goes to worker `i % workers`, with
/// `config.in_flight / workers` in flight) and evaluates its own batches on its own thread, so
/// every core searches and evaluates: one thread handing batches to the inference pool leaves
/// the pool idle during every search step (docs/alphazero.md, "How it works", has the measured
/// difference). A game's moves come from its own seed, not from the worker
/// that played it; `on_game` runs on the calling thread, as the games finish.
#[allow(clippy::too_many_arguments)]
pub fn self_play_until<G: Game>(
    game: &G,
    evaluator: &dyn PolicyValue,
    config: &SelfPlayConfig,
    games: usize,
    seed: u64,
    workers: usize,
    stop: &dyn Fn() -> bool,
    on_game: impl FnMut(&SelfPlayGame),
) -> Result<(Vec<SelfPlayGame>, SelfPlayStats), LearnError> {
    let in_flight = config.in_flight.max(1).div_ceil(workers.clamp(1, games.max(1)));
    on_workers(games, seed, workers, stop, on_game, &|indices, serial, stop, emit| {
        play_share(game, evaluator, config, indices, in_flight, seed, serial, stop, emit)
    })
}

/// Games of a teacher, an agent spec (`ismcts:iters=300`), in every seat, recorded as
/// self-play games with targets: expert iteration's first generations (Anthony et al. 2017),
/// in which a network learns from a stronger player's decisions before it learns from its
/// own searches. A decision's policy target is the share of the teacher's visits among the
/// legal moves where its search reports visits (MCTS, ISMCTS), else its move; the value target
/// is the game's result (a decision's `root_value` is empty: no search value of ours). Each agent is made
/// for its game and seat with a seed from the game's, so the games depend on `seed` alone;
/// the random openings and the ply limit are `config`'s. Threads and `stop` as
/// [`self_play_until`]; a game in progress when `stop()` says so is dropped.
#[allow(clippy::too_many_arguments)]
pub fn teacher_play_until<G: Game>(
    game: &G,
    teacher: &str,
    config: &SelfPlayConfig,
    games: usize,
    seed: u64,
    workers: usize,
    stop: &dyn Fn() -> bool,
    on_game: impl FnMut(&SelfPlayGame),
) -> Result<(Vec<SelfPlayGame>, SelfPlayStats), LearnError> {
    on_workers(games, seed, workers, stop, on_game, &|indices, _serial, stop, emit| {
        teach_share(game, teacher, config, indices, seed, stop, emit)
    })
}

/// How a worker plays its share: the game indices, whether it evaluates on its own thread
/// (beside other workers), the stop request, and where each finished game goes.
type Share<'a> = dyn Fn(&[usize], bool, &dyn Fn() -> bool, &mut dyn FnMut(SelfPlayGame)) -> Result<SelfPlayStats, LearnError>
    + Sync
    + 'a;

/// Plays `games` games on `workers` threads (game `i` on worker `i % workers`), handing each
/// to `on_game` on the calling thread as it finishes, and returns them in index order.
fn on_workers(
    games: usize,
    seed: u64,
    workers: usize,
    stop: &dyn Fn() -> bool,
    mut on_game: impl FnMut(&SelfPlayGame),
    share: &Share<'_>,
) -> Result<(Vec<SelfPlayGame>, SelfPlayStats), LearnError> {
    let start = std::time::Instant::now();
    let workers = workers.clamp(1, games.max(1));
    let mut finished: Vec<SelfPlayGame> = Vec::new();
    let mut stats = if workers == 1 {
        let indices: Vec<usize> = (0..games).collect();
        share(&indices, false, stop, &mut |g| {
            on_game(&g);
            finished.push(g);
        })?
    } else {
        // The stop request is read on the caller's thread (now, then every few milliseconds and
        // as games finish) and handed to the workers.
        let stopped = std::sync::atomic::AtomicBool::new(stop());
        let halt = || stopped.load(std::sync::atomic::Ordering::Relaxed);
        let (tx, rx) = std::sync::mpsc::channel::<SelfPlayGame>();
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|w| {
                    let (tx, halt, stopped) = (tx.clone(), &halt, &stopped);
                    scope.spawn(move || {
                        let indices: Vec<usize> = (w..games).step_by(workers).collect();
                        let result = share(&indices, true, halt, &mut |g| {
                            let _ = tx.send(g);
                        });
                        if result.is_err() {
                            // The others need not finish a generation that fails.
                            stopped.store(true, std::sync::atomic::Ordering::Relaxed);
                        }
                        result
                    })
                })
                .collect();
            drop(tx);
            loop {
                match rx.recv_timeout(std::time::Duration::from_millis(10)) {
                    Ok(g) => {
                        on_game(&g);
                        finished.push(g);
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                }
                if !halt() && stop() {
                    stopped.store(true, std::sync::atomic::Ordering::Relaxed);
                }
            }
            let mut total = SelfPlayStats::default();
            for h in handles {
                let s = h.join().expect("a self-play worker panicked")?;
                total.games += s.games;
                total.positions += s.positions;
                total.evaluations += s.evaluations;
                total.batches += s.batches;
            }
            Ok::<_, LearnError>(total)
        })?
    };
    stats.seconds = start.elapsed().as_secs_f64();
    // Order by game index: seeds come from the index, so sort by where each seed was dealt.
    let order: std::collections::HashMap<u64, usize> = (0..games).map(|i| (derive_seed(seed, i as u64), i)).collect();
    finished.sort_by_key(|g| order.get(&g.seed).copied().unwrap_or(usize::MAX));
    Ok((finished, stats))
}

/// The random opening moves of a game whose generator is `rng` (drawn first from it).
fn opening_plies(config: &SelfPlayConfig, rng: &mut Rng) -> u32 {
    let share = if config.random_opening_share.is_finite() { config.random_opening_share.clamp(0.0, 1.0) } else { 0.0 };
    if config.random_opening_plies > 0 && share > 0.0 && rng.random_bool(share) {
        rng.random_range(1..=config.random_opening_plies)
    } else {
        0
    }
}

/// A uniformly random legal move for `state`'s player `p`.
fn random_move<S: State>(state: &S, p: Player, legal: &mut Vec<Action>, rng: &mut Rng) -> Result<Action, LearnError> {
    state.legal_actions(legal);
    if legal.is_empty() {
        return Err(LearnError::Data(format!("player {p} is to move with no legal action")));
    }
    Ok(legal[rng.random_range(0..legal.len())])
}

/// Plays the teacher's games `indices` one after another (see [`teacher_play_until`]).
fn teach_share<G: Game>(
    game: &G,
    teacher: &str,
    config: &SelfPlayConfig,
    indices: &[usize],
    seed: u64,
    stop: &dyn Fn() -> bool,
    emit: &mut dyn FnMut(SelfPlayGame),
) -> Result<SelfPlayStats, LearnError> {
    let seats = game.num_players();
    let mut stats = SelfPlayStats::default();
    let (mut outcomes, mut legal) = (Vec::new(), Vec::new());
    'games: for &i in indices {
        let s = derive_seed(seed, i as u64);
        let mut rng = rng_from_seed(s);
        let mut random_left = opening_plies(config, &mut rng);
        let mut agents = (0..seats)
            .map(|p| {
                crate::make_agent(game, teacher, meeple_game::seat_seed(s, p))
                    .map_err(|e| LearnError::Config(format!("teacher '{teacher}': {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut state = game.initial_state();
        let (mut actions, mut positions, mut plies) = (Vec::new(), Vec::new(), 0u32);
        let returns = loop {
            if stop() {
                break 'games;
            }
            match state.turn() {
                Turn::Terminal => break state.returns().expect("terminal").to_vec(),
                Turn::Chance => {
                    let a = meeple_game::draw_chance(&state, &mut outcomes, &mut rng);
                    actions.push(a);
                    state.apply_unchecked(a);
                }
                Turn::Player(p) => {
                    if plies >= config.max_plies {
                        continue 'games;
                    }
                    let a = if random_left > 0 {
                        random_left -= 1;
                        random_move(&state, p, &mut legal, &mut rng)?
                    } else {
                        let agent = &mut agents[p];
                        let a = agent.act(&state, &meeple_game::Budget::default())?;
                        state.legal_actions(&mut legal);
                        if !legal.contains(&a) {
                            return Err(LearnError::Data(format!(
                                "teacher '{teacher}' chose {a}, not a legal move for player {p}"
                            )));
                        }
                        positions.push(Position {
                            ply: actions.len() as u32,
                            mover: p,
                            policy: teacher_policy(&agent.analysis(), &legal, a),
                            root_value: Vec::new(),
                        });
                        a
                    };
                    actions.push(a);
                    state.apply_unchecked(a);
                    plies += 1;
                }
            }
        };
        stats.games += 1;
        stats.positions += positions.len() as u64;
        emit(SelfPlayGame { seed: s, actions, positions, returns });
    }
    Ok(stats)
}

/// A teacher's policy target: its visits' shares among the legal moves, or its move alone
/// where it reports no visits.
fn teacher_policy(analysis: &[meeple_game::MoveStat], legal: &[Action], chosen: Action) -> Vec<(Action, f32)> {
    let visits: Vec<(Action, u64)> = analysis
        .iter()
        .filter_map(|m| Some((m.action, m.visits?)))
        .filter(|&(a, n)| n > 0 && legal.contains(&a))
        .collect();
    let total: u64 = visits.iter().map(|v| v.1).sum();
    if total == 0 {
        return vec![(chosen, 1.0)];
    }
    visits.into_iter().map(|(a, n)| (a, (n as f64 / total as f64) as f32)).collect()
}

/// Plays the games `indices` (seeded from `seed` by index), `in_flight` at once, handing each
/// finished game to `emit`; `stop()` is checked before every forward pass. `serial`: evaluate
/// on this thread alone (a worker beside others) rather than in the evaluator's pool.
#[allow(clippy::too_many_arguments)]
fn play_share<G: Game>(
    game: &G,
    evaluator: &dyn PolicyValue,
    config: &SelfPlayConfig,
    indices: &[usize],
    in_flight: usize,
    seed: u64,
    serial: bool,
    stop: &dyn Fn() -> bool,
    emit: &mut dyn FnMut(SelfPlayGame),
) -> Result<SelfPlayStats, LearnError> {
    let seats = game.num_players();
    let (input, actions) = (evaluator.input_len(), evaluator.actions());
    let mut stats = SelfPlayStats::default();
    let mut next = 0usize;
    let games = indices.len();
    let new_slot = |k: usize| {
        let s = derive_seed(seed, indices[k] as u64);
        let mut rng = rng_from_seed(s);
        let random_left = opening_plies(config, &mut rng);
        Slot {
            seed: s,
            rng,
            state: game.initial_state(),
            actions: Vec::new(),
            positions: Vec::new(),
            search: None,
            plies: 0,
            random_left,
        }
    };
    let mut slots: Vec<Option<Slot<G::State>>> = Vec::new();
    while next < games && slots.len() < in_flight.max(1) {
        slots.push(Some(new_slot(next)));
        next += 1;
    }
    let mut obs = Vec::new();
    let mut one = Vec::new();
    let mut waiting: Vec<usize> = Vec::new();
    let mut outcomes = Vec::new();
    let mut legal = Vec::new();
    // Each waiting leaf's legal moves, end to end, and where each leaf's start: the network
    // computes their logits alone; `row` puts one leaf's back at their ids for its search.
    let (mut listed, mut starts, mut row) = (Vec::new(), Vec::new(), vec![0.0f32; actions]);
    loop {
        obs.clear();
        waiting.clear();
        listed.clear();
        starts.clear();
        starts.push(0);
        for (k, slot_opt) in slots.iter_mut().enumerate() {
            while let Some(slot) = slot_opt.as_mut() {
                if slot.search.is_none() {
                    match slot.state.turn() {
                        Turn::Terminal => {
                            let returns = slot.state.returns().expect("terminal").to_vec();
                            let done = SelfPlayGame {
                                seed: slot.seed,
                                actions: std::mem::take(&mut slot.actions),
                                positions: std::mem::take(&mut slot.positions),
                                returns,
                            };
                            stats.games += 1;
                            stats.positions += done.positions.len() as u64;
                            emit(done);
                            *slot_opt = if next < games {
                                next += 1;
                                Some(new_slot(next - 1))
                            } else {
                                None
                            };
                            continue;
                        }
                        Turn::Chance => {
                            let a = meeple_game::draw_chance(&slot.state, &mut outcomes, &mut slot.rng);
                            slot.actions.push(a);
                            slot.state.apply_unchecked(a);
                            continue;
                        }
                        Turn::Player(p) => {
                            if slot.plies >= config.max_plies {
                                // A game this long teaches nothing reliable: drop it.
                                *slot_opt = if next < games {
                                    next += 1;
                                    Some(new_slot(next - 1))
                                } else {
                                    None
                                };
                                continue;
                            }
                            if slot.random_left > 0 {
                                slot.random_left -= 1;
                                let a = random_move(&slot.state, p, &mut legal, &mut slot.rng)?;
                                slot.actions.push(a);
                                slot.state.apply_unchecked(a);
                                slot.plies += 1;
                                continue;
                            }
                            let full = slot.rng.random_bool(config.full_prob.clamp(0.0, 1.0));
                            let search_config = if full {
                                config.search.clone()
                            } else {
                                SearchConfig { sims: config.fast_sims.max(1), ..config.search.quiet() }
                            };
                            // Hidden information: search a sample of what the mover knows.
                            let root = slot.state.determinize_open(p, &mut slot.rng);
                            let search_seed = slot.rng.random();
                            slot.search = Some((Search::new(root, seats, search_config, search_seed), full));
                        }
                    }
                }
                let (search, full) = slot.search.as_mut().expect("a search");
                match search.step() {
                    Step::Evaluate(leaf) => {
                        let mover = leaf.current_player().expect("a decision");
                        leaf.observation(mover, &mut one);
                        if one.len() != input {
                            return Err(LearnError::Shape(format!(
                                "an observation of {} values for a network that takes {input}",
                                one.len()
                            )));
                        }
                        obs.extend_from_slice(&one);
                        let from = listed.len();
                        leaf.legal_actions(&mut legal);
                        listed.extend_from_slice(&legal);
                        starts.push(listed.len());
                        debug_assert!(listed.len() > from, "a decision has a legal move");
                        waiting.push(k);
                        break;
                    }
                    Step::Done => {
                        let full = *full;
                        let result = search.result();
                        let mover = slot.state.current_player().expect("a decision");
                        // Sampling explores; a proven root has nothing left to explore.
                        let action = if slot.plies < config.temperature_plies && full && !result.proven {
                            sample_visits(&result.visits, &mut slot.rng).unwrap_or(result.action)
                        } else {
                            result.action
                        };
                        slot.positions.push(Position {
                            ply: slot.actions.len() as u32,
                            mover,
                            policy: if full { result.policy } else { Vec::new() },
                            root_value: result.value,
                        });
                        slot.actions.push(action);
                        slot.state.apply_unchecked(action);
                        slot.plies += 1;
                        slot.search = None;
                    }
                }
            }
        }
        if waiting.is_empty() || stop() {
            break;
        }
        let out = evaluator.evaluate_listed(&obs, waiting.len(), &listed, &starts, serial)?;
        stats.evaluations += waiting.len() as u64;
        stats.batches += 1;
        for (b, &k) in waiting.iter().enumerate() {
            let slot = slots[k].as_mut().expect("a waiting game");
            let (search, _) = slot.search.as_mut().expect("a waiting search");
            // The search reads the leaf's legal moves' logits alone: the rest of `row` is stale.
            for j in starts[b]..starts[b + 1] {
                row[listed[j] as usize] = out.logits[j];
            }
            search.deliver(&row, &out.values[b * seats..(b + 1) * seats]);
        }
    }
    Ok(stats)
}

/// An action drawn in proportion to its visits.
fn sample_visits(visits: &[(Action, u32)], rng: &mut Rng) -> Option<Action> {
    let total: u32 = visits.iter().map(|v| v.1).sum();
    if total == 0 {
        return None;
    }
    let mut x = rng.random_range(0..total);
    for &(a, n) in visits {
        if x < n {
            return Some(a);
        }
        x -= n;
    }
    None
}

/// Rebuilds the states of a self-play game from its actions (for training from shards).
pub fn replay_states<G: Game>(game: &G, record: &SelfPlayGame) -> Result<Vec<G::State>, LearnError> {
    let mut state = game.initial_state();
    let mut states = Vec::with_capacity(record.actions.len() + 1);
    for &a in &record.actions {
        states.push(state.clone());
        if !state.is_legal(a) {
            return Err(LearnError::Data(format!("a self-play record has an illegal action {a}")));
        }
        state.apply_unchecked(a);
    }
    states.push(state);
    Ok(states)
}
