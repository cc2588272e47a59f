//! RootStrap and TreeStrap (Veness, Silver, Uther and Blair, "Bootstrapping from game tree
//! search", 2009), as Sarswat et al. trained Santorini's linear evaluators: self-play with meeple's
//! own alpha-beta over a linear evaluator, the weights moved by gradient descent on the squared
//! error between the evaluator's value of a position and what the search found for it.
//!
//! - RootStrap(αβ): each move, the root's weights step toward the root's search value.
//! - TreeStrap(αβ): each move, every node the search valued steps toward its own value, using
//!   the bound alpha-beta proved there (a node that failed low only pulls a value above its upper
//!   bound down, one that failed high only pulls a value below its lower bound up), as in the
//!   paper. The updates of one search are summed, then applied.
//!
//! A proven win or loss in the tree is a target of `±win_value` (the search's own win scores are
//! far beyond any weighted sum): this is where the game's result teaches the weights.

use meeple_game::{Error, Evaluator, Game, State, derive_seed, rng_from_seed};
use meeple_search::alphabeta::{Bound, NodeRecord};
use meeple_search::{AlphaBeta, AlphaBetaConfig};
use rand::RngExt;

/// Which bootstrap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strap {
    Root,
    Tree,
    /// TD-Leaf(λ) (Baxter, Tridgell and Weaver 2000, KnightCap): each player's successive
    /// search values, the game's result last, as temporal differences, each credited to the
    /// features of the principal variation's leaf.
    Leaf,
}

impl Strap {
    pub fn name(self) -> &'static str {
        self.kind().name
    }

    pub fn kind(self) -> &'static crate::run::Kind {
        match self {
            Strap::Root => &ROOTSTRAP,
            Strap::Tree => &TREESTRAP,
            Strap::Leaf => &TDLEAF,
        }
    }
}

/// A bootstrap run's settings; each is the flag of the same name (`--odd-depth`), its doc the
/// flag's help, [`StrapConfig::new`] the defaults.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, clap::Args)]
pub struct StrapConfig {
    /// Which bootstrap: the trainer's name, not a flag.
    #[arg(skip = Strap::Root)]
    pub strap: Strap,
    /// The linear evaluator whose weights are learned (one the game names, e.g. `linear8` or
    /// `linear22` for Santorini).
    #[arg(long)]
    pub eval: String,
    /// Search depth of the self-play alpha-beta (the report: 3).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=12))]
    pub depth: u32,
    /// Every second game searches at this depth instead of --depth. An evaluator whose weights
    /// depend on the side to move (Santorini's `tempo16`) needs an odd and an even depth: TD-Leaf
    /// credits the principal variation's leaf, whose side to move the depth's parity sets.
    #[arg(long, value_name = "DEPTH", value_parser = clap::value_parser!(u32).range(1..=12))]
    pub odd_depth: Option<u32>,
    /// Step size of the weights (summed over a search's nodes for TreeStrap).
    #[arg(long)]
    #[serde(alias = "learning_rate")]
    pub lr: f64,
    /// Uniformly random plies that open each game, so self-play sees varied positions (the same
    /// seed gives the same games).
    #[arg(long)]
    pub opening_plies: usize,
    /// The run's seed: `--seed`.
    #[arg(skip = 1u64)]
    pub seed: u64,
    /// The target of a position the search proved won (lost: its negation); the hand weights'
    /// values stay within a few units.
    #[arg(long)]
    pub win_value: f64,
    /// TreeStrap: update the nodes the search proved won or lost too (off: only the root's
    /// proven value teaches). The search never asks the evaluator about a position it can
    /// prove, and near the end of a game most of the tree is proven, so its `±win_value`
    /// targets would outweigh everything else the tree teaches.
    #[arg(long)]
    pub proven_nodes: bool,
    /// Search by plain minimax, no pruning (Sarswat et al.'s TreeStrap(minimax): every node's value
    /// exact, at the cost of many more nodes a move).
    #[arg(long)]
    pub minimax: bool,
    /// TD-Leaf: λ of the temporal differences (KnightCap: 0.7).
    #[arg(long)]
    pub lambda: f64,
    /// TreeStrap: only nodes searched at least this many plies deep teach (1: every interior
    /// node, as the paper; shallow nodes' values are little more than the evaluator's own).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=12))]
    pub min_depth: u32,
    /// Two-player games: every node also teaches the other player's view, the negated value
    /// (a zero-sum game). Pins the offset an evaluator has when its features sum to a constant
    /// (Santorini's worker levels), which bootstrapped targets otherwise leave free to drift.
    #[arg(long)]
    pub zero_sum: bool,
    /// Two-player games: read the evaluator from the side to move, in training and in play
    /// (`eval=(mover:eval=(E:weights=FILE))`): the mover's features times the weights, negated
    /// for the other player, so values carry whose turn it is.
    #[arg(long)]
    pub mover: bool,
    /// Two-player games, TreeStrap: each node teaches only the view of the player who just moved
    /// there (with --zero-sum: every node, from that side), the positions a depth-limited search
    /// asks its evaluator about; the side to move's coming move is then never credited to the
    /// features it is about to leave.
    #[arg(long)]
    pub after_move: bool,
    /// Start from these weights instead of uniform ones in [-1, 1] from --seed (a weights file
    /// or numbers: 0,2,4,-1,...; a first number below zero is taken as numbers, not as an
    /// option).
    #[arg(long, value_name = "FILE|NUMBERS", allow_hyphen_values = true)]
    #[serde(default)]
    pub init: Option<String>,
}

impl crate::flags::Settings for StrapConfig {
    fn defaults() -> serde_json::Value {
        serde_json::to_value(StrapConfig::new(Strap::Tree, "linear8")).expect("configs serialise")
    }
}

impl StrapConfig {
    /// Sarswat et al.'s settings for `strap` on evaluator `eval`: depth 3, a step of 1e-4.
    pub fn new(strap: Strap, eval: &str) -> Self {
        StrapConfig {
            strap,
            eval: eval.to_string(),
            depth: 3,
            odd_depth: None,
            lr: 1e-4,
            opening_plies: 4,
            seed: 1,
            win_value: 10.0,
            proven_nodes: false,
            minimax: false,
            lambda: 0.7,
            min_depth: 1,
            zero_sum: false,
            mover: false,
            after_move: false,
            init: None,
        }
    }

    /// Refuses settings out of range and those the chosen bootstrap never reads, saying why.
    pub fn check(&self) -> Result<(), crate::LearnError> {
        let bad = |m: String| Err(crate::LearnError::Config(m));
        if !(self.lr.is_finite() && self.lr > 0.0) {
            return bad(format!("--lr {} must be a positive number", self.lr));
        }
        if !(self.win_value.is_finite() && self.win_value > 0.0) {
            return bad(format!("--win-value {} must be a positive number", self.win_value));
        }
        if !(0.0..=1.0).contains(&self.lambda) {
            return bad(format!("--lambda {} must be within 0..=1", self.lambda));
        }
        if !(1..=12).contains(&self.depth) || self.odd_depth.is_some_and(|d| !(1..=12).contains(&d)) {
            return bad("--depth and --odd-depth must be within 1..=12".into());
        }
        let default = StrapConfig::new(self.strap, &self.eval);
        let name = self.strap.name();
        if self.strap != Strap::Leaf && self.lambda != default.lambda {
            return bad(format!(
                "--lambda is TD-Leaf's λ of the temporal differences; {name} learns each search's own value, with no \
                 temporal differences to weigh"
            ));
        }
        if self.strap != Strap::Tree && self.proven_nodes {
            return bad(format!(
                "--proven-nodes picks which of the tree's nodes teach, a TreeStrap setting; {name} learns from {} only",
                if self.strap == Strap::Root { "the root" } else { "the principal variation's leaves" }
            ));
        }
        if self.strap != Strap::Tree && self.min_depth != default.min_depth {
            return bad(format!(
                "--min-depth picks which of the tree's nodes teach, a TreeStrap setting; {name} learns from {} only",
                if self.strap == Strap::Root { "the root" } else { "the principal variation's leaves" }
            ));
        }
        if self.strap == Strap::Leaf && self.zero_sum {
            return bad(
                "--zero-sum mirrors the search's node records, which TD-Leaf does not learn from (its targets \
                        are each player's own successive values and the result)"
                    .into(),
            );
        }
        if self.strap == Strap::Leaf && self.after_move {
            return bad("--after-move keeps the node records of the player who just moved, which TD-Leaf does not \
                        learn from"
                .into());
        }
        if self.strap == Strap::Root && self.after_move && !self.zero_sum {
            return bad("--after-move keeps only the views of the player who just moved; RootStrap learns the root, \
                        which is the side to move's view, so it would learn from nothing (with --zero-sum it learns \
                        the mirrored root)"
                .into());
        }
        Ok(())
    }
}

/// What one self-play game taught.
#[derive(Clone, Debug, Default)]
pub struct StrapGame {
    pub plies: usize,
    /// Nodes used for updates, and their mean squared error before the update.
    pub nodes: u64,
    pub mse: f64,
}

/// Uniform weights in [-1, 1] from `seed`, as the report starts.
pub fn random_weights(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = rng_from_seed(seed);
    (0..n).map(|_| rng.random_range(-1.0..=1.0)).collect()
}

/// The evaluator spec for `weights`.
pub fn eval_spec(eval: &str, weights: &[f64]) -> String {
    let w: Vec<String> = weights.iter().map(|x| format!("{x}")).collect();
    format!("{eval}:weights=({})", w.join(","))
}

/// The spec of the evaluator the searches use: `eval` with the evaluator's weights, read from the
/// side to move with [`StrapConfig::mover`].
fn search_eval_spec(config: &StrapConfig, weights: &[f64]) -> String {
    let spec = eval_spec(&config.eval, weights);
    if config.mover { format!("mover:eval=({spec})") } else { spec }
}

/// The evaluator the searches use: the model being fitted.
fn evaluator<G: Game>(
    game: &G,
    config: &StrapConfig,
    weights: &[f64],
) -> Result<std::sync::Arc<dyn Evaluator<G::State>>, Error> {
    meeple_search::make_evaluator(game, &search_eval_spec(config, weights))
}

fn searcher<G: Game>(
    game: &G,
    config: &StrapConfig,
    weights: &[f64],
    seed: u64,
    depth: u32,
) -> Result<AlphaBeta<G::State>, Error> {
    let spec = format!(
        "alphabeta:depth={},tt=1mb,eval=({}){}",
        depth,
        search_eval_spec(config, weights),
        if config.minimax { ",minimax=true" } else { "" }
    );
    let parsed: meeple_game::Spec = spec.parse()?;
    let mut ab =
        AlphaBeta::with_evaluator(game, AlphaBetaConfig::from_spec(&parsed)?, evaluator(game, config, weights)?, seed);
    ab.record_nodes(config.strap != Strap::Root);
    Ok(ab)
}

/// The error a node's record leaves, given the bound proved there (0 where the value already
/// lies within it); proven results count as `±win_value`.
fn error(r: &NodeRecord, weights: &[f64], win_value: f64) -> f64 {
    let h: f64 = r.features.iter().zip(weights).map(|(f, w)| f * w).sum();
    let target = match r.proven() {
        Some(true) => win_value,
        Some(false) => -win_value,
        None => r.value,
    };
    let e = target - h;
    match r.bound {
        Bound::Exact => e,
        Bound::Upper => e.min(0.0),
        Bound::Lower => e.max(0.0),
    }
}

/// Plays one game of self-play with `weights`, updating them after every search (RootStrap,
/// TreeStrap) or at the game's end (TD-Leaf).
pub fn play_game<G: Game>(game: &G, config: &StrapConfig, weights: &mut [f64], index: u64) -> Result<StrapGame, Error> {
    let seed = derive_seed(config.seed, index);
    let depth = if index % 2 == 1 { config.odd_depth.unwrap_or(config.depth) } else { config.depth };
    let mut rng = rng_from_seed(derive_seed(seed, 1));
    let mut state = game.initial_state();
    let (mut out, mut sq) = (StrapGame::default(), 0.0);
    let mut legal = Vec::new();
    let mut outcomes = Vec::new();
    // TD-Leaf: per player, each search's value (the mover's) and its leaf's features.
    let mut leaves: Vec<Vec<(f64, Vec<f64>)>> = vec![Vec::new(); game.num_players()];
    let eval = match config.strap {
        Strap::Leaf => Some(evaluator(game, config, weights)?),
        _ => None,
    };
    while !state.is_terminal() {
        if state.turn() == meeple_game::Turn::Chance {
            let a = meeple_game::draw_chance(&state, &mut outcomes, &mut rng);
            state.apply_unchecked(a);
            continue;
        }
        if out.plies < config.opening_plies {
            state.legal_actions(&mut legal);
            state.apply_unchecked(legal[rng.random_range(0..legal.len())]);
            out.plies += 1;
            continue;
        }
        let mut ab = searcher(game, config, weights, derive_seed(seed, 2 + out.plies as u64), depth)?;
        let action = meeple_game::Agent::act(&mut ab, &state, &meeple_game::Budget::UNLIMITED)?;
        if let Some(eval) = &eval {
            let mover = state.current_player().expect("a player's turn");
            let report = ab.report();
            let mut leaf = state.clone();
            for &a in &report.pv {
                if leaf.is_terminal() || leaf.turn() == meeple_game::Turn::Chance || !leaf.is_legal(a) {
                    break;
                }
                leaf.apply_unchecked(a);
            }
            let proven = report.value.abs() > meeple_search::alphabeta::WIN / 2.0;
            let mut f = Vec::new();
            if !proven && !leaf.is_terminal() {
                eval.features(&leaf, mover, &mut f);
            }
            let v = if proven { config.win_value * report.value.signum() } else { report.value };
            leaves[mover].push((v, f));
            out.nodes += 1;
        } else {
            // The root is searched by its own loop: its record comes from the decision's value.
            let mut records: Vec<NodeRecord> = ab.root_record(&state).into_iter().collect();
            if config.strap == Strap::Tree {
                records.extend(
                    ab.take_records()
                        .into_iter()
                        .filter(|r| (config.proven_nodes || r.proven().is_none()) && r.depth >= config.min_depth),
                );
            }
            if config.zero_sum {
                let mirrored: Vec<NodeRecord> = records.iter().filter_map(mirror).collect();
                records.extend(mirrored);
            }
            if config.after_move {
                records.retain(|r| !r.to_move);
            }
            sq += update(weights, &records, config.lr, config.win_value);
            out.nodes += records.len() as u64;
        }
        state.apply(action)?;
        out.plies += 1;
    }
    if config.strap == Strap::Leaf {
        let returns = state.returns().expect("a finished game");
        for (p, line) in leaves.iter().enumerate() {
            let result = config.win_value * (2.0 * returns.as_slice()[p] - 1.0);
            sq += td_leaf_update(weights, line, result, config.lambda, config.lr);
        }
    }
    out.mse = if out.nodes > 0 { sq / out.nodes as f64 } else { 0.0 };
    Ok(out)
}

/// TD-Leaf(λ)'s step for one player's line of searches: `line[t]` its search value and the
/// leaf's features (empty where the value was proven: no gradient), `result` the final value.
/// `w += rate * sum_t f_t * sum_{j>=t} λ^(j-t) d_j`, `d_j = v_{j+1} - v_j` (`v_N` = the result).
/// Gives the squared temporal differences.
pub fn td_leaf_update(weights: &mut [f64], line: &[(f64, Vec<f64>)], result: f64, lambda: f64, rate: f64) -> f64 {
    let n = line.len();
    let mut step = vec![0.0; weights.len()];
    let mut sq = 0.0;
    // Backwards: trace = sum_{j>=t} λ^(j-t) d_j.
    let mut trace = 0.0;
    for t in (0..n).rev() {
        let next = if t + 1 < n { line[t + 1].0 } else { result };
        let d = next - line[t].0;
        sq += d * d;
        trace = d + lambda * trace;
        for (s, f) in step.iter_mut().zip(&line[t].1) {
            *s += rate * f * trace;
        }
    }
    for (w, s) in weights.iter_mut().zip(&step) {
        *w += s;
    }
    sq
}

/// The weights of evaluator `eval` as a file `weights=FILE` loads: one line of numbers, after
/// comment lines naming how they were made and the evaluator spec that plays them.
pub fn weights_file(weights: &[f64], made_by: &str, plays_as: &str) -> String {
    let w: Vec<String> = weights.iter().map(|x| format!("{x}")).collect();
    format!("# {made_by}\n# play: eval={plays_as}\n{}\n", w.join(","))
}

/// Reads a weights file this module wrote (or any file of comma-separated numbers, `#` lines
/// skipped).
pub fn read_weights(path: &std::path::Path) -> Result<Vec<f64>, crate::LearnError> {
    let text = meeple_game::limits::read_text(path, 64 << 10, "weights file")?;
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .flat_map(|l| l.split(','))
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(|v| {
            v.parse::<f64>().map_err(|_| {
                crate::LearnError::Data(format!("'{}' holds '{v}', not a number of weights", path.display()))
            })
        })
        .collect()
}

/// The agent spec that plays weights learned with `config` (`{model}` where the file goes):
/// alpha-beta at the training depth, the evaluator read from the side to move where it was
/// learned so.
pub fn agent_spec(config: &StrapConfig) -> String {
    let eval = format!("({}:weights={{model}})", config.eval);
    let eval = if config.mover { format!("(mover:eval={eval})") } else { eval };
    format!("alphabeta:depth={},eval={eval}", config.depth)
}

/// A bootstrap run for [`crate::run::run`]: one self-play game a round, the weights file as
/// its checkpoint (`ckpt/last.txt`, with a `.json` sidecar holding the progress and settings).
pub struct StrapRun<G: Game> {
    game: G,
    config: StrapConfig,
    weights: Vec<f64>,
    progress: crate::run::Progress,
}

/// The sidecar beside a bootstrap checkpoint.
#[derive(serde::Serialize, serde::Deserialize)]
struct StrapSidecar {
    trainer: String,
    game: String,
    config: StrapConfig,
    progress: crate::run::Progress,
}

impl<G: Game> StrapRun<G> {
    /// A run from `config`'s start, or continued from the checkpoint `resume`.
    pub fn new(game: G, config: StrapConfig, resume: Option<&std::path::Path>) -> Result<Self, crate::LearnError> {
        config.check()?;
        let eval = meeple_search::make_evaluator(&game, &config.eval)?;
        let n = eval.weights().len();
        if n == 0 {
            return Err(crate::LearnError::Config(format!(
                "evaluator '{}' of {} is not linear (it exposes no features and weights)",
                config.eval,
                game.spec()
            )));
        }
        for (on, flag, what) in [
            (config.zero_sum, "--zero-sum", "teaches each node's negated value to the other player"),
            (config.after_move, "--after-move", "keeps only the view of the player who just moved"),
        ] {
            if on && game.num_players() != 2 {
                return Err(crate::LearnError::Config(format!(
                    "{flag} {what}: a two-player game's rule; {} has {} players, where it would change nothing",
                    game.spec(),
                    game.num_players()
                )));
            }
        }
        if config.mover && game.num_players() != 2 {
            return Err(crate::LearnError::Config(format!(
                "--mover reads the evaluator from the side to move, negated for the other player: a two-player \
                 game's reading; {} has {} players",
                game.spec(),
                game.num_players()
            )));
        }
        let (weights, progress) = match resume {
            Some(path) => {
                let side = path.with_extension("json");
                let text = meeple_game::limits::read_text(&side, 1 << 20, "checkpoint sidecar")?;
                let side: StrapSidecar = serde_json::from_str(&text).map_err(|e| {
                    crate::LearnError::Data(format!("'{}' is not a bootstrap sidecar: {e}", side.display()))
                })?;
                (read_weights(path)?, side.progress)
            }
            None => {
                let w = match &config.init {
                    Some(given) => match meeple_game::access::numbers(given)? {
                        Some(w) => w,
                        None => read_weights(std::path::Path::new(given))?,
                    },
                    None => random_weights(n, config.seed),
                };
                (w, crate::run::Progress::default())
            }
        };
        if weights.len() != n {
            return Err(crate::LearnError::Config(format!(
                "{} weights given; {} takes {n}",
                weights.len(),
                config.eval
            )));
        }
        Ok(StrapRun { game, config, weights, progress })
    }

    pub fn weights(&self) -> &[f64] {
        &self.weights
    }
}

impl<G: Game> crate::run::Learner for StrapRun<G> {
    fn kind(&self) -> &'static crate::run::Kind {
        self.config.strap.kind()
    }

    fn agent(&self) -> String {
        agent_spec(&self.config)
    }

    fn round(&mut self, _budget: &crate::run::Budget<'_>) -> Result<crate::run::Round, crate::LearnError> {
        let started = std::time::Instant::now();
        let g = play_game(&self.game, &self.config, &mut self.weights, self.progress.episodes)?;
        if self.weights.iter().any(|w| !w.is_finite()) {
            return Err(crate::LearnError::Config(format!(
                "the weights diverged at game {}: give a smaller --lr",
                self.progress.episodes
            )));
        }
        self.progress.episodes += 1;
        self.progress.decisions += g.plies as u64;
        // One update a search (RootStrap, TreeStrap), one a game (TD-Leaf).
        self.progress.steps += if self.config.strap == Strap::Leaf {
            1
        } else {
            (g.plies - self.config.opening_plies.min(g.plies)) as u64
        };
        let mut round = crate::run::Round::default();
        round.loss("search_mse", g.mse);
        round.figure("plies", g.plies as f64);
        round.stat("nodes", g.nodes as f64);
        round.stat("games_per_second", 1.0 / started.elapsed().as_secs_f64().max(1e-9));
        Ok(round)
    }

    fn progress(&self) -> crate::run::Progress {
        self.progress.clone()
    }

    fn save(&self, path: &std::path::Path, save: &crate::run::Save<'_>) -> Result<(), crate::LearnError> {
        let io = |e: std::io::Error| crate::LearnError::Io(format!("cannot write '{}': {e}", path.display()));
        let plays = agent_spec(&self.config).replace("{model}", &path.display().to_string());
        let made_by = if save.commands.is_empty() {
            format!("{} of {}, {} games", self.config.strap.name(), self.game.spec(), self.progress.episodes)
        } else {
            save.commands.join("\n# ")
        };
        let eval = plays.split_once("eval=").map_or(plays.as_str(), |(_, e)| e);
        meeple_arena::files::write_atomic(path, weights_file(&self.weights, &made_by, eval).as_bytes()).map_err(io)?;
        let side = StrapSidecar {
            trainer: self.config.strap.name().into(),
            game: self.game.spec().to_string(),
            config: self.config.clone(),
            progress: crate::run::Progress { seconds: save.seconds, ..self.progress.clone() },
        };
        let text = serde_json::to_string_pretty(&side).expect("sidecars serialise") + "\n";
        meeple_arena::files::write_atomic(&path.with_extension("json"), text.as_bytes()).map_err(io)
    }

    fn settings(&self) -> serde_json::Value {
        serde_json::to_value(&self.config).expect("configs serialise")
    }
}

/// The bootstrap learners' description: linear weights in a text file.
const STRAP: crate::run::Kind = crate::run::Kind {
    extension: "txt",
    may_change: &["init"],
    flags: &[("strap", "the trainer")],
    ..crate::run::Kind::new("")
};
pub static ROOTSTRAP: crate::run::Kind = crate::run::Kind { name: "rootstrap", ..STRAP };
pub static TREESTRAP: crate::run::Kind = crate::run::Kind { name: "treestrap", ..STRAP };
pub static TDLEAF: crate::run::Kind = crate::run::Kind { name: "tdleaf", ..STRAP };

/// Several random starts of one bootstrap learner and the one a round robin among them chose.
#[derive(Clone, Debug)]
pub struct Chosen {
    /// Which start (0 first), and each start's share of its round-robin games.
    pub best: usize,
    pub scores: Vec<f64>,
    /// The chosen weights (`DIR/chosen.txt`) and the round robin's summary (`DIR/select.json`).
    pub weights: std::path::PathBuf,
    pub select: std::path::PathBuf,
}

/// Trains `starts` runs of `config`'s learner from random weights (seeds `config.seed`,
/// `config.seed + 1`, ...), each a run of its own in `options.out` (`start1`, ...; with
/// `options.resume` each goes on, or is left where it finished), then plays a round robin among
/// them at the training depth (`select_games` a pair, paired seats, the learner's opening plies)
/// and writes the one that scores most as `chosen.txt` beside the round robin's `select.json`.
/// For learners whose result depends on where they start: the choice is made by the learned
/// weights' own games, none against other weights. `None` when `hooks` asked to stop before
/// every start was trained (the same call with `options.resume` goes on).
pub fn train_starts<G: Game>(
    game: &G,
    config: &StrapConfig,
    options: &crate::run::RunOptions,
    starts: u64,
    select_games: u64,
    hooks: &mut dyn crate::run::Hooks,
) -> Result<Option<Chosen>, crate::LearnError> {
    let refuse = |why: String| Err(crate::LearnError::Config(why));
    if game.num_players() != 2 {
        return refuse(format!(
            "starts picks among its starts by a round robin, which needs a two-player game; {} has {} players",
            game.spec(),
            game.num_players()
        ));
    }
    if !(1..=64).contains(&starts) {
        return refuse(format!("starts {starts}: give 1 to 64"));
    }
    if select_games < 2 || !select_games.is_multiple_of(2) {
        return refuse(format!("select games {select_games}: give an even number (each pair plays both seatings)"));
    }
    if config.init.is_some() {
        return refuse("starts train from random weights (one seed a start); init gives them all one start".into());
    }
    if options.export.is_some() {
        return refuse("export writes one run's checkpoint; with starts the chosen start is DIR/chosen.txt".into());
    }
    let chosen = options.out.join("chosen.txt");
    if chosen.exists() {
        return refuse(format!("'{}' holds a chosen start already: give another out", options.out.display()));
    }
    let mut files = Vec::new();
    for k in 0..starts {
        let dir = options.out.join(format!("start{}", k + 1));
        let c = StrapConfig { seed: config.seed + k, ..config.clone() };
        let mut one = options.clone();
        one.out = dir.clone();
        one.resume = options.resume && dir.join("run.json").exists();
        let finished = one.resume && crate::run::read_run(&dir)?.progress.episodes >= options.games.unwrap_or(u64::MAX);
        hooks.working(&format!("start {} of {starts} (seed {}): {}", k + 1, c.seed, dir.display()));
        if !finished {
            crate::run::run(game, &one, |resume| StrapRun::new(game.clone(), c, resume), hooks)?;
        }
        if hooks.should_stop() {
            return Ok(None);
        }
        files.push(dir.join("ckpt/last.txt"));
    }
    let agent = agent_spec(config);
    let specs: Vec<String> = files.iter().map(|f| agent.replace("{model}", &f.display().to_string())).collect();
    let mut match_config = meeple_arena::MatchConfig::new(specs.clone(), select_games as usize, config.seed);
    match_config.opening_plies = config.opening_plies;
    let total = meeple_arena::total_games(2, &match_config);
    let done = std::sync::atomic::AtomicUsize::new(0);
    let result = std::thread::scope(|scope| {
        let player = scope.spawn(|| {
            meeple_arena::run_match(game, &crate::extension(), &match_config, |_| {
                done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            })
        });
        // The display need not be shareable across threads: this thread reports for it.
        while !player.is_finished() {
            let k = done.load(std::sync::atomic::Ordering::Relaxed);
            hooks.working(&format!("round robin among the starts: {k} of {total} games"));
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        player.join().expect("the round robin ran")
    });
    let (summary, _) = result?;
    // Each start's score, found by its spec; the highest wins, the earlier start on a tie.
    let scores: Vec<f64> = specs
        .iter()
        .map(|s| summary.agents.iter().find(|a| &a.spec == s).map(|a| a.score))
        .collect::<Option<_>>()
        .ok_or_else(|| crate::LearnError::Data("the round robin's summary lacks a start".into()))?;
    let best = (0..scores.len()).fold(0, |b, i| if scores[i] > scores[b] { i } else { b });
    let weights = read_weights(&files[best])?;
    let made_by = format!(
        "{}\n# start {} of {starts} (seed {}, {}), chosen by a round robin among the starts ({select_games} games a \
         pair, seed {}): {}",
        options.commands.join("\n# "),
        best + 1,
        config.seed + best as u64,
        files[best].display(),
        config.seed,
        scores.iter().map(|s| format!("{:.1}%", 100.0 * s)).collect::<Vec<_>>().join(" "),
    );
    let plays = agent.replace("{model}", &chosen.display().to_string());
    let eval = plays.split_once("eval=").map_or(plays.as_str(), |(_, e)| e);
    let io = |path: &std::path::Path, e: std::io::Error| {
        crate::LearnError::Io(format!("cannot write '{}': {e}", path.display()))
    };
    meeple_arena::files::write_atomic(&chosen, weights_file(&weights, &made_by, eval).as_bytes())
        .map_err(|e| io(&chosen, e))?;
    let select = options.out.join("select.json");
    let text = serde_json::to_string_pretty(&summary).expect("summaries serialise");
    meeple_arena::files::write_atomic(&select, text.as_bytes()).map_err(|e| io(&select, e))?;
    Ok(Some(Chosen { best, scores, weights: chosen, select }))
}

/// The other player's view of a two-player node: its features, the negated value, the bound
/// mirrored (at most v for one is at least -v for the other); `None` without its features.
pub fn mirror(r: &NodeRecord) -> Option<NodeRecord> {
    (!r.opponent.is_empty()).then(|| NodeRecord {
        features: r.opponent.clone(),
        value: -r.value,
        bound: match r.bound {
            Bound::Exact => Bound::Exact,
            Bound::Upper => Bound::Lower,
            Bound::Lower => Bound::Upper,
        },
        depth: r.depth,
        opponent: Vec::new(),
        to_move: !r.to_move,
    })
}

/// Moves `weights` by the summed TreeStrap step over `records`; gives the records' squared
/// error before the step.
pub fn update(weights: &mut [f64], records: &[NodeRecord], learning_rate: f64, win_value: f64) -> f64 {
    let mut step = vec![0.0; weights.len()];
    let mut sq = 0.0;
    for r in records {
        let e = error(r, weights, win_value);
        sq += e * e;
        for (s, f) in step.iter_mut().zip(&r.features) {
            *s += learning_rate * e * f;
        }
    }
    for (w, s) in weights.iter_mut().zip(&step) {
        *w += s;
    }
    sq
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's settings for the tests: TreeStrap-like defaults; tests change what they need.
    fn test_config(strap: Strap) -> StrapConfig {
        StrapConfig { opening_plies: 0, proven_nodes: true, ..StrapConfig::new(strap, "linear8") }
    }

    fn positions(n: usize, seed: u64) -> Vec<meeple_games::santorini::SantoriniState> {
        let game = meeple_games::santorini::Santorini::default();
        let mut rng = rng_from_seed(seed);
        let mut out = Vec::new();
        let mut legal = Vec::new();
        while out.len() < n {
            let mut s = game.initial_state();
            while !s.is_terminal() {
                s.legal_actions(&mut legal);
                s.apply_unchecked(legal[rng.random_range(0..legal.len())]);
                if !s.is_terminal() {
                    out.push(s);
                }
            }
        }
        out.truncate(n);
        out
    }

    #[test]
    fn features_times_weights_is_the_evaluators_value() {
        let spec8 = eval_spec("linear8", &random_weights(8, 1));
        let spec22 = eval_spec("linear22", &random_weights(22, 2));
        let spec36 = eval_spec("table36", &random_weights(36, 3));
        let game = meeple_games::santorini::Santorini::default();
        for spec in ["linear8".to_string(), spec8, "linear22".to_string(), spec22, "table36".to_string(), spec36] {
            let eval = meeple_search::make_evaluator(&game, &spec).unwrap();
            let w = eval.weights();
            assert!(!w.is_empty(), "{spec}");
            let mut f = Vec::new();
            for s in positions(300, 5) {
                for p in 0..2 {
                    assert!(eval.features(&s, p, &mut f));
                    let dot: f64 = f.iter().zip(&w).map(|(a, b)| a * b).sum();
                    assert!((dot - eval.evaluate(&s, p)).abs() < 1e-9, "{spec}: {dot} vs {}", eval.evaluate(&s, p));
                }
            }
        }
    }

    #[test]
    fn a_bound_only_pulls_values_that_break_it() {
        let r = |value, bound| NodeRecord {
            features: vec![1.0],
            value,
            bound,
            depth: 1,
            opponent: Vec::new(),
            to_move: false,
        };
        let w = [2.0];
        let e = |r: &NodeRecord| error(r, &w, 10.0);
        assert_eq!(e(&r(3.0, Bound::Exact)), 1.0);
        assert_eq!(e(&r(1.0, Bound::Exact)), -1.0);
        // At most 3: a value of 2 keeps it; at most 1: 2 is pulled down.
        assert_eq!(e(&r(3.0, Bound::Upper)), 0.0);
        assert_eq!(e(&r(1.0, Bound::Upper)), -1.0);
        // At least 1: 2 keeps it; at least 3: 2 is pulled up.
        assert_eq!(e(&r(1.0, Bound::Lower)), 0.0);
        assert_eq!(e(&r(3.0, Bound::Lower)), 1.0);
        // A proven win is worth the win value; a proven loss its negation.
        assert_eq!(e(&r(1e9, Bound::Exact)), 8.0);
        assert_eq!(e(&r(-1e9, Bound::Lower)), 0.0);
        assert_eq!(e(&r(-1e9, Bound::Exact)), -12.0);
    }

    /// The update recovers a known evaluator: records valued by `linear8`'s hand weights teach
    /// weights that start at random, to within 1e-3 of the teacher's.
    #[test]
    fn the_update_recovers_the_weights_of_a_known_evaluator() {
        let game = meeple_games::santorini::Santorini::default();
        let teacher = meeple_search::make_evaluator(&game, "linear8").unwrap();
        let mut records = Vec::new();
        for s in positions(400, 8) {
            let mut f = Vec::new();
            teacher.features(&s, 0, &mut f);
            records.push(NodeRecord {
                features: f,
                value: teacher.evaluate(&s, 0),
                bound: Bound::Exact,
                depth: 1,
                opponent: Vec::new(),
                to_move: false,
            });
        }
        let mut w = random_weights(8, 4);
        for _ in 0..20_000 {
            update(&mut w, &records, 0.5 / records.len() as f64, 10.0);
        }
        for (a, b) in w.iter().zip(&teacher.weights()) {
            assert!((a - b).abs() < 1e-3, "{w:?} vs {:?}", teacher.weights());
        }
    }

    /// TreeStrap(minimax) searches without pruning: every recorded node is exact, there are
    /// more of them than alpha-beta visits, and the root's value is alpha-beta's.
    #[test]
    fn minimax_records_every_node_exactly() {
        let game = meeple_games::santorini::Santorini::default();
        let mut config = test_config(Strap::Tree);
        let w = random_weights(8, 3);
        for s in positions(6, 12).into_iter().skip(4) {
            let mut ab = searcher(&game, &config, &w, 1, config.depth).unwrap();
            meeple_game::Agent::act(&mut ab, &s, &meeple_game::Budget::UNLIMITED).unwrap();
            let (root, pruned) = (ab.root_record(&s).unwrap(), ab.take_records());
            config.minimax = true;
            let mut mm = searcher(&game, &config, &w, 1, config.depth).unwrap();
            meeple_game::Agent::act(&mut mm, &s, &meeple_game::Budget::UNLIMITED).unwrap();
            let (mm_root, all) = (mm.root_record(&s).unwrap(), mm.take_records());
            config.minimax = false;
            assert!((root.value - mm_root.value).abs() < 1e-9, "{} vs {}", root.value, mm_root.value);
            assert!(all.iter().all(|r| r.bound == Bound::Exact));
            assert!(all.len() > pruned.len(), "{} minimax nodes, {} alpha-beta", all.len(), pruned.len());
        }
    }

    /// Each record knows whether its player is the one to move: in a depth-3 minimax search
    /// from the root player's view, nodes 1 ply below the root (2 left) have the opponent to
    /// move, 2 plies below (1 left) the root player again; the mirror flips it.
    #[test]
    fn records_know_whose_turn_it_is() {
        let game = meeple_games::santorini::Santorini::default();
        let config = StrapConfig { minimax: true, ..test_config(Strap::Tree) };
        let s = positions(5, 12).pop().unwrap();
        let mut mm = searcher(&game, &config, &random_weights(8, 3), 1, config.depth).unwrap();
        meeple_game::Agent::act(&mut mm, &s, &meeple_game::Budget::UNLIMITED).unwrap();
        assert!(mm.root_record(&s).unwrap().to_move);
        let records = mm.take_records();
        let at = |d: u32| records.iter().filter(move |r| r.depth == d);
        assert!(at(2).count() > 0 && at(2).all(|r| !r.to_move));
        assert!(at(1).count() > 0 && at(1).all(|r| r.to_move));
        assert!(at(1).filter_map(mirror).all(|r| !r.to_move));
    }

    /// The other player's view of a node: its features, the negated value, the bound mirrored;
    /// a node whose bound already holds for one view holds for the other.
    #[test]
    fn the_mirrored_view_negates_the_value_and_flips_the_bound() {
        let r = NodeRecord {
            features: vec![1.0, 0.0],
            value: 2.0,
            bound: Bound::Upper,
            depth: 2,
            opponent: vec![0.0, 1.0],
            to_move: true,
        };
        let m = mirror(&r).unwrap();
        assert_eq!((m.features.as_slice(), m.value, m.bound, m.depth), ([0.0, 1.0].as_slice(), -2.0, Bound::Lower, 2));
        assert!(!m.to_move, "the other player's view: the player to move becomes the one who moved");
        // Antisymmetric weights: h = 1.5 for the player (at most 2: kept), -1.5 for the other (at
        // least -2: kept); 3 and -3 break both bounds by 1.
        for (w, e) in [([1.5, -1.5], 0.0), ([3.0, -3.0], -1.0)] {
            assert_eq!(error(&r, &w, 10.0), e);
            assert_eq!(error(&m, &w, 10.0), -e);
        }
        assert!(mirror(&NodeRecord { opponent: Vec::new(), ..r }).is_none());
    }

    #[test]
    fn td_leaf_by_hand() {
        // Two searches valued 1 and 2 with features (1) and (2); result 4; λ = 0.5, rate 0.1.
        // d0 = 1, d1 = 2; trace1 = 2, trace0 = 1 + 0.5 * 2 = 2; step = 0.1 * (1 * 2 + 2 * 2) = 0.6.
        let mut w = vec![0.0];
        let sq = td_leaf_update(&mut w, &[(1.0, vec![1.0]), (2.0, vec![2.0])], 4.0, 0.5, 0.1);
        assert!((w[0] - 0.6).abs() < 1e-12 && (sq - 5.0).abs() < 1e-12, "{w:?} {sq}");
        // A proven search (no features) passes its difference on but takes no step itself.
        let mut w = vec![0.0];
        td_leaf_update(&mut w, &[(1.0, vec![1.0]), (10.0, vec![])], 10.0, 1.0, 0.1);
        assert!((w[0] - 0.9).abs() < 1e-12, "{w:?}");
    }

    /// TD-Leaf on Santorini from random weights: a short run moves the weights, keeps them
    /// finite, and its leaves are real positions (features of the right length).
    #[test]
    fn td_leaf_plays_and_learns() {
        let game = meeple_games::santorini::Santorini::default();
        let config = StrapConfig {
            depth: 2,
            odd_depth: None,
            lr: 1e-3,
            opening_plies: 2,
            seed: 5,
            proven_nodes: false,
            ..test_config(Strap::Leaf)
        };
        let start = random_weights(8, 9);
        let mut w = start.clone();
        for i in 0..3 {
            let g = play_game(&game, &config, &mut w, i).unwrap();
            assert!(g.nodes > 0 && g.plies > 2);
        }
        assert!(w.iter().all(|x| x.is_finite()));
        assert_ne!(w, start);
    }

    /// `odd_depth`: on `tempo16`, TD-Leaf at an odd depth credits leaves with the opponent to
    /// move (the second half of the weights), at an even depth leaves with the learner to move
    /// (the first half); games with an odd index search at `odd_depth`, so one run fits both.
    #[test]
    fn odd_games_search_at_the_odd_depth() {
        let game = meeple_games::santorini::Santorini::default();
        let config = StrapConfig {
            eval: "tempo16".into(),
            depth: 1,
            odd_depth: Some(2),
            lr: 1e-3,
            opening_plies: 4,
            seed: 5,
            ..test_config(Strap::Leaf)
        };
        let start = random_weights(16, 9);
        let moved = |index: u64| {
            let mut w = start.clone();
            play_game(&game, &config, &mut w, index).unwrap();
            let changed = |half: std::ops::Range<usize>| half.into_iter().any(|i| w[i] != start[i]);
            (changed(0..8), changed(8..16))
        };
        assert_eq!(moved(0), (false, true), "depth 1: the opponent to move at every leaf");
        assert_eq!(moved(1), (true, false), "depth 2: the learner to move at every leaf");
        assert_eq!(moved(2), (false, true));
    }
}
