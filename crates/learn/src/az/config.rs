//! An AlphaZero run's settings: [`AzConfig`] (each field a flag of `meeple train az` and a
//! keyword of `meeple.train("az", ...)`), its defaults on a game ([`default_config`]), the
//! settings a user gave laid over them ([`az_config`]) and their checks.

use crate::LearnError;
use crate::az::selfplay::SelfPlayConfig;
use crate::az::train::{fresh_network, init_network};
use meeple_game::{Game, State};
use meeple_nn::{NetConfig, TrainConfig};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Everything a run is made of; the settings a user gives are flags of `train az` (the field's
/// name, or the one its `long` gives), their docs the help, [`default_config`] the defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct AzConfig {
    /// The game's canonical spec.
    #[arg(skip)]
    pub game: String,
    /// The network: `resnet:blocks=B,channels=C` (board planes) or `mlp:layers=L,width=W`
    /// (default resnet:blocks=4,channels=32 for board games, mlp:layers=2,width=256 otherwise).
    /// A tower takes `head=dense|planes`: `dense` (the default) has one weight row per action
    /// id; `planes`, where the game's actions are placements on its board (Cathedral), reads
    /// the policy off convolution planes. `ownership=true` adds an auxiliary head trained to
    /// say who holds each board cell at the game's end (games that say so: cathedral,
    /// connect4, tictactoe); `score=true` one trained toward the final score margin (any
    /// trunk; games whose scores say by how much: cathedral, catan, sagrada).
    /// `policy_filters=P` and `value_filters=V` set the planes of the dense policy head's and
    /// the value head's 1x1 convolutions (2 and 1 by default).
    #[arg(long, value_name = "SPEC")]
    pub net: String,
    #[command(flatten)]
    pub selfplay: SelfPlayConfig,
    #[command(flatten)]
    pub train: TrainConfig,
    /// Positions per training batch.
    #[arg(long)]
    pub batch: usize,
    /// Positions in the replay window (the newest).
    #[arg(long)]
    pub window: usize,
    /// Positions needed before training starts (at most the window).
    #[arg(skip)]
    pub min_window: usize,
    /// Self-play games per generation (`--games` is the run's length, as for every trainer).
    #[arg(long, value_name = "N")]
    pub games_per_generation: usize,
    /// Training samples drawn per new self-play position: each generation trains
    /// new positions x reuse / batch steps. Higher trains more on each game (more steps an
    /// hour, fewer games).
    #[arg(long, value_name = "R")]
    pub reuse: f64,
    /// The value target's share of the game's result; the rest is the search's root value at
    /// the position (1: the result alone, as AlphaZero; 0: the search's value alone).
    #[arg(long, value_name = "SHARE")]
    pub value_mix: f64,
    /// The search's value in that target is a short-term one: the root values of this position
    /// and the game's later ones, weighted `(1 - λ) λ^k` k decisions ahead, the rest on the
    /// result (KataGo's short-term value target, here the value head's own target). 0: this
    /// position's root value alone.
    #[arg(long, value_name = "L")]
    #[serde(default)]
    pub value_lambda: f64,
    /// Generations over which the result's share of the value target grows from 0 (the
    /// search's value alone) to `value_mix`: early games' results say little about their
    /// positions, the search's value is less noisy. 0: `value_mix` from the start.
    #[arg(long, value_name = "G")]
    #[serde(default)]
    pub value_mix_warmup: u64,
    /// The result in the value target is this share the final score margin and the rest the
    /// win or loss: each seat's `0.5 + 0.5 x` its lead over the best other seat on the game's
    /// [`State::score_scale`], clamped to 0..=1 (a game decided by luck says more by how much it
    /// was won than by who won). 0: the result alone. Needs a game with a score scale.
    #[arg(long, value_name = "SHARE")]
    #[serde(default)]
    pub value_score: f64,
    /// Expert iteration's start: an agent spec whose games, in every seat, are the first
    /// `teacher_generations` generations' games instead of self-play (its visits or moves the
    /// policy targets, the results the value targets; see
    /// [`crate::az::selfplay::teacher_play_until`]). `None`: self-play from the first generation.
    #[arg(long, value_name = "SPEC")]
    #[serde(default)]
    pub teacher: Option<String>,
    /// Generations the --teacher plays.
    #[arg(long, value_name = "G")]
    #[serde(default)]
    pub teacher_generations: u64,
    /// After those generations, the teacher still plays this share of every generation's games
    /// (expert iteration kept going: self-play cannot wash the teacher's policy out of the
    /// window). 0: self-play alone after the teacher's generations.
    #[arg(long, value_name = "SHARE")]
    #[serde(default)]
    pub teacher_share: f64,
    /// The run's seed: `--seed`.
    #[arg(skip)]
    pub seed: u64,
    /// Threads: self-play workers (each with its own share of the games) and training.
    #[arg(skip)]
    pub threads: usize,
    /// Where self-play happens elsewhere (other processes or machines, `meeple.distributed`):
    /// this directory, into which players move whole shard files (`*.jsonl`, written under
    /// another name and renamed, so a shard is read whole or not at all) playing the newest
    /// `ckpt/last.safetensors`. The trainer takes them in name order, a generation at a time.
    #[arg(skip)]
    #[serde(default)]
    pub external: Option<PathBuf>,
    /// Start from this network instead of fresh weights: one trained on a related game or
    /// variant of the same kind (Santorini without gods for Santorini with them). Its trunk and
    /// value head are kept; input planes (or inputs) the new game adds start at weight zero; the
    /// policy keeps the rows of the actions both games name alike, the others start at zero.
    /// The run's network is the checkpoint's (a --net that differs is refused). A resumed run
    /// goes on from its own checkpoint: give the command it was started with.
    #[arg(long, value_name = "MODEL")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init: Option<String>,
}

/// The command-line option behind each setting of a run, for messages.
pub(crate) const OPTIONS: &[(&str, &str)] = &[
    ("game", "the game"),
    ("net", "--net"),
    ("selfplay.search.sims", "--sims"),
    ("selfplay.search.root", "--root"),
    ("selfplay.search.forced_playouts", "--forced-playouts"),
    ("selfplay.in_flight", "--in-flight"),
    ("selfplay.random_opening_share", "--random-opening-share"),
    ("selfplay.random_opening_plies", "--random-opening-plies"),
    ("train.lr", "--lr"),
    ("batch", "--batch"),
    ("window", "--window"),
    ("games_per_generation", "--games-per-generation"),
    ("reuse", "--reuse"),
    ("value_mix", "--value-mix"),
    ("value_lambda", "--value-lambda"),
    ("value_mix_warmup", "--value-mix-warmup"),
    ("teacher", "--teacher"),
    ("teacher_generations", "--teacher-generations"),
    ("teacher_share", "--teacher-share"),
    ("value_score", "--value-score"),
    ("seed", "--seed"),
    ("threads", "--threads"),
];

/// A run configuration with the defaults for `game` (see `docs/alphazero.md` for why).
pub fn default_config<G: Game>(game: &G, sims: u32, seed: u64, threads: usize) -> AzConfig {
    let shape = game.observation_shape();
    let net = if shape.len() == 3 { "resnet:blocks=4,channels=32" } else { "mlp:layers=2,width=256" };
    let legal_guess = game.num_actions().min(64);
    AzConfig {
        game: game.spec().to_string(),
        net: net.into(),
        selfplay: SelfPlayConfig {
            search: crate::SearchConfig {
                dirichlet_alpha: (10.0 / legal_guess as f32).clamp(0.03, 1.0),
                ..crate::SearchConfig::new(crate::Root::Gumbel, sims)
            },
            in_flight: 128,
            full_prob: 0.25,
            fast_sims: (sims / 4).max(2),
            temperature_plies: 8,
            max_plies: 2000,
            random_opening_share: 0.0,
            random_opening_plies: 8,
        },
        train: TrainConfig::default(),
        batch: 256,
        window: 100_000,
        min_window: 2_000,
        games_per_generation: 256,
        reuse: 4.0,
        value_mix: 0.5,
        value_lambda: 0.0,
        value_mix_warmup: 0,
        value_score: 0.0,
        teacher: None,
        teacher_generations: 0,
        teacher_share: 0.0,
        seed,
        threads,
        external: None,
        init: None,
    }
}

impl crate::flags::Settings for AzConfig {
    fn defaults() -> serde_json::Value {
        // The network and the noise depend on the game; `--help` shows the rest.
        let mut v = serde_json::to_value(default_config(&meeple_game::testing::Dice::default(), 64, 0, 1))
            .expect("configs serialise");
        v.as_object_mut().expect("an object").remove("net");
        v
    }
}

pub fn az_config<G: Game>(
    game: &G,
    given: &serde_json::Value,
    seed: u64,
    threads: usize,
) -> Result<AzConfig, LearnError> {
    let sims = crate::flags::leaf(given, "sims").and_then(|v| v.as_u64()).unwrap_or(64);
    let sims = u32::try_from(sims).map_err(|_| LearnError::Config(format!("--sims {sims}: too many")))?;
    let mut config = crate::flags::with_settings(&default_config(game, sims, seed, threads), given)?;
    if let Some(init) = config.init.clone() {
        config.net = init_network(&init, given, |net| Ok(net_config(game, net)?.spec()))?;
    }
    config.selfplay.in_flight = config.selfplay.in_flight.min(config.games_per_generation);
    config.min_window = config.min_window.min(config.window);
    if config.selfplay.random_opening_share == 0.0 {
        if crate::flags::leaf(given, "random_opening_plies").is_some() {
            return Err(LearnError::Config(
                "--random-opening-plies sets how long random openings are; give --random-opening-share too".into(),
            ));
        }
        config.selfplay.random_opening_plies = 0;
    }
    config.check(game)?;
    Ok(config)
}

impl AzConfig {
    /// Refuses settings out of range and those that would do nothing, naming the flag.
    pub fn check<G: Game>(&self, game: &G) -> Result<(), LearnError> {
        let bad = |m: String| Err(LearnError::Config(m));
        let s = &self.selfplay;
        if s.search.sims == 0 {
            return bad("--sims must be at least 1".into());
        }
        for (what, n, max) in [
            ("--games-per-generation", self.games_per_generation, 65_536),
            ("--in-flight", s.in_flight, 4096),
            ("--batch", self.batch, 4096),
            ("--window", self.window, 5_000_000),
        ] {
            if n == 0 || n > max {
                return bad(format!("{what} {n}: give 1 to {max}"));
            }
        }
        for (what, v) in [
            ("--random-opening-share", s.random_opening_share),
            ("--value-mix", self.value_mix),
            ("--value-lambda", self.value_lambda),
            ("--value-score", self.value_score),
            ("--teacher-share", self.teacher_share),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return bad(format!("{what} {v}: give a share from 0 to 1"));
            }
        }
        if !(self.reuse > 0.0 && self.reuse <= 64.0) {
            return bad(format!("--reuse {}: give a number above 0 and at most 64", self.reuse));
        }
        if !(self.train.lr.is_finite() && self.train.lr > 0.0) {
            return bad(format!("--lr {} must be a positive number", self.train.lr));
        }
        if self.value_score > 0.0 && game.initial_state().score_scale().is_none() {
            return bad(format!(
                "--value-score {}: {} has no score margin; the games with one are cathedral, catan and sagrada",
                self.value_score,
                game.spec()
            ));
        }
        if self.teacher_share > 0.0 && self.teacher.is_none() {
            return bad("--teacher-share needs --teacher SPEC: the agent that plays those games".into());
        }
        if self.value_mix_warmup > 1_000_000 {
            return bad(format!("--value-mix-warmup {}: give 0 (off) to 1000000 generations", self.value_mix_warmup));
        }
        if !(0.0..=100.0).contains(&s.search.forced_playouts) {
            return bad(format!(
                "--forced-playouts {}: give K from 0 (off) to 100; KataGo uses 2",
                s.search.forced_playouts
            ));
        }
        if s.search.forced_playouts > 0.0 && s.search.root != crate::Root::Puct {
            return bad("--forced-playouts is for --root puct: the Gumbel root plans its own visits".into());
        }
        if s.random_opening_share > 0.0 && !(1..=1000).contains(&s.random_opening_plies) {
            return bad(format!("--random-opening-plies {}: give 1 to 1000", s.random_opening_plies));
        }
        match (&self.teacher, self.teacher_generations) {
            (None, 0) => {}
            (None, _) => return bad("--teacher-generations needs --teacher SPEC: the agent that plays them".into()),
            (Some(t), 0) => {
                return bad(format!("--teacher '{t}' needs --teacher-generations G: how many generations it plays"));
            }
            (Some(_), g) if g > 1_000_000 => return bad(format!("--teacher-generations {g}: give 1 to 1000000")),
            (Some(t), _) => {
                if self.external.is_some() {
                    return bad(
                        "--teacher plays its games here; with --selfplay external the players play them all".into()
                    );
                }
                // A wrong spec is refused now, not an hour into a run.
                crate::make_agent(game, t, 0).map_err(|e| LearnError::Config(format!("--teacher '{t}': {e}")))?;
            }
        }
        // The network spec against the game, before anything starts.
        fresh_network(game, &self.net, 0, 1)?;
        Ok(())
    }
}

/// The network `net` (a spec such as `resnet:blocks=4,channels=32`) describes for `game`: its
/// observation shape, actions, seats, and where its actions sit on the board if they do.
pub fn net_config<G: Game>(game: &G, net: &str) -> Result<NetConfig, LearnError> {
    let planes = game.action_planes();
    let planes = planes.as_ref().map(|p| (p.planes, &p.index[..]));
    let config = NetConfig::from_spec(net, &game.observation_shape(), game.num_actions(), game.num_players(), planes)?;
    if config.ownership && !game.initial_state().ownership(0, &mut Vec::new()) {
        return Err(LearnError::Config(format!(
            "net '{net}': ownership=true needs a game that says who holds each board cell ({} does not; \
             cathedral, connect4 and tictactoe do)",
            game.spec()
        )));
    }
    if config.score && game.initial_state().score_scale().is_none() {
        return Err(LearnError::Config(format!(
            "net '{net}': score=true needs a game whose final scores say by how much it was won ({} does \
             not; cathedral, catan and sagrada do)",
            game.spec()
        )));
    }
    Ok(config)
}
