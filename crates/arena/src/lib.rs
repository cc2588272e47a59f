//! Matches between agents: paired seats, parallel games, deterministic results, Wilson intervals.
//!
//! A match is a list of seeds; each seed is played once per seating (every permutation of the
//! agents over the seats), and a seed gives the same chance events in every seating, so luck
//! cancels between paired games. Game `i` depends only on the base seed and `i`, and results are
//! gathered in game order, so the outcome is identical whatever the thread count.

pub mod files;
pub mod ratings;
mod stats;
pub mod tune;

pub use stats::{Z95, wilson};

use meeple_game::{Budget, Error, Game, GameRecord, State, Turn, derive_seed, limits, rng_from_seed, sample_chance};
use meeple_learn::make_agent;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// What to play.
#[derive(Clone, Debug)]
pub struct MatchConfig {
    /// Agent specs; as many as the game has seats.
    pub agents: Vec<String>,
    /// Total games; a multiple of the number of seatings (2 for two-player games).
    pub games: usize,
    /// Base seed of the whole match.
    pub seed: u64,
    /// Worker threads; `None` uses every core.
    pub threads: Option<usize>,
    /// Outside limit for every move (`--move-time`).
    pub budget: Budget,
    /// Uniformly random plies played before the agents take over, the same for every seating
    /// of a seed (so deterministic agents still meet varied positions).
    pub opening_plies: usize,
    /// With more agents than seats (two-player games): the first agent against each other one,
    /// instead of every pair.
    pub gauntlet: bool,
    /// Confidence of the score and Elo intervals (0.95 by default).
    pub confidence: f64,
    /// The agent rated 0 Elo: a spec among the agents (or its label, `random#2`, when a spec
    /// appears twice); default `random` if present, else the first agent.
    pub anchor: Option<String>,
    /// Stop as soon as this test decides (two agents); `games` is then the most played.
    pub sprt: Option<ratings::Sprt>,
}

/// The settings that decide a match's games, stored with every record so that a resumed run
/// can check that it continues the same match (threads and confidence change no game).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatchSettings {
    pub agents: Vec<String>,
    pub games: usize,
    pub gauntlet: bool,
    pub seed: u64,
    pub opening_plies: usize,
    pub move_time_ms: Option<f64>,
    pub move_overhead_ms: Option<f64>,
    pub sprt: Option<ratings::Sprt>,
}

impl MatchSettings {
    /// The first setting in which `self` (from the records) differs from `now`, as a message.
    /// With a single pairing, games keep their seeds and seats whatever the number of games,
    /// so a run may be extended (or its SPRT given more room) with a larger `--games`.
    fn difference(&self, now: &MatchSettings, single_pairing: bool) -> Option<String> {
        let show = |x: &dyn std::fmt::Debug| format!("{x:?}");
        let fields: [(&str, String, String); 8] = [
            ("agents", self.agents.join(" "), now.agents.join(" ")),
            ("--games", self.games.to_string(), now.games.to_string()),
            ("--gauntlet", self.gauntlet.to_string(), now.gauntlet.to_string()),
            ("--seed", self.seed.to_string(), now.seed.to_string()),
            ("--opening-plies", self.opening_plies.to_string(), now.opening_plies.to_string()),
            ("--move-time (ms)", show(&self.move_time_ms), show(&now.move_time_ms)),
            ("--move-overhead (ms)", show(&self.move_overhead_ms), show(&now.move_overhead_ms)),
            ("--sprt", show(&self.sprt), show(&now.sprt)),
        ];
        fields
            .into_iter()
            .filter(|(what, _, _)| !(single_pairing && *what == "--games"))
            .find(|(_, a, b)| a != b)
            .map(|(what, a, b)| format!("the records were made with {what} {a}, this run has {b}"))
    }
}

impl MatchConfig {
    /// A plain match of `agents` (one per seat, or a round robin), other options at defaults.
    pub fn new(agents: Vec<String>, games: usize, seed: u64) -> Self {
        MatchConfig {
            agents,
            games,
            seed,
            threads: None,
            budget: Budget::UNLIMITED,
            opening_plies: 0,
            gauntlet: false,
            confidence: 0.95,
            anchor: None,
            sprt: None,
        }
    }

    /// The settings that decide the games.
    pub fn settings(&self) -> MatchSettings {
        let ms = |d: Option<std::time::Duration>| d.map(|d| d.as_secs_f64() * 1e3);
        MatchSettings {
            agents: self.agents.clone(),
            games: self.games,
            gauntlet: self.gauntlet,
            seed: self.seed,
            opening_plies: self.opening_plies,
            move_time_ms: ms(self.budget.time),
            move_overhead_ms: ms(self.budget.overhead),
            sprt: self.sprt,
        }
    }

    /// A name for each agent: its spec, with `#k` added where the same spec plays more than
    /// once (`random#1`, `random#2`), so tables, ratings and plots tell them apart.
    pub fn labels(&self) -> Vec<String> {
        agent_labels(&self.agents)
    }
}

/// Names for agents given by spec: the spec, with `#k` (k from 1) added where it repeats.
pub fn agent_labels(agents: &[String]) -> Vec<String> {
    agents
        .iter()
        .enumerate()
        .map(|(i, a)| {
            if agents.iter().filter(|b| *b == a).count() == 1 {
                a.clone()
            } else {
                format!("{a}#{}", agents[..=i].iter().filter(|b| *b == a).count())
            }
        })
        .collect()
}

/// One finished game.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PlayedGame {
    /// Index in the match, `0..games`.
    pub index: usize,
    /// `seating[seat]` is the index of the agent in that seat.
    pub seating: Vec<usize>,
    /// The replayable record (agents in seat order).
    #[serde(flatten)]
    pub record: GameRecord,
    /// Milliseconds each player action took, in order (chance outcomes excluded).
    pub move_ms: Vec<f64>,
    /// Seat of each player action, parallel to `move_ms`.
    pub move_seats: Vec<usize>,
    /// The settings of the match it belongs to (checked when a run resumes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<MatchSettings>,
    /// A checksum of the line it was written as ([`PlayedGame::to_line`]): a record corrupted
    /// or edited after it was written is refused when a run resumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
}

impl PlayedGame {
    /// The game as one line of a records file (JSON, without a newline), with its checksum.
    pub fn to_line(&self) -> String {
        let mut g = self.clone();
        g.check = None;
        g.check = Some(checksum(&serde_json::to_string(&g).expect("records serialise")));
        serde_json::to_string(&g).expect("records serialise")
    }

    /// Reads one line of a records file, refusing one whose checksum does not match (or that has
    /// none: written before records had one, or not by meeple).
    pub fn from_line(line: &str) -> Result<Self, Error> {
        let mut g: PlayedGame =
            serde_json::from_str(line).map_err(|e| Error::Record(format!("not a game record: {e}")))?;
        let Some(check) = g.check.take() else {
            return Err(Error::Record(format!(
                "game {} has no checksum: not a record this meeple wrote; start again with --force",
                g.index
            )));
        };
        if checksum(&serde_json::to_string(&g).expect("records serialise")) != check {
            return Err(Error::Record(format!(
                "game {} does not match its checksum: the line was changed after it was written",
                g.index
            )));
        }
        g.check = Some(check);
        Ok(g)
    }
}

/// FNV-1a over the bytes, as 16 hex digits: stable across machines and versions.
fn checksum(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in text.as_bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Per-agent totals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentSummary {
    /// The agent's name in this match: its spec, with `#k` where the same spec plays twice.
    #[serde(default)]
    pub name: String,
    /// The agent's spec as given.
    pub spec: String,
    /// Games it finished strictly ahead of every other player.
    pub wins: u64,
    /// Games it shared the best result.
    pub draws: u64,
    /// Games another player finished ahead of it.
    pub losses: u64,
    /// (wins + draws/2) / games.
    pub score: f64,
    /// 95% Wilson interval of the score.
    pub ci95: [f64; 2],
    /// Wilson interval at the match's `confidence`.
    pub ci: [f64; 2],
    /// Maximum-likelihood Elo, anchored at 0 (two-player games).
    pub elo: Option<f64>,
    /// Elo interval at the match's `confidence`.
    pub elo_ci: Option<[f64; 2]>,
    /// Mean wall time per move, milliseconds.
    pub mean_move_ms: f64,
    /// Longest move, milliseconds.
    pub max_move_ms: f64,
    /// 99th percentile of move times, milliseconds.
    pub p99_move_ms: f64,
    /// The agent's time budget per move, if it has one (its `time=` option or `--move-time`,
    /// whichever is smaller), milliseconds.
    pub budget_ms: Option<f64>,
    /// Moves that took longer than `budget_ms`.
    pub over_budget: u64,
}

/// The result of a match.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatchSummary {
    /// Canonical game spec.
    pub game: String,
    /// Games played.
    pub games: usize,
    /// Base seed.
    pub seed: u64,
    /// Confidence of `ci` and `elo_ci`.
    pub confidence: f64,
    /// The agent rated 0 Elo (its name).
    pub anchor: Option<String>,
    /// `--move-overhead`: how long before its time each timed search stopped, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub move_overhead_ms: Option<f64>,
    /// One entry per agent, in the order given.
    pub agents: Vec<AgentSummary>,
    /// Head-to-head results of each pair that met (two-player games), from `a`'s side.
    pub pairwise: Vec<PairwiseSummary>,
    /// The SPRT's outcome, in `--sprt` mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sprt: Option<SprtReport>,
    /// Per-game means of the game's own figures (Catan: `dice_rolls`, `turns`), over the games
    /// that finished: `[mean, standard deviation]`.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub metrics: std::collections::BTreeMap<String, [f64; 2]>,
}

/// Results of agent `a` against agent `b` (by name).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairwiseSummary {
    pub a: String,
    pub b: String,
    pub wins: u64,
    pub draws: u64,
    pub losses: u64,
    pub score: f64,
    pub ci: [f64; 2],
}

/// The seatings each seed is played in: every ordering of `n` agents over `n` seats up to four
/// players (at most 24); from five players, the `n` rotations, a balanced subset in which every
/// agent sits in every seat exactly once.
pub fn seatings(n: usize) -> Vec<Vec<usize>> {
    if n >= 5 {
        return (0..n).map(|r| (0..n).map(|seat| (seat + r) % n).collect()).collect();
    }
    fn extend(prefix: &mut Vec<usize>, n: usize, out: &mut Vec<Vec<usize>>) {
        if prefix.len() == n {
            out.push(prefix.clone());
            return;
        }
        for a in 0..n {
            if !prefix.contains(&a) {
                prefix.push(a);
                extend(prefix, n, out);
                prefix.pop();
            }
        }
    }
    let mut out = Vec::new();
    extend(&mut Vec::with_capacity(n), n, &mut out);
    out
}

/// The groups of agents that meet: all agents at once when they fill the seats; for
/// two-player games with more agents, every pair (round robin) or the first against each other
/// one (gauntlet).
pub fn pairings(players: usize, config: &MatchConfig) -> Vec<Vec<usize>> {
    let k = config.agents.len();
    if k == players || players != 2 {
        return vec![(0..k).collect()];
    }
    if config.gauntlet {
        return (1..k).map(|j| vec![0, j]).collect();
    }
    (0..k).flat_map(|i| (i + 1..k).map(move |j| vec![i, j])).collect()
}

/// Games a match plays: `games` for every pairing.
pub fn total_games(players: usize, config: &MatchConfig) -> usize {
    pairings(players, config).len() * config.games
}

/// Checks a match configuration against a game before anything is played: agent count, game
/// count, threads, every agent spec (so a typo fails at once, not after hours), the memory the
/// agents take in the games played at once, and that a random opening of the asked length can
/// leave a game to play.
pub fn validate<G: Game>(game: &G, config: &MatchConfig) -> Result<(), Error> {
    let n = game.num_players();
    let k = config.agents.len();
    if k != n && !(n == 2 && k > 2) {
        return Err(Error::Invalid(format!(
            "{} has {n} seats: give {n} agent specs{}, not {k}",
            game.spec(),
            if n == 2 { " (or more, for a round robin)" } else { "" }
        )));
    }
    if !(config.confidence > 0.0 && config.confidence < 1.0) {
        return Err(Error::Invalid(format!("--confidence {} must be between 0 and 1, like 0.95", config.confidence)));
    }
    if let Some(anchor) = &config.anchor
        && anchor_index(config, anchor).is_none()
    {
        return Err(Error::Invalid(format!(
            "--anchor '{anchor}' is not one of the agents: {}",
            config.labels().join(", ")
        )));
    }
    let per_seed = seatings(n).len();
    if config.games == 0 || !config.games.is_multiple_of(per_seed) {
        return Err(Error::Invalid(format!(
            "--games {} must be a positive multiple of {per_seed}: each seed is played in all {per_seed} seatings",
            config.games
        )));
    }
    let groups = pairings(n, config);
    if config.games > limits::MAX_GAMES || groups.len() * config.games > limits::MAX_GAMES {
        return Err(Error::Invalid(format!(
            "--games {} over {} pairings is more than the limit of {} games in one match (split it into runs \
             with other --seed values)",
            config.games,
            groups.len(),
            limits::MAX_GAMES
        )));
    }
    if let Some(t) = config.threads {
        limits::check_threads("--threads", t)?;
    }
    if let Some(sprt) = &config.sprt {
        if k != 2 || n != 2 {
            return Err(Error::Invalid("--sprt tests two agents in a two-player game".into()));
        }
        if !(sprt.elo1 > sprt.elo0
            && sprt.elo0.is_finite()
            && sprt.elo1.is_finite()
            && sprt.alpha > 0.0
            && sprt.alpha < 0.5
            && sprt.beta > 0.0
            && sprt.beta < 0.5)
        {
            return Err(Error::Invalid("--sprt needs finite elo0 < elo1 and alpha, beta in (0, 0.5)".into()));
        }
    }
    let mut memory = Vec::with_capacity(k);
    for spec in &config.agents {
        memory.push(make_agent(game, spec, 0)?.memory_bytes());
    }
    // Every game holds its seated agents' tables; as many games run at once as there are
    // worker threads.
    let per_game = groups.iter().map(|g| g.iter().map(|&a| memory[a]).sum::<u64>()).max().unwrap_or(0);
    let at_once = config.threads.unwrap_or_else(limits::cores).min(groups.len() * config.games) as u64;
    let needed = per_game.saturating_mul(at_once);
    let allowed = limits::memory() / 4 * 3;
    if needed > allowed {
        return Err(Error::Invalid(format!(
            "the agents' tables need about {} ({} per game, {at_once} games at once), more than the {} this machine \
             can spare (three quarters of {}): give a smaller tt= or fewer --threads",
            limits::format_bytes(needed),
            limits::format_bytes(per_game),
            limits::format_bytes(allowed),
            limits::format_bytes(limits::memory())
        )));
    }
    if config.opening_plies > 0 {
        random_opening(game, config, derive_seed(config.seed, 0))?;
    }
    Ok(())
}

/// The agent `anchor` names: a label (`random#2`) or a spec (its first occurrence).
fn anchor_index(config: &MatchConfig, anchor: &str) -> Option<usize> {
    let labels = config.labels();
    labels.iter().position(|l| l == anchor).or_else(|| config.agents.iter().position(|a| a == anchor))
}

/// Random openings tried per seed before giving up: an opening that ends the game is drawn
/// again, so no game is decided before the agents move.
const OPENING_TRIES: u64 = 100;

/// The state after the random opening of a seed, the actions that reached it, and the chance
/// generator to go on with. The same for every seating of the seed. An opening that ends the
/// game is drawn again (from the next stream of the seed); an error if every try ends it.
fn random_opening<G: Game>(
    game: &G,
    config: &MatchConfig,
    seed: u64,
) -> Result<(G::State, Vec<String>, meeple_game::Rng), Error> {
    let (mut outcomes, mut legal) = (Vec::new(), Vec::new());
    for attempt in 0..OPENING_TRIES {
        let mut chance_rng = rng_from_seed(derive_seed(seed, 0));
        let mut opening_rng = rng_from_seed(derive_seed(seed, (1 << 32) + attempt));
        let mut state = game.initial_state();
        let mut actions = Vec::new();
        let mut plies = 0;
        while plies < config.opening_plies {
            let action = match state.turn() {
                Turn::Terminal => break,
                Turn::Chance => {
                    state.chance_outcomes(&mut outcomes);
                    sample_chance(&outcomes, &mut chance_rng)
                }
                Turn::Player(_) => {
                    plies += 1;
                    state.legal_actions(&mut legal);
                    legal[rand::RngExt::random_range(&mut opening_rng, 0..legal.len())]
                }
            };
            actions.push(state.action_to_string(action));
            state.apply_unchecked(action);
        }
        if state.turn() != Turn::Terminal {
            return Ok((state, actions, chance_rng));
        }
    }
    Err(Error::Invalid(format!(
        "--opening-plies {}: {OPENING_TRIES} random openings of {} all ended the game before the agents moved; \
         give fewer plies",
        config.opening_plies,
        game.spec()
    )))
}

/// Where game `index` of a match sits: `seating[seat]` is the agent in that seat, and the seed.
/// Pairing `index / games`; within it, game `j = index % games` has seed
/// `derive_seed(base, j / seatings)` and seating `j % seatings`.
fn game_slot(players: usize, config: &MatchConfig, index: usize) -> (Vec<usize>, u64) {
    let all = seatings(players);
    let groups = pairings(players, config);
    let group = &groups[index / config.games];
    let j = index % config.games;
    let seating = all[j % all.len()].iter().map(|&i| group[i]).collect();
    (seating, derive_seed(config.seed, (j / all.len()) as u64))
}

/// Plays game `index` of a match, seated and seeded by [`game_slot`], so every pairing plays
/// the same seeds (common random numbers across the whole tournament).
pub fn play_game<G: Game>(game: &G, config: &MatchConfig, index: usize) -> Result<PlayedGame, Error> {
    let (seating, seed) = game_slot(game.num_players(), config, index);
    let mut agents = Vec::with_capacity(seating.len());
    for &a in &seating {
        // An agent's randomness follows the agent, not the seat, so paired games differ only
        // in who sits where.
        agents.push(make_agent(game, &config.agents[a], derive_seed(seed, 1 + a as u64))?);
    }
    let (mut state, mut actions, mut chance_rng) = random_opening(game, config, seed)?;
    let mut outcomes = Vec::new();
    let (mut move_ms, mut move_seats) = (Vec::new(), Vec::new());
    loop {
        let action = match state.turn() {
            Turn::Terminal => break,
            Turn::Chance => {
                state.chance_outcomes(&mut outcomes);
                sample_chance(&outcomes, &mut chance_rng)
            }
            Turn::Player(seat) => {
                let start = Instant::now();
                let action = agents[seat].act(&state, &config.budget)?;
                move_ms.push(start.elapsed().as_secs_f64() * 1e3);
                move_seats.push(seat);
                if !state.is_legal(action) {
                    return Err(Error::Agent {
                        agent: config.agents[seating[seat]].clone(),
                        reason: format!("chose an illegal move: {}", state.illegal_reason(action)),
                    });
                }
                action
            }
        };
        actions.push(state.action_to_string(action));
        state.apply_unchecked(action);
    }
    let record = GameRecord {
        game: game.spec().to_string(),
        seed,
        agents: seating.iter().map(|&a| config.agents[a].clone()).collect(),
        actions,
        returns: state.returns().map(|r| r.to_vec()),
        scores: state.scores().to_vec(),
        metrics: state.metrics().into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
    };
    Ok(PlayedGame { index, seating, record, move_ms, move_seats, settings: Some(config.settings()), check: None })
}

/// Plays the whole match in parallel. `on_game` sees each game as it finishes (in any order;
/// use it for progress and records); the summary is the same for any thread count.
pub fn run_match<G: Game>(
    game: &G,
    config: &MatchConfig,
    on_game: impl Fn(&PlayedGame) + Sync,
) -> Result<(MatchSummary, Vec<PlayedGame>), Error> {
    run_match_from(game, config, Vec::new(), on_game)
}

/// Like [`run_match`], keeping the games in `done` (read back from a records file) and playing
/// only the missing ones. Each kept game must be the game its index would produce: made with
/// the same settings, in the same seat and seed, and it must replay move by move through the
/// rules to the returns it claims; otherwise this is an error naming what differs.
///
/// With [`MatchConfig::sprt`] games are played in batches of [`SPRT_BATCH`] until the test
/// decides; kept games count toward the batches they belong to.
pub fn run_match_from<G: Game>(
    game: &G,
    config: &MatchConfig,
    done: Vec<PlayedGame>,
    on_game: impl Fn(&PlayedGame) + Sync,
) -> Result<(MatchSummary, Vec<PlayedGame>), Error> {
    validate(game, config)?;
    let total = total_games(game.num_players(), config);
    let mut have = vec![false; total];
    let settings = config.settings();
    for g in &done {
        check_resumed(game, config, &settings, g, total)?;
        if std::mem::replace(&mut have[g.index], true) {
            return Err(Error::Record(format!("game {} appears twice in the records", g.index)));
        }
    }
    let Some(sprt) = config.sprt else {
        let missing: Vec<usize> = (0..total).filter(|&i| !have[i]).collect();
        let mut played = done;
        played.extend(play_indices(game, config, &missing, &on_game)?);
        played.sort_by_key(|g| g.index);
        return Ok((summarize(game.spec().to_string(), game.num_players(), config, &played), played));
    };
    let mut kept: std::collections::BTreeMap<usize, PlayedGame> = done.into_iter().map(|g| (g.index, g)).collect();
    let mut played = Vec::new();
    let mut decision = ratings::SprtDecision::Continue;
    let mut start = 0;
    while start < config.games && decision == ratings::SprtDecision::Continue {
        let end = (start + SPRT_BATCH).min(config.games);
        let missing: Vec<usize> = (start..end).filter(|&i| !have[i]).collect();
        played.extend((start..end).filter_map(|i| kept.remove(&i)));
        played.extend(play_indices(game, config, &missing, &on_game)?);
        start = end;
        let s = summarize(game.spec().to_string(), 2, config, &played);
        let a = &s.agents[0];
        decision = sprt.decide(a.wins as f64, a.draws as f64, a.losses as f64);
    }
    played.sort_by_key(|g| g.index);
    let mut summary = summarize(game.spec().to_string(), 2, config, &played);
    let a = &summary.agents[0];
    let (lower, upper) = sprt.bounds();
    summary.sprt = Some(SprtReport {
        elo0: sprt.elo0,
        elo1: sprt.elo1,
        alpha: sprt.alpha,
        beta: sprt.beta,
        llr: sprt.llr(a.wins as f64, a.draws as f64, a.losses as f64),
        lower,
        upper,
        decision: match decision {
            ratings::SprtDecision::AcceptH1 => "H1",
            ratings::SprtDecision::AcceptH0 => "H0",
            ratings::SprtDecision::Continue => "inconclusive",
        }
        .into(),
    });
    Ok((summary, played))
}

/// Checks a game read back from a records file before a resumed run counts it: its settings,
/// slot (seed, seating, agents), and a replay through the rules to the returns it claims.
fn check_resumed<G: Game>(
    game: &G,
    config: &MatchConfig,
    settings: &MatchSettings,
    g: &PlayedGame,
    total: usize,
) -> Result<(), Error> {
    let i = g.index;
    let mismatch = |what: &str| {
        Error::Record(format!("game {i} in the records has another {what}: the records were made with other arguments"))
    };
    if i >= total {
        return Err(Error::Record(format!("game {i} is beyond this match's {total} games")));
    }
    match &g.settings {
        None => {
            return Err(Error::Record(format!(
                "game {i} in the records carries no match settings (written by an older meeple), so it cannot be \
                 checked; start again with --force"
            )));
        }
        Some(s) => {
            let single = pairings(game.num_players(), config).len() == 1;
            if let Some(diff) = s.difference(settings, single) {
                return Err(Error::Record(format!("game {i}: {diff}")));
            }
        }
    }
    if g.record.game != game.spec().to_string() {
        return Err(mismatch("game"));
    }
    let (seating, seed) = game_slot(game.num_players(), config, i);
    if g.seating != seating || g.record.agents != seating.iter().map(|&a| config.agents[a].clone()).collect::<Vec<_>>()
    {
        return Err(mismatch("seating or agents"));
    }
    if g.record.seed != seed {
        return Err(mismatch("seed"));
    }
    if g.record.returns.is_none() {
        return Err(Error::Record(format!("game {i} in the records did not finish")));
    }
    if g.record.scores.is_empty() {
        return Err(Error::Record(format!("game {i} in the records has no scores: not a record meeple wrote")));
    }
    let states = meeple_game::replay(game, &g.record).map_err(|e| {
        let why = match e {
            Error::Record(why) => why,
            other => other.to_string(),
        };
        Error::Record(format!("game {i} in the records does not replay: {why}"))
    })?;
    let agent_moves = states.iter().filter(|s| matches!(s.turn(), Turn::Player(_))).count();
    let timed = g.move_ms.len();
    if timed != g.move_seats.len()
        || timed + config.opening_plies != agent_moves
        || g.move_seats.iter().any(|&s| s >= game.num_players())
        || g.move_ms.iter().any(|&ms| !(ms.is_finite() && ms >= 0.0))
    {
        return Err(Error::Record(format!(
            "game {i} in the records has move times that do not fit its {agent_moves} moves"
        )));
    }
    Ok(())
}

fn play_indices<G: Game>(
    game: &G,
    config: &MatchConfig,
    indices: &[usize],
    on_game: &(impl Fn(&PlayedGame) + Sync),
) -> Result<Vec<PlayedGame>, Error> {
    if indices.is_empty() {
        return Ok(Vec::new());
    }
    // Plain threads taking the next game from a counter, not a rayon pool: an agent that
    // computes on rayon itself (a network's inference pool, burn) would otherwise let the
    // waiting worker steal a whole other game in the middle of a move, and that move would
    // take the length of a game.
    let threads = config.threads.unwrap_or_else(limits::cores).clamp(1, indices.len());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failed = std::sync::atomic::AtomicBool::new(false);
    let results: Vec<std::sync::Mutex<Option<Result<PlayedGame, Error>>>> =
        indices.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let worker = || {
        use std::sync::atomic::Ordering;
        while !failed.load(Ordering::Relaxed) {
            let k = next.fetch_add(1, Ordering::Relaxed);
            let Some(&i) = indices.get(k) else { break };
            let r = play_game(game, config, i);
            match &r {
                Ok(g) => on_game(g),
                Err(_) => failed.store(true, Ordering::Relaxed),
            }
            *results[k].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
        }
    };
    std::thread::scope(|scope| -> Result<(), Error> {
        for t in 0..threads {
            std::thread::Builder::new()
                .name(format!("meeple-arena-{t}"))
                .spawn_scoped(scope, worker)
                .map_err(|e| Error::Invalid(format!("cannot start worker threads: {e}")))?;
        }
        Ok(())
    })?;
    let mut games = Vec::with_capacity(indices.len());
    for r in results {
        match r.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(Ok(g)) => games.push(g),
            Some(Err(e)) => return Err(e),
            // Not played because another game failed first: that error is returned above or
            // below in index order.
            None => {}
        }
    }
    if games.len() < indices.len() {
        return Err(Error::Invalid("a game failed and the match stopped".into()));
    }
    Ok(games)
}

/// How an SPRT match ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SprtReport {
    pub elo0: f64,
    pub elo1: f64,
    pub alpha: f64,
    pub beta: f64,
    /// Log-likelihood ratio at the end.
    pub llr: f64,
    pub lower: f64,
    pub upper: f64,
    /// `H1` (the first agent is at least `elo1` stronger), `H0`, or `inconclusive` (the game
    /// limit came first).
    pub decision: String,
}

/// Games an SPRT plays between looks at the result: fixed, so the stopping point does not
/// depend on the thread count.
pub const SPRT_BATCH: usize = 16;

/// A two-agent match that stops as soon as `sprt` decides, or after `config.games` games.
pub fn run_sprt<G: Game>(
    game: &G,
    config: &MatchConfig,
    sprt: ratings::Sprt,
    on_game: impl Fn(&PlayedGame) + Sync,
) -> Result<(MatchSummary, Vec<PlayedGame>), Error> {
    run_match_from(game, &MatchConfig { sprt: Some(sprt), ..config.clone() }, Vec::new(), on_game)
}

/// The result for the player in `seat`: 0 a win (strictly ahead of every other player), 1 a
/// draw (sharing the best return), 2 a loss.
pub fn outcome(returns: &[f64], seat: usize) -> usize {
    let mine = returns[seat];
    let best_other = returns.iter().enumerate().filter(|&(s, _)| s != seat).map(|(_, &r)| r).fold(f64::MIN, f64::max);
    if mine > best_other {
        0
    } else if mine == best_other {
        1
    } else {
        2
    }
}

/// The per-move time an agent is held to: its own `time=` option and the match's move time,
/// whichever is smaller.
fn agent_budget(spec: &str, budget: &Budget) -> Option<std::time::Duration> {
    budget.time_for(
        spec.parse::<meeple_game::Spec>().ok().and_then(|s| s.get("time").and_then(meeple_game::parse_duration)),
    )
}

/// Totals per agent, pairwise results and Elo from finished games (in any order).
pub fn summarize(game: String, players: usize, config: &MatchConfig, played: &[PlayedGame]) -> MatchSummary {
    let n = config.agents.len();
    let labels = config.labels();
    let z = ratings::z_for_confidence(config.confidence);
    let mut wdl = vec![[0u64; 3]; n];
    let mut pair = vec![vec![[0u64; 3]; n]; n];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); n];
    for g in played {
        let Some(returns) = &g.record.returns else { continue };
        for (seat, &agent) in g.seating.iter().enumerate() {
            let k = outcome(returns, seat);
            wdl[agent][k] += 1;
            if players == 2 {
                pair[agent][g.seating[1 - seat]][k] += 1;
            }
        }
        for (&ms, &seat) in g.move_ms.iter().zip(&g.move_seats) {
            times[g.seating[seat]].push(ms);
        }
    }
    let score_of = |[w, d, l]: [u64; 3]| {
        let total = (w + d + l) as f64;
        if total > 0.0 { (w as f64 + 0.5 * d as f64) / total } else { 0.0 }
    };
    let mut pairwise = Vec::new();
    let mut table = Vec::new();
    for (a, row) in pair.iter().enumerate() {
        for (b, &[w, d, l]) in row.iter().enumerate().skip(a + 1) {
            if w + d + l == 0 {
                continue;
            }
            let score = score_of([w, d, l]);
            let (lo, hi) = wilson(score, (w + d + l) as f64, z);
            pairwise.push(PairwiseSummary {
                a: labels[a].clone(),
                b: labels[b].clone(),
                wins: w,
                draws: d,
                losses: l,
                score,
                ci: [lo, hi],
            });
            table.push(ratings::Pairing { a, b, wins: w as f64, draws: d as f64, losses: l as f64 });
        }
    }
    let anchor = match &config.anchor {
        Some(a) => anchor_index(config, a),
        None => config.agents.iter().position(|x| x == "random").or(Some(0)),
    };
    let fit = (players == 2 && n >= 2).then(|| ratings::fit_elo(n, &table, anchor.unwrap_or(0), z));
    let agents = (0..n)
        .map(|a| {
            let [wins, draws, losses] = wdl[a];
            let total = (wins + draws + losses) as f64;
            let score = score_of(wdl[a]);
            let (lo, hi) = wilson(score, total, Z95);
            let (clo, chi) = wilson(score, total, z);
            let t = &mut times[a];
            t.sort_unstable_by(f64::total_cmp);
            let budget_ms = agent_budget(&config.agents[a], &config.budget).map(|d| d.as_secs_f64() * 1e3);
            AgentSummary {
                name: labels[a].clone(),
                spec: config.agents[a].clone(),
                wins,
                draws,
                losses,
                score,
                ci95: [lo, hi],
                ci: [clo, chi],
                elo: fit.as_ref().map(|f| f.elo[a]),
                elo_ci: fit.as_ref().map(|f| f.interval[a]),
                mean_move_ms: if t.is_empty() { 0.0 } else { t.iter().sum::<f64>() / t.len() as f64 },
                max_move_ms: t.last().copied().unwrap_or(0.0),
                p99_move_ms: t.get(((t.len() as f64 * 0.99).ceil() as usize).saturating_sub(1)).copied().unwrap_or(0.0),
                budget_ms,
                over_budget: budget_ms.map_or(0, |b| t.iter().filter(|&&x| x > b).count() as u64),
            }
        })
        .collect();
    MatchSummary {
        game,
        games: played.len(),
        seed: config.seed,
        confidence: config.confidence,
        move_overhead_ms: config.budget.overhead.map(|d| d.as_secs_f64() * 1e3),
        anchor: fit.as_ref().and(anchor).map(|a| labels[a].clone()),
        agents,
        pairwise,
        sprt: None,
        metrics: metric_means(played),
    }
}

/// Mean and standard deviation of each game metric over the finished games.
fn metric_means(played: &[PlayedGame]) -> std::collections::BTreeMap<String, [f64; 2]> {
    let mut values: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for g in played.iter().filter(|g| g.record.returns.is_some()) {
        for (k, &v) in &g.record.metrics {
            values.entry(k.clone()).or_default().push(v);
        }
    }
    values
        .into_iter()
        .map(|(k, v)| {
            let n = v.len() as f64;
            let mean = v.iter().sum::<f64>() / n;
            let var = if v.len() > 1 { v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
            (k, [mean, var.sqrt()])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use meeple_games::{Connect4, TicTacToe};

    fn config(agents: &[&str], games: usize, threads: Option<usize>) -> MatchConfig {
        MatchConfig { threads, ..MatchConfig::new(agents.iter().map(|s| s.to_string()).collect(), games, 7) }
    }

    #[test]
    fn seatings_are_all_permutations() {
        assert_eq!(seatings(2), vec![vec![0, 1], vec![1, 0]]);
        assert_eq!(seatings(3).len(), 6);
        assert_eq!(seatings(4).len(), 24);
        // Five and more: rotations, each agent once in each seat.
        for n in [5, 6] {
            let s = seatings(n);
            assert_eq!(s.len(), n);
            for seat in 0..n {
                let mut who: Vec<usize> = s.iter().map(|p| p[seat]).collect();
                who.sort_unstable();
                assert_eq!(who, (0..n).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn multiplayer_matches_rotate_every_seating_with_the_same_dice() {
        // Three-player dice: each seed in all 6 seatings, with identical dice rolls each time.
        let game = meeple_game::testing::Dice { players: 3, bug: meeple_game::testing::Bug::None };
        let (s, games) = run_match(&game, &config(&["random", "random", "first"], 12, None), |_| {}).unwrap();
        assert_eq!(games.len(), 12);
        let first_seed: Vec<&PlayedGame> = games.iter().filter(|g| g.record.seed == games[0].record.seed).collect();
        assert_eq!(first_seed.len(), 6);
        let dice = |g: &PlayedGame| g.record.actions[..3].to_vec();
        assert!(first_seed.iter().all(|g| dice(g) == dice(first_seed[0])), "common random numbers");
        assert!(s.pairwise.is_empty() && s.agents[0].elo.is_none(), "no pairwise Elo for three players");
        assert_eq!(s.agents.iter().map(|a| a.wins + a.draws + a.losses).collect::<Vec<_>>(), vec![12, 12, 12]);
    }

    #[test]
    fn same_seed_same_results_for_any_thread_count() {
        let game = Connect4::default();
        let (one, g1) = run_match(&game, &config(&["first", "random"], 60, Some(1)), |_| {}).unwrap();
        let (two, g2) = run_match(&game, &config(&["first", "random"], 60, Some(2)), |_| {}).unwrap();
        let counts = |s: &MatchSummary| s.agents.iter().map(|a| (a.wins, a.draws, a.losses)).collect::<Vec<_>>();
        assert_eq!(counts(&one), counts(&two));
        let records = |g: &[PlayedGame]| g.iter().map(|g| g.record.clone()).collect::<Vec<_>>();
        assert_eq!(records(&g1), records(&g2));
        for a in &one.agents {
            assert_eq!(a.wins + a.draws + a.losses, 60);
        }
        // Paired seats: each seed appears twice, with the agents swapped.
        assert_eq!(g1[0].record.seed, g1[1].record.seed);
        assert_eq!(g1[0].record.agents, vec!["first", "random"]);
        assert_eq!(g1[1].record.agents, vec!["random", "first"]);
        assert_ne!(g1[0].record.seed, g1[2].record.seed);
    }

    #[test]
    fn results_are_counted_from_returns() {
        // first vs first at tic-tac-toe: X fills a3 b3 c3 in seven plies and always wins.
        let (s, games) = run_match(&TicTacToe, &config(&["first", "first"], 4, None), |_| {}).unwrap();
        assert!(games.iter().all(|g| g.record.returns == Some(vec![1.0, 0.0])));
        // Both agents are "first": each sits as X in half the games.
        assert_eq!((s.agents[0].wins, s.agents[0].losses), (2, 2));
        assert_eq!(s.agents[0].score, 0.5);
        // Records replay.
        for g in &games {
            meeple_game::replay(&TicTacToe, &g.record).unwrap();
        }
    }

    #[test]
    fn first_beats_random_at_connect_four() {
        // "first" stacks column 1 and wins with a vertical four unless random happens to block
        // it, so it scores about 3/4; the interval must exclude an even match.
        let (s, _) = run_match(&Connect4::default(), &config(&["random", "first"], 200, None), |_| {}).unwrap();
        let r = &s.agents[0];
        assert!(r.ci95[1] < 0.5, "first should beat random: {r:?}");
        assert_eq!(s.agents[1].wins, r.losses);
        assert!(r.ci95[0] <= r.score && r.score <= r.ci95[1]);
    }

    #[test]
    fn round_robin_rates_agents_in_the_right_order() {
        let game = Connect4::default();
        let agents = ["random", "first", "mcts:iters=300"];
        let (s, games) = run_match(&game, &config(&agents, 40, None), |_| {}).unwrap();
        assert_eq!(games.len(), 3 * 40, "every pair plays 40 games");
        assert_eq!(s.pairwise.len(), 3);
        let elo: Vec<f64> = s.agents.iter().map(|a| a.elo.unwrap()).collect();
        assert_eq!(elo[0], 0.0, "random is the anchor");
        assert_eq!(s.anchor.as_deref(), Some("random"));
        assert!(elo[2] > elo[1] && elo[1] > elo[0], "{elo:?}");
        for a in &s.agents {
            assert_eq!(a.wins + a.draws + a.losses, 80, "each agent meets two others");
        }
        // Pairwise counts agree with per-agent totals.
        let mcts_wins: u64 = s.pairwise.iter().filter(|p| p.b == "mcts:iters=300").map(|p| p.losses).sum::<u64>()
            + s.pairwise.iter().filter(|p| p.a == "mcts:iters=300").map(|p| p.wins).sum::<u64>();
        assert_eq!(mcts_wins, s.agents[2].wins);
        // A gauntlet plays only the first agent's pairs.
        let g = MatchConfig { gauntlet: true, ..config(&agents, 10, None) };
        let (gs, _) = run_match(&game, &g, |_| {}).unwrap();
        assert_eq!(gs.games, 20);
    }

    #[test]
    fn move_times_are_measured_against_budgets() {
        let game = Connect4::default();
        let c = MatchConfig {
            budget: Budget::time(std::time::Duration::from_millis(50)),
            ..config(&["mcts:time=5ms", "random"], 4, None)
        };
        let (s, _) = run_match(&game, &c, |_| {}).unwrap();
        let m = &s.agents[0];
        assert_eq!(m.budget_ms, Some(5.0));
        assert!(m.mean_move_ms > 1.0 && m.mean_move_ms <= m.p99_move_ms + 1e-9 && m.p99_move_ms <= m.max_move_ms);
        assert_eq!(s.agents[1].budget_ms, Some(50.0));
        assert_eq!(s.agents[1].over_budget, 0, "random never needs 50 ms");
    }

    #[test]
    fn sprt_stops_early_on_a_clear_difference() {
        let game = Connect4::default();
        let sprt = ratings::Sprt { elo0: 0.0, elo1: 50.0, alpha: 0.05, beta: 0.05 };
        let (s, games) = run_sprt(&game, &config(&["mcts:iters=300", "random"], 1000, None), sprt, |_| {}).unwrap();
        let r = s.sprt.unwrap();
        assert_eq!(r.decision, "H1");
        assert!(games.len() < 1000 && games.len() % SPRT_BATCH == 0, "{} games", games.len());
        assert!(r.llr >= r.upper);
        // Same seed, any thread count: same stopping point.
        let (_, again) = run_sprt(&game, &config(&["mcts:iters=300", "random"], 1000, Some(1)), sprt, |_| {}).unwrap();
        assert_eq!(again.len(), games.len());
    }

    #[test]
    fn resuming_plays_only_the_missing_games() {
        let game = Connect4::default();
        let c = config(&["random", "first"], 20, None);
        let (full, all) = run_match(&game, &c, |_| {}).unwrap();
        // Keep every third game, as if the run had been killed; resume plays the rest.
        let kept: Vec<PlayedGame> = all.iter().filter(|g| g.index % 3 == 0).cloned().collect();
        let played = std::sync::atomic::AtomicUsize::new(0);
        let (resumed, games) = run_match_from(&game, &c, kept.clone(), |_| {
            played.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!(played.into_inner(), 20 - kept.len(), "only the missing games are played");
        assert_eq!(
            games.iter().map(|g| g.index).collect::<Vec<_>>(),
            (0..20).collect::<Vec<_>>(),
            "none lost, none twice"
        );
        let counts = |s: &MatchSummary| s.agents.iter().map(|a| (a.wins, a.draws, a.losses)).collect::<Vec<_>>();
        assert_eq!(counts(&resumed), counts(&full));
        // Records from other arguments are refused.
        let other = config(&["random", "first"], 20, None);
        let other = MatchConfig { seed: 8, ..other };
        let err = run_match_from(&game, &other, kept.clone(), |_| {}).unwrap_err().to_string();
        assert!(err.contains("game 0: the records were made with --seed 7, this run has 8"), "{err}");
        let mut twice = kept.clone();
        twice.push(kept[0].clone());
        assert!(run_match_from(&game, &c, twice, |_| {}).unwrap_err().to_string().contains("twice"));
    }

    #[test]
    fn bad_configurations_are_refused_before_playing() {
        let game = Connect4::default();
        let err = run_match(&game, &config(&["random"], 10, None), |_| {}).unwrap_err().to_string();
        assert!(err.contains("has 2 seats: give 2 agent specs (or more, for a round robin), not 1"), "{err}");
        let err = run_match(&game, &config(&["random", "first"], 7, None), |_| {}).unwrap_err().to_string();
        assert!(err.contains("multiple of 2"), "{err}");
        let err = run_match(&game, &config(&["random", "bogus"], 10, None), |_| {}).unwrap_err().to_string();
        assert!(err.contains("unknown agent 'bogus'"), "{err}");
    }
}

#[cfg(test)]
mod resume_tests {
    use super::*;
    use meeple_games::{Connect4, TicTacToe};

    fn finished(config: &MatchConfig) -> Vec<PlayedGame> {
        run_match(&Connect4::default(), config, |_| {}).unwrap().1
    }

    fn refusal(config: &MatchConfig, kept: Vec<PlayedGame>) -> String {
        run_match_from(&Connect4::default(), config, kept, |_| {}).unwrap_err().to_string()
    }

    #[test]
    fn resumed_records_are_replayed_and_checked() {
        let c = MatchConfig::new(vec!["random".into(), "first".into()], 10, 3);
        let games = finished(&c);
        let edit = |f: &dyn Fn(&mut PlayedGame)| {
            let mut g = games[0].clone();
            f(&mut g);
            vec![g]
        };
        // Flipped returns, a truncated returns list (once an index out of bounds), illegal moves.
        let flipped = edit(&|g| g.record.returns.as_mut().unwrap().reverse());
        assert!(refusal(&c, flipped).contains("game 0 in the records does not replay: record says returns"));
        let short = edit(&|g| g.record.returns = Some(vec![1.0]));
        assert!(refusal(&c, short).contains("does not replay"));
        let illegal = edit(&|g| g.record.actions = vec!["9".into(), "9".into(), "9".into()]);
        assert!(refusal(&c, illegal).contains("cannot read move '9'"));
        let unfinished = edit(&|g| {
            g.record.actions.pop();
            g.record.returns = None;
        });
        assert!(refusal(&c, unfinished).contains("did not finish"));
        let times = edit(&|g| g.move_ms.push(1.0));
        assert!(refusal(&c, times).contains("move times that do not fit"));
        let seats = edit(&|g| g.move_seats[0] = 7);
        assert!(refusal(&c, seats).contains("move times that do not fit"));
        let old = edit(&|g| g.settings = None);
        assert!(refusal(&c, old).contains("carries no match settings"));
        // Every setting that changes the games is compared.
        let opening = MatchConfig { opening_plies: 2, ..c.clone() };
        assert!(refusal(&opening, games.clone()).contains("made with --opening-plies 0, this run has 2"));
        let timed = MatchConfig { budget: Budget::time(std::time::Duration::from_millis(5)), ..c.clone() };
        assert!(refusal(&timed, games.clone()).contains("--move-time (ms) None, this run has Some(5.0)"));
        let sprt =
            MatchConfig { sprt: Some(ratings::Sprt { elo0: 0.0, elo1: 50.0, alpha: 0.05, beta: 0.05 }), ..c.clone() };
        assert!(refusal(&sprt, games.clone()).contains("--sprt"));
        // A larger --games extends a single pairing: the kept games keep their seeds and seats.
        let more = MatchConfig { games: 20, ..c.clone() };
        let (s, all) = run_match_from(&Connect4::default(), &more, games.clone(), |_| {}).unwrap();
        assert_eq!((s.games, all.len()), (20, 20));
        assert_eq!(
            all[..10].iter().map(|g| &g.record).collect::<Vec<_>>(),
            games.iter().map(|g| &g.record).collect::<Vec<_>>()
        );
    }

    #[test]
    fn an_sprt_resumes_where_it_stopped() {
        let sprt = ratings::Sprt { elo0: 0.0, elo1: 50.0, alpha: 0.05, beta: 0.05 };
        let c = MatchConfig {
            sprt: Some(sprt),
            ..MatchConfig::new(vec!["mcts:iters=300".into(), "random".into()], 1000, 7)
        };
        let (full, all) = run_match(&Connect4::default(), &c, |_| {}).unwrap();
        let kept: Vec<PlayedGame> = all.iter().take(all.len() - 5).cloned().collect();
        let played = std::sync::atomic::AtomicUsize::new(0);
        let (again, games) = run_match_from(&Connect4::default(), &c, kept, |_| {
            played.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!(played.into_inner(), 5, "only the games missing from the records are played");
        assert_eq!(games.len(), all.len());
        assert_eq!(again.sprt, full.sprt);
    }

    #[test]
    fn openings_that_end_the_game_are_drawn_again() {
        // Eight random plies of tic-tac-toe often finish a line; no game may end before the
        // agents move, and every seating of a seed still shares its opening.
        let c = MatchConfig { opening_plies: 8, ..MatchConfig::new(vec!["first".into(), "random".into()], 40, 1) };
        let (_, games) = run_match(&TicTacToe, &c, |_| {}).unwrap();
        assert!(games.iter().all(|g| !g.move_ms.is_empty()), "the agents made a move in every game");
        for pair in games.chunks(2) {
            assert_eq!(pair[0].record.actions[..8], pair[1].record.actions[..8]);
        }
        let nine = MatchConfig { opening_plies: 9, ..c };
        let err = run_match(&TicTacToe, &nine, |_| {}).unwrap_err().to_string();
        assert!(err.contains("--opening-plies 9: 100 random openings of tictactoe all ended the game"), "{err}");
    }

    #[test]
    fn identical_specs_get_distinct_names() {
        let c = MatchConfig::new(vec!["random".into(), "random".into()], 20, 1);
        let (s, _) = run_match(&Connect4::default(), &c, |_| {}).unwrap();
        let names: Vec<&str> = s.agents.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["random#1", "random#2"]);
        assert_eq!(s.anchor.as_deref(), Some("random#1"), "one anchor, not both");
        assert_eq!((s.pairwise[0].a.as_str(), s.pairwise[0].b.as_str()), ("random#1", "random#2"));
        let anchored = MatchConfig { anchor: Some("random#2".into()), ..c };
        let (s, _) = run_match(&Connect4::default(), &anchored, |_| {}).unwrap();
        assert_eq!(s.agents[1].elo, Some(0.0));
        assert_eq!(agent_labels(&["a".into(), "b".into(), "a".into()]), ["a#1", "b", "a#2"]);
    }

    #[test]
    fn limits_are_checked_before_playing() {
        let game = Connect4::default();
        let c = |games: usize| MatchConfig::new(vec!["random".into(), "first".into()], games, 1);
        let err = validate(&game, &c(limits::MAX_GAMES + 2)).unwrap_err().to_string();
        assert!(err.contains("more than the limit of 1000000 games"), "{err}");
        let err = validate(&game, &MatchConfig { threads: Some(65535), ..c(2) }).unwrap_err().to_string();
        assert!(err.contains("--threads 65535: give 1 to"), "{err}");
        // Tables: each under half of the memory, together more than the machine holds.
        let half = limits::max_table_bytes() >> 20;
        let big = format!("alphabeta:depth=1,tt={half}mb");
        let two = MatchConfig { threads: Some(2), ..MatchConfig::new(vec![big.clone(), big], 2, 1) };
        let err = validate(&game, &two).unwrap_err().to_string();
        assert!(err.contains("the agents' tables need about"), "{err}");
    }
}

#[cfg(test)]
mod opening_tests {
    use super::*;
    use meeple_games::Connect4;

    #[test]
    fn random_openings_are_shared_by_both_seatings() {
        let config = MatchConfig {
            threads: Some(1),
            opening_plies: 4,
            ..MatchConfig::new(vec!["first".into(), "first".into()], 8, 3)
        };
        let (_, games) = run_match(&Connect4::default(), &config, |_| {}).unwrap();
        for pair in games.chunks(2) {
            assert_eq!(pair[0].record.actions[..4], pair[1].record.actions[..4], "same opening in both seatings");
        }
        let openings: std::collections::BTreeSet<_> = games.iter().map(|g| g.record.actions[..4].to_vec()).collect();
        assert!(openings.len() >= 3, "seeds give different openings: {openings:?}");
        // The agents' own moves are not counted as opening: times exist only for them.
        assert!(games.iter().all(|g| g.move_ms.len() + 4 == g.record.actions.len()));
    }
}
