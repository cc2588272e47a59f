//! Value learning on afterstates: the one-ply value agent (`value:model=F`, and `catan-td` on
//! Catan), the afterstate scorer it shares with the trainer, and TD(λ) self-play (the Catan self-play study's
//! Catan learner, generic over games).
//!
//! A value network here is meeple's policy-value network read for its value head only: each
//! seat's expected return seen from the viewer (viewer first). The agent values every legal
//! move by the position it leads to, seen from the mover; where chance follows the move (dice,
//! a card drawn) it averages the network's values over the chance outcomes, weighted by their
//! probabilities. All the positions of one decision, or of many games' decisions, go through
//! the network in one forward pass.
//!
//! The trainer plays many games side by side, greedy on the network's afterstate values with a
//! rare uniformly random move, records each mover's predictions, and after each game trains
//! every prediction toward its λ-return: the mover's next prediction mixed with the ones after
//! it and the game's result (TD(λ), forward view). A random move cuts the chain: the prediction
//! before it learns the value of the move the network would have played, as in Watkins' Q(λ)
//! (the Catan self-play study dropped the predictions before such a move).

use crate::LearnError;
use meeple_game::{Action, Agent, Budget, Error, Game, Player, Rng, State, Turn, rng_from_seed};
use meeple_nn::{Batch, NetConfig, Network, Sidecar, TrainConfig, Trainer};
use rand::RngExt;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

/// Chance outcomes beyond which a move's afterstate is valued as it stands (before chance),
/// not averaged: keeps one decision's batch bounded in games with wide chance.
pub const MAX_OUTCOMES: usize = 64;

mod agent;
pub use agent::{Scorer, ValueAgent};

/// λ-returns of one seat's predictions: `values[t]` (each `seats` long) the predictions in
/// order, `cut[t]` the value to bootstrap from instead of continuing where the move after
/// prediction `t` was a random one, `result` the game's result; `out` gets one target per
/// prediction. `G[T-1] = result`, `G[t] = (1 - λ) V[t+1] + λ G[t+1]`, or `cut[t]` where given.
pub fn lambda_returns(values: &[&[f32]], cut: &[Option<&[f32]>], result: &[f32], lambda: f32, out: &mut Vec<f32>) {
    let s = result.len();
    let n = values.len();
    out.clear();
    out.resize(n * s, 0.0);
    if n == 0 {
        return;
    }
    out[(n - 1) * s..].copy_from_slice(result);
    for t in (0..n - 1).rev() {
        let (head, tail) = out.split_at_mut((t + 1) * s);
        let target = &mut head[t * s..];
        match cut[t] {
            Some(c) => target.copy_from_slice(c),
            None => {
                for k in 0..s {
                    target[k] = (1.0 - lambda) * values[t + 1][k] + lambda * tail[k];
                }
            }
        }
    }
}

/// Adds a finished game's training examples to `batch`: for each seat, its predictions'
/// observations, each with its λ-return ([`lambda_returns`]) toward the seat's later
/// predictions and the game's `result` (by seat), the targets seen from the seat (its own value
/// first, as its predictions are); `targets` is scratch space.
fn game_targets(
    records: &[Record],
    result: &[f64],
    seats: usize,
    lambda: f32,
    targets: &mut Vec<f32>,
    batch: &mut Batch,
) {
    for seat in 0..seats {
        // Against an opponent only the learner's seat recorded anything.
        let mine: Vec<&Record> = records.iter().filter(|r| r.seat == seat).collect();
        if mine.is_empty() {
            continue;
        }
        let values: Vec<&[f32]> = mine.iter().map(|r| &r.values[..]).collect();
        // A record's cut is the greedy value of the random move that followed it: stored on
        // the next record of the seat.
        let cut: Vec<Option<&[f32]>> =
            (0..mine.len()).map(|t| mine.get(t + 1).and_then(|r| r.greedy.as_deref())).collect();
        let view: Vec<f32> = (0..seats).map(|k| result[(seat + k) % seats] as f32).collect();
        lambda_returns(&values, &cut, &view, lambda, targets);
        for (r, target) in mine.iter().zip(targets.chunks(seats)) {
            batch.obs.extend_from_slice(&r.obs);
            batch.value.extend_from_slice(target);
            batch.size += 1;
        }
    }
}

/// A TD(λ) run's settings; each is the flag of the same name (`--batch-games`), its doc the
/// flag's help, [`TdConfig::report`] (or [`TdConfig::value`]) the defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct TdConfig {
    /// The game spec: the command's, not a flag.
    #[arg(skip)]
    pub game: String,
    /// The value network: `resmlp:blocks=B,width=W` (the Catan self-play study: blocks=4,width=500),
    /// `mlp:layers=L,width=W`, or `resnet:...` for board planes.
    #[arg(long, value_name = "SPEC")]
    pub net: String,
    /// λ of the λ-returns: 0 trains each prediction toward the mover's next one (the Catan self-play study),
    /// 1 toward the game's result.
    #[arg(long)]
    pub lambda: f64,
    /// Chance of a uniformly random move at each decision (the Catan self-play study: 1 in 1,000).
    #[arg(long)]
    pub epsilon: f64,
    /// Factor applied to --epsilon after each finished game (1: constant; Sarswat et al. decays it).
    #[arg(long, value_name = "F")]
    #[serde(default = "one")]
    pub epsilon_decay: f64,
    /// The agent the learner plays against (Sarswat et al.'s ANN and CNN: `random`), in every seat
    /// but the learner's, which alternates from game to game; `self` (or none): self-play,
    /// every seat learning.
    #[arg(long, value_name = "SPEC")]
    #[serde(default)]
    pub opponent: Option<String>,
    /// Every seat's target when a game ends undecided (Catan's turn limit): 0 teaches that
    /// stalling loses, where the even split can make doing nothing look safe; default: the
    /// game's own returns.
    #[arg(long, value_name = "V")]
    #[serde(default)]
    pub undecided: Option<f64>,
    /// Share of each seat's final target from its score against the best score (0: the
    /// result alone): a denser signal, as the Catan self-play study trained toward finishing places.
    #[arg(long)]
    #[serde(default)]
    pub score_weight: f64,
    /// Games played side by side; their afterstates go through the network in one pass.
    #[arg(long)]
    pub parallel: usize,
    /// Finished games per training round (the Catan self-play study: 1, later 2 and 4).
    #[arg(long)]
    pub batch_games: usize,
    /// Positions per optimiser step within a round (the default: the whole round in one step,
    /// as the report).
    #[arg(long)]
    pub minibatch: usize,
    /// AdamW's learning rate (the Catan self-play study: 5e-5, later 1e-5).
    #[arg(long)]
    pub lr: f64,
    /// Anneal the learning rate by a cosine to a tenth of --lr over the run (its --minutes or
    /// --games, whichever it reaches first at its pace so far); default: constant.
    #[arg(long)]
    #[serde(default)]
    pub lr_decay: bool,
    /// AdamW's decoupled weight decay.
    #[arg(long)]
    pub weight_decay: f64,
    /// Largest gradient norm (the Catan self-play study: 0.1).
    #[arg(long)]
    pub clip: f64,
    /// Clip the gradient by its one global norm (PyTorch's `clip_grad_norm_`, as the Catan self-play study
    /// trained) instead of each tensor's own norm (how the shipped Catan networks were trained).
    #[arg(long)]
    #[serde(default)]
    pub clip_global: bool,
    /// Threshold of the Huber value loss on the [0, 1] value scale (the Catan self-play study's smooth L1 has
    /// 1 on a 1-3 place scale, i.e. 0.5 here); 0 for the squared error.
    #[arg(long)]
    pub huber: f64,
    /// The run's seed: `--seed`.
    #[arg(skip)]
    pub seed: u64,
    /// The run's threads: `--threads`.
    #[arg(skip)]
    pub threads: usize,
    /// Start from this checkpoint's weights instead of fresh ones: a value network of the same
    /// shape, perhaps trained on another variant (the beginner board's for shuffled boards), or
    /// one for a variant this game extends (Catan without trading for Catan with it: the new
    /// inputs start at weight zero). Its --net is the checkpoint's (a --net that differs is
    /// refused). A resumed run goes on from its own checkpoint: give the command it was started
    /// with.
    #[arg(long, value_name = "FILE")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init: Option<String>,
}

impl crate::flags::Settings for TdConfig {
    fn defaults() -> serde_json::Value {
        serde_json::to_value(TdConfig::report("")).expect("configs serialise")
    }
}

impl TdConfig {
    /// The Catan self-play study's recipe for `game`: the 4x500 residual MLP, λ 0 (each prediction learns
    /// the next), a random move one time in 1,000, Huber loss, clipping at 0.1, AdamW at 5e-5.
    pub fn report(game: &str) -> Self {
        TdConfig {
            game: game.to_string(),
            net: "resmlp:blocks=4,width=500".into(),
            lambda: 0.0,
            epsilon: 1e-3,
            epsilon_decay: 1.0,
            opponent: None,
            undecided: None,
            score_weight: 0.0,
            parallel: 32,
            batch_games: 1,
            minibatch: 1 << 16,
            lr: 5e-5,
            lr_decay: false,
            weight_decay: 1e-2,
            clip: 0.1,
            clip_global: false,
            huber: 0.5,
            seed: 1,
            threads: 1,
            init: None,
        }
    }

    /// The defaults `train td` takes on `game`: [`TdConfig::report`]'s, except on Catan, where
    /// that recipe (a 4x500 network, λ 0, 5e-5) did not learn in the project's runs and the one
    /// behind every shipped Catan network does: the 2x256 residual MLP, λ 0.9, AdamW at 1e-3,
    /// minibatches of 256 positions from 2 games at a time, the result with a half share of the
    /// score margin as the target, games without a winner scored 0 (catan-td's self-play stage).
    pub fn for_game<G: Game>(game: &G) -> Self {
        let mut c = TdConfig::report(&game.spec().to_string());
        if G::INFO.name == "catan" {
            c.net = "resmlp:blocks=2,width=256".into();
            c.lambda = 0.9;
            c.lr = 1e-3;
            c.minibatch = 256;
            c.batch_games = 2;
            c.score_weight = 0.5;
            c.undecided = Some(0.0);
        }
        c
    }

    /// Sarswat et al.'s value network (Algorithm 3): a one-layer MLP, ε-greedy one-ply games
    /// against `random`, each afterstate trained toward the result (λ 1), AdamW at 1e-3.
    pub fn value(game: &str) -> Self {
        let mut c = TdConfig::report(game);
        c.net = "mlp:layers=1,width=256".into();
        c.lambda = 1.0;
        c.epsilon = 0.1;
        c.epsilon_decay = 0.9995;
        c.opponent = Some("random".into());
        c.minibatch = 256;
        c.lr = 1e-3;
        c.huber = 0.0;
        c.clip = 1.0;
        c.weight_decay = 1e-4;
        c
    }

    /// The optimiser's settings: AdamW after a one-step warm-up, constant or (--lr-decay)
    /// annealed over the run, Huber or squared value loss, no policy or auxiliary heads.
    pub fn train(&self) -> TrainConfig {
        TrainConfig {
            clip_global: self.clip_global,
            value_weight: 1.0,
            huber: (self.huber > 0.0).then_some(self.huber),
            ..crate::rl::head_optimiser(self.lr, self.lr_decay, self.weight_decay, self.clip)
        }
    }

    /// Checks ranges; names what is wrong.
    pub fn check(&self) -> Result<(), LearnError> {
        let bad = |what: String| Err(LearnError::Config(what));
        if !(0.0..=1.0).contains(&self.lambda) {
            return bad(format!("--lambda {} must be within 0..=1", self.lambda));
        }
        if !(0.0..=1.0).contains(&self.score_weight) {
            return bad(format!("--score-weight {} must be within 0..=1", self.score_weight));
        }
        if self.undecided.is_some_and(|v| !(0.0..=1.0).contains(&v)) {
            return bad("--undecided must be within 0..=1".into());
        }
        if !(0.0..=1.0).contains(&self.epsilon_decay) {
            return bad(format!("--epsilon-decay {} must be within 0..=1", self.epsilon_decay));
        }
        if !(0.0..=1.0).contains(&self.epsilon) {
            return bad(format!("--epsilon {} must be within 0..=1", self.epsilon));
        }
        if !(1..=4096).contains(&self.parallel) {
            return bad(format!("--parallel {} must be within 1..=4096", self.parallel));
        }
        if !(1..=1024).contains(&self.batch_games) {
            return bad(format!("--batch-games {} must be within 1..=1024", self.batch_games));
        }
        if self.minibatch == 0 {
            return bad("--minibatch must be at least 1".into());
        }
        if !(self.lr.is_finite() && self.lr > 0.0) {
            return bad(format!("--lr {} must be a positive number", self.lr));
        }
        if !(self.huber.is_finite() && self.huber >= 0.0) {
            return bad(format!("--huber {} must be a positive number, or 0 for the squared error", self.huber));
        }
        if !(self.clip.is_finite() && self.clip > 0.0) {
            return bad(format!("--clip {} must be a positive number", self.clip));
        }
        if !(self.weight_decay.is_finite() && self.weight_decay >= 0.0) {
            return bad(format!("--weight-decay {} must be a number from 0", self.weight_decay));
        }
        Ok(())
    }
}

fn one() -> f64 {
    1.0
}

/// One round's figures: games finished, their mean length and dice rolls (where the game
/// counts them), the loss.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TdRound {
    pub games: u64,
    pub positions: u64,
    pub loss: f64,
    pub mean_plies: f64,
    /// The game's own metrics averaged over the round's games (Catan: `dice_rolls`).
    pub metrics: Vec<(String, f64)>,
    /// Share of games a decisive result ended (not a draw or turn limit).
    pub decided: f64,
    pub positions_per_second: f64,
}

/// One prediction made during a game.
struct Record {
    seat: Player,
    obs: Vec<f32>,
    values: Vec<f32>,
    /// Where the move after this seat's previous prediction was random: the greedy value.
    greedy: Option<Vec<f32>>,
}

/// A finished game: its records, final targets (by seat), plies, the game's metrics, and
/// whether a result decided it.
type Finished = (Vec<Record>, Vec<f64>, u64, Vec<(&'static str, f64)>, bool);

struct Slot<S> {
    state: S,
    /// The learner's seat where it plays an opponent.
    learner: Option<Player>,
    opponent: Option<meeple_game::BoxedAgent<S>>,
    plies: u64,
    records: Vec<Record>,
    /// Per seat: the greedy value vector of its latest random move, to attach to its
    /// previous prediction.
    pending_cut: Vec<Option<Vec<f32>>>,
}

/// One thread's share of a step: the afterstates of its games and each game's candidates.
struct Part {
    scorer: Scorer,
    legal: Vec<Action>,
    /// Per game of the share: the mover and the range of its candidates.
    ranges: Vec<(Player, std::ops::Range<usize>)>,
}

impl Part {
    /// Builds and values the afterstates of `states` (each at a player's turn); `serial` keeps
    /// the network on the calling thread.
    fn score<S: State>(&mut self, states: &[&S], net: &Network, serial: bool) -> Result<(), LearnError> {
        self.scorer.clear();
        self.ranges.clear();
        for state in states {
            let mover = state.current_player().expect("a player's turn");
            state.legal_actions(&mut self.legal);
            self.ranges.push((mover, self.scorer.add(*state, mover, &self.legal)));
        }
        self.scorer.evaluate(net, serial)
    }
}

/// Self-play and training: the trainer and the state of the games in flight.
pub struct TdRun<G: Game> {
    game: G,
    config: TdConfig,
    pub trainer: Trainer,
    net: Arc<Network>,
    slots: Vec<Slot<G::State>>,
    /// One per thread: each values the afterstates of its share of the games in flight.
    parts: Vec<Part>,
    rng: Rng,
    finished: Vec<Finished>,
    outcomes: Vec<(Action, f64)>,
    pub progress: crate::run::Progress,
    targets: Vec<f32>,
    epsilon: f64,
    /// The exploration rate reached (decayed per game; none before the first game ends), kept
    /// in the sidecar's progress.
    epsilon_reached: Option<f64>,
    /// Games started (seeds the opponents and picks the learner's seat).
    started: u64,
    /// Games the run may still train on (the `--games` limit less those trained); none: no
    /// limit.
    left: Option<u64>,
    /// The trainer (`td`; `value` for `train value --data selfplay`).
    kind: &'static crate::run::Kind,
}

impl<G: Game> TdRun<G> {
    /// A fresh run (a new network from the config's seed), or the one whose checkpoint is
    /// `resume`.
    pub fn new(game: G, mut config: TdConfig, resume: Option<&Path>) -> Result<Self, LearnError> {
        config.check()?;
        if config.score_weight > 0.0 && game.initial_state().score_scale().is_none() {
            return Err(LearnError::Config(format!(
                "--score-weight {} mixes the final score margin into the target; {} has no score margin (its \
                 scores only say who won), so it would change nothing",
                config.score_weight,
                game.spec()
            )));
        }
        let seats = game.num_players();
        let shape = game.observation_shape();
        let (trainer, progress, epsilon) = match (resume, &config.init) {
            (None, Some(init)) => {
                let (mut trainer, side) = Trainer::warm_start(Path::new(init), config.train(), config.threads)
                    .map_err(|e| LearnError::Config(e.to_string()))?;
                let c = trainer.config();
                // A network for a variant this game extends (Catan without player trading, for
                // Catan with it) starts with the new inputs weighted zero.
                let narrower = side.game.parse().ok().and_then(|spec| G::from_spec(&spec).ok());
                if (c.input != shape || c.actions != game.num_actions())
                    && c.seats == seats
                    && narrower.is_some_and(|narrow| game.extends(&narrow))
                {
                    trainer = Trainer::warm_start_widened(
                        Path::new(init),
                        &shape,
                        game.num_actions(),
                        config.train(),
                        config.threads,
                    )
                    .map_err(|e| LearnError::Config(e.to_string()))?
                    .0;
                }
                let c = trainer.config();
                if c.input != shape || c.actions != game.num_actions() || c.seats != seats {
                    return Err(LearnError::Config(format!(
                        "--init '{init}': a network for {} ({:?} in, {} actions, {} seats) does not fit {}",
                        side.game,
                        c.input,
                        c.actions,
                        c.seats,
                        game.spec()
                    )));
                }
                config.net = c.spec();
                (trainer, crate::run::Progress::default(), None)
            }
            (None, None) => {
                let net = NetConfig::from_spec(&config.net, &shape, game.num_actions(), seats, None)
                    .map_err(|e| LearnError::Config(e.to_string()))?;
                (Trainer::new(net, config.train(), config.seed, config.threads), crate::run::Progress::default(), None)
            }
            (Some(path), _) => {
                let r = Trainer::resume(path, &game.spec().to_string(), config.train(), config.threads)
                    .map_err(|e| LearnError::Config(e.to_string()))?;
                let stored = r.sidecar.run.get("progress");
                let epsilon = stored.and_then(|p| p.get("epsilon")).and_then(|e| e.as_f64());
                (r.trainer, crate::run::Progress::from_sidecar(stored)?, epsilon)
            }
        };
        let input = trainer.config().input_len();
        let net = Arc::new(trainer.network(config.threads));
        let rng = rng_from_seed(config.seed ^ progress.episodes.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut run = TdRun {
            slots: Vec::new(),
            parts: (0..config.threads.clamp(1, config.parallel.max(1)))
                .map(|_| Part { scorer: Scorer::new(seats, input), legal: Vec::new(), ranges: Vec::new() })
                .collect(),
            rng,
            finished: Vec::new(),
            outcomes: Vec::new(),
            targets: Vec::new(),
            epsilon: 0.0,
            epsilon_reached: epsilon,
            started: 0,
            left: None,
            kind: &TD,
            trainer,
            net,
            game,
            config,
            progress,
        };
        run.epsilon = epsilon.unwrap_or(run.config.epsilon);
        run.started = run.progress.episodes;
        for _ in 0..run.config.parallel {
            let slot = run.fresh_slot()?;
            run.slots.push(slot);
        }
        Ok(run)
    }

    fn fresh_slot(&mut self) -> Result<Slot<G::State>, LearnError> {
        let n = self.game.num_players();
        self.started += 1;
        let (learner, opponent) = match self.config.opponent.as_ref().filter(|o| o.as_str() != "self") {
            None => (None, None),
            Some(spec) => {
                let seed = self.config.seed.wrapping_mul(31).wrapping_add(self.started);
                let agent = crate::make_agent(&self.game, spec, seed)?;
                (Some((self.started as usize) % n), Some(agent))
            }
        };
        Ok(Slot {
            learner,
            opponent,
            state: self.game.initial_state(),
            plies: 0,
            records: Vec::new(),
            pending_cut: vec![None; n],
        })
    }

    /// The sidecar of a checkpoint of this run, at `seconds` trained.
    pub fn sidecar(&self, seconds: f64) -> Sidecar {
        Sidecar {
            format: meeple_nn::SIDECAR_FORMAT,
            net: self.trainer.config().clone(),
            game: self.game.spec().to_string(),
            step: self.trainer.step(),
            run: serde_json::json!({
                "trainer": self.kind.name,
                "config": self.config,
                "progress": self.progress.to_sidecar(seconds, &[("epsilon", self.epsilon_reached.into())]),
                "value_only": true,
            }),
            commands: Vec::new(),
        }
    }

    /// The same run as `value` learning from self-play.
    pub fn as_value(mut self) -> Self {
        self.kind = &VALUE_SELFPLAY;
        self
    }

    /// Limits the games the next rounds train on to `games` (none: no limit), so a run asked
    /// for N games trains on exactly N although several may finish in one step.
    pub fn set_left(&mut self, games: Option<u64>) {
        self.left = games;
    }

    /// Plays until `batch_games` games have finished, then trains on them: one round. Games
    /// that finish in the same step all train, unless the run's limit ([`TdRun::set_left`])
    /// leaves fewer: those beyond it wait for a later round.
    pub fn round(&mut self) -> Result<TdRound, LearnError> {
        let started = std::time::Instant::now();
        let positions_before = self.progress.decisions;
        let left = self.left.map_or(usize::MAX, |l| l.clamp(1, usize::MAX as u64) as usize);
        while self.finished.len() < self.config.batch_games.min(left) {
            self.step()?;
        }
        let games: Vec<Finished> = self.finished.drain(..self.finished.len().min(left)).collect();
        let mut round = TdRound { games: games.len() as u64, ..TdRound::default() };
        let mut batch = Batch::default();
        let seats = self.game.num_players();
        let mut sums: Vec<(&'static str, f64)> = Vec::new();
        for (records, result, plies, metrics, decided) in &games {
            round.mean_plies += *plies as f64 / games.len() as f64;
            round.decided += *decided as u8 as f64 / games.len() as f64;
            for &(name, v) in metrics {
                match sums.iter_mut().find(|(n, _)| *n == name) {
                    Some(s) => s.1 += v / games.len() as f64,
                    None => sums.push((name, v / games.len() as f64)),
                }
            }
            game_targets(records, result, seats, self.config.lambda as f32, &mut self.targets, &mut batch);
        }
        round.metrics = sums.into_iter().map(|(n, v)| (n.to_string(), v)).collect();
        round.positions = batch.size as u64;
        round.loss = self.train(&batch)?;
        round.positions_per_second =
            (self.progress.decisions - positions_before) as f64 / started.elapsed().as_secs_f64();
        self.progress.episodes += round.games;
        self.progress.steps = self.trainer.step();
        Ok(round)
    }

    /// Minibatch steps over `batch` in a shuffled order; the mean loss.
    fn train(&mut self, batch: &Batch) -> Result<f64, LearnError> {
        let n = batch.size;
        if n == 0 {
            return Ok(0.0);
        }
        let (input, seats, actions) =
            (self.trainer.config().input_len(), self.game.num_players(), self.game.num_actions());
        let mut order: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = self.rng.random_range(0..=i);
            order.swap(i, j);
        }
        let mut total = 0.0;
        let mut steps = 0;
        for chunk in order.chunks(self.config.minibatch) {
            let mb = value_batch(&batch.obs, &batch.value, (input, seats, actions), chunk);
            let losses = self.trainer.train_step(&mb).map_err(|e| LearnError::Shape(e.to_string()))?;
            total += losses.value;
            steps += 1;
        }
        self.net = Arc::new(self.trainer.network(self.config.threads));
        Ok(total / steps as f64)
    }

    /// One decision in every game in flight (chance resolved first). The afterstates are built
    /// and valued in one forward pass per thread, each thread taking a contiguous share of the
    /// games (building them was left on one core while only the network used the threads); the
    /// moves are then chosen on this thread, in slot order, so a run's choices depend on its
    /// seed and thread count only.
    fn step(&mut self) -> Result<(), LearnError> {
        for i in 0..self.slots.len() {
            // Chance first, then a finished game is replaced.
            loop {
                let slot = &mut self.slots[i];
                match slot.state.turn() {
                    Turn::Chance => {
                        let o = meeple_game::draw_chance(&slot.state, &mut self.outcomes, &mut self.rng);
                        slot.state.apply_unchecked(o);
                    }
                    Turn::Terminal => {
                        let fresh = self.fresh_slot()?;
                        let done = std::mem::replace(&mut self.slots[i], fresh);
                        self.finish(done);
                    }
                    Turn::Player(p) if slot.learner.is_some_and(|l| l != p) => {
                        let agent = slot.opponent.as_mut().expect("an opponent where the learner has a seat");
                        let a = agent.act(&slot.state, &Budget::default())?;
                        slot.state.apply(a)?;
                        slot.plies += 1;
                    }
                    Turn::Player(_) => break,
                }
            }
        }
        let per = self.slots.len().div_ceil(self.parts.len());
        let states: Vec<&G::State> = self.slots.iter().map(|s| &s.state).collect();
        let net = &*self.net;
        if self.parts.len() == 1 {
            self.parts[0].score(&states, net, false)?;
        } else {
            std::thread::scope(|scope| {
                let mut shares = states.chunks(per).zip(self.parts.iter_mut());
                let first = shares.next();
                let handles: Vec<_> =
                    shares.map(|(states, part)| scope.spawn(move || part.score(states, net, true))).collect();
                let mut result = first.map_or(Ok(()), |(states, part)| part.score(states, net, true));
                for h in handles {
                    let r = h.join().map_err(|_| LearnError::Shape("a scoring thread panicked".into()))?;
                    result = result.and(r);
                }
                result
            })?;
        }
        for i in 0..self.slots.len() {
            let part = &self.parts[i / per];
            let scorer = &part.scorer;
            let (mover, range) = part.ranges[i % per].clone();
            let greedy = scorer.best(range.clone(), &mut self.rng);
            let random = range.len() > 1 && self.rng.random_bool(self.epsilon);
            let chosen = if random { self.rng.random_range(range.clone()) } else { greedy };
            let slot = &mut self.slots[i];
            let (action, _) = scorer.candidate(chosen);
            slot.state.apply_unchecked(action);
            slot.plies += 1;
            if random && chosen != greedy {
                slot.pending_cut[mover] = Some(scorer.candidate(greedy).1.to_vec());
            }
            let mut outcome = None;
            if slot.state.turn() == Turn::Chance {
                let o = meeple_game::draw_chance(&slot.state, &mut self.outcomes, &mut self.rng);
                slot.state.apply_unchecked(o);
                outcome = Some(o);
            }
            if let Some((obs, values)) = scorer.position(chosen, outcome) {
                let greedy = slot.pending_cut[mover].take();
                slot.records.push(Record { seat: mover, obs: obs.to_vec(), values: values.to_vec(), greedy });
                self.progress.decisions += 1;
            }
        }
        Ok(())
    }

    fn finish(&mut self, slot: Slot<G::State>) {
        let returns = slot.state.returns().expect("a finished game");
        let result: Vec<f64> = returns.as_slice().to_vec();
        let n = result.len() as f64;
        let decided = result.iter().any(|&r| (r - 1.0 / n).abs() > 1e-9);
        let mut result = match self.config.undecided {
            Some(v) if !decided => vec![v; result.len()],
            _ => result,
        };
        let s = self.config.score_weight;
        if s > 0.0 {
            let scores = slot.state.scores();
            let scores = scores.as_slice();
            let best = scores.iter().cloned().fold(f64::MIN, f64::max);
            if best > 0.0 {
                for (r, &score) in result.iter_mut().zip(scores) {
                    *r = (1.0 - s) * *r + s * (score / best).clamp(0.0, 1.0);
                }
            }
        }
        self.epsilon *= self.config.epsilon_decay;
        self.epsilon_reached = Some(self.epsilon);
        self.finished.push((slot.records, result, slot.plies, slot.state.metrics(), decided));
    }

    /// The current network (for evaluation).
    pub fn network(&self) -> Arc<Network> {
        self.net.clone()
    }
}

/// TD(λ)'s description, and the same trainer as `value` learning from self-play.
pub static TD: crate::run::Kind = crate::run::Kind::new("td");
pub static VALUE_SELFPLAY: crate::run::Kind = crate::run::Kind::new("value");

impl<G: Game> crate::run::Learner for TdRun<G> {
    fn kind(&self) -> &'static crate::run::Kind {
        self.kind
    }

    fn settings(&self) -> serde_json::Value {
        serde_json::to_value(&self.config).expect("configs serialise")
    }

    fn agent(&self) -> String {
        "value:model={model}".into()
    }

    fn round(&mut self, budget: &crate::run::Budget<'_>) -> Result<crate::run::Round, LearnError> {
        if let Some(anneal) = budget.anneal {
            self.trainer.set_anneal(anneal);
        }
        self.left = budget.games_left;
        let r = TdRun::round(self)?;
        let mut round = crate::run::Round::default();
        round.loss("value", r.loss);
        round.figure("plies", r.mean_plies);
        round.figure("decided", r.decided);
        if let Some(e) = self.epsilon_reached {
            round.figure("epsilon", e);
        }
        for (name, v) in &r.metrics {
            round.figure(name, *v);
        }
        round.stat("positions_per_second", r.positions_per_second);
        round.stat("round_positions", r.positions as f64);
        round.stat("lr", self.trainer.lr());
        Ok(round)
    }

    fn progress(&self) -> crate::run::Progress {
        self.progress.clone()
    }

    fn save(&self, path: &Path, save: &crate::run::Save<'_>) -> Result<(), LearnError> {
        if save.resumable {
            self.trainer.save_resumable(path, self.sidecar(save.seconds))?;
        } else {
            self.trainer.save(path, self.sidecar(save.seconds))?;
        }
        Ok(())
    }
}

/// A value-only training batch of the positions `idx` of `obs` and `value` (`input` and `seats`
/// values each; `actions`: the network's policy size, whose targets stay empty).
pub(crate) fn value_batch(
    obs: &[f32],
    value: &[f32],
    (input, seats, actions): (usize, usize, usize),
    idx: &[usize],
) -> Batch {
    let b = idx.len();
    let mut mb = Batch {
        size: b,
        obs: Vec::with_capacity(b * input),
        legal: vec![0.0; b * actions],
        policy: vec![0.0; b * actions],
        policy_weight: vec![0.0; b],
        value: Vec::with_capacity(b * seats),
        ..Batch::default()
    };
    for &i in idx {
        mb.obs.extend_from_slice(&obs[i * input..(i + 1) * input]);
        mb.value.extend_from_slice(&value[i * seats..(i + 1) * seats]);
    }
    mb
}

#[cfg(test)]
mod tests;
