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

/// Where a candidate's value comes from: a row of the network's batch or a game's result.
#[derive(Clone, Copy, Debug)]
enum Source {
    Row(u32),
    Result(u32),
}

#[derive(Clone, Copy, Debug)]
struct Leaf {
    probability: f32,
    /// The chance outcome that led here (none: the move's own afterstate).
    outcome: Option<Action>,
    source: Source,
}

#[derive(Clone, Copy, Debug)]
struct Candidate {
    action: Action,
    leaves: (u32, u32),
}

/// The afterstates of one or many decisions, gathered for one forward pass.
#[derive(Default)]
pub struct Scorer {
    seats: usize,
    input: usize,
    obs: Vec<f32>,
    rows: usize,
    results: Vec<f32>,
    leaves: Vec<Leaf>,
    candidates: Vec<Candidate>,
    /// Each candidate's value vector (viewer first), after [`Scorer::evaluate`].
    values: Vec<f32>,
    /// The network's outputs by row.
    row_values: Vec<f32>,
    buf: Vec<f32>,
    outcomes: Vec<(Action, f64)>,
    /// Weigh an action by the position it completes where the game gives one
    /// ([`State::completed`]), not by its afterstate.
    completed: bool,
}

impl Scorer {
    /// An empty scorer for a game of `seats` players and a network taking `input` values.
    pub fn new(seats: usize, input: usize) -> Self {
        Scorer { seats, input, ..Scorer::default() }
    }

    /// Forgets every decision.
    pub fn clear(&mut self) {
        self.obs.clear();
        self.rows = 0;
        self.results.clear();
        self.leaves.clear();
        self.candidates.clear();
        self.values.clear();
    }

    /// Adds the afterstates of `actions` in `state` (`mover` to play); returns the range of
    /// their candidates.
    pub fn add<S: State>(&mut self, state: &S, mover: Player, actions: &[Action]) -> std::ops::Range<usize> {
        let first = self.candidates.len();
        for &action in actions {
            let start = self.leaves.len() as u32;
            let next = match self.completed.then(|| state.completed(action)).flatten() {
                Some(done) => done,
                None => {
                    let mut next = state.clone();
                    next.apply_unchecked(action);
                    next
                }
            };
            let mut spread = false;
            if next.turn() == Turn::Chance {
                next.chance_outcomes(&mut self.outcomes);
                if (1..=MAX_OUTCOMES).contains(&self.outcomes.len()) {
                    spread = true;
                    let outcomes = std::mem::take(&mut self.outcomes);
                    for &(o, p) in &outcomes {
                        let mut after = next.clone();
                        after.apply_unchecked(o);
                        self.leaf(&after, mover, p as f32, Some(o));
                    }
                    self.outcomes = outcomes;
                }
            }
            if !spread {
                self.leaf(&next, mover, 1.0, None);
            }
            self.candidates.push(Candidate { action, leaves: (start, self.leaves.len() as u32) });
        }
        first..self.candidates.len()
    }

    fn leaf<S: State>(&mut self, state: &S, mover: Player, probability: f32, outcome: Option<Action>) {
        let source = match state.returns() {
            Some(r) => {
                let at = self.results.len() as u32;
                let r = r.as_slice();
                let n = r.len();
                self.results.extend((0..self.seats).map(|k| if k < n { r[(mover + k) % n] as f32 } else { 0.0 }));
                Source::Result(at)
            }
            None => {
                state.observation(mover, &mut self.buf);
                debug_assert_eq!(self.buf.len(), self.input);
                self.obs.extend_from_slice(&self.buf);
                self.rows += 1;
                Source::Row(self.rows as u32 - 1)
            }
        };
        self.leaves.push(Leaf { probability, outcome, source });
    }

    /// Positions waiting for the network.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Runs the network over every gathered position (one pass; on the calling thread where
    /// `serial`) and values each candidate.
    pub fn evaluate(&mut self, net: &Network, serial: bool) -> Result<(), LearnError> {
        let seats = self.seats;
        self.row_values.clear();
        if self.rows > 0 {
            let out =
                if serial { net.evaluate_serial(&self.obs, self.rows) } else { net.evaluate(&self.obs, self.rows) }
                    .map_err(|e| LearnError::Shape(e.to_string()))?;
            self.row_values = out.values;
        }
        let mut values = std::mem::take(&mut self.values);
        values.clear();
        values.resize(self.candidates.len() * seats, 0.0);
        for (c, candidate) in self.candidates.iter().enumerate() {
            let out = &mut values[c * seats..(c + 1) * seats];
            for leaf in &self.leaves[candidate.leaves.0 as usize..candidate.leaves.1 as usize] {
                for (o, v) in out.iter_mut().zip(self.leaf_values(leaf)) {
                    *o += leaf.probability * v;
                }
            }
        }
        self.values = values;
        Ok(())
    }

    fn leaf_values(&self, leaf: &Leaf) -> &[f32] {
        let s = self.seats;
        match leaf.source {
            Source::Row(r) => &self.row_values[r as usize * s..(r as usize + 1) * s],
            Source::Result(at) => &self.results[at as usize..at as usize + s],
        }
    }

    /// Candidate `c`'s action and value vector (mover first).
    pub fn candidate(&self, c: usize) -> (Action, &[f32]) {
        (self.candidates[c].action, &self.values[c * self.seats..(c + 1) * self.seats])
    }

    /// The candidate in `range` the mover values most (ties broken by `rng`).
    pub fn best(&self, range: std::ops::Range<usize>, rng: &mut Rng) -> usize {
        let mut best = range.start;
        let mut ties = 0u32;
        let mut top = f32::NEG_INFINITY;
        for c in range {
            let v = self.values[c * self.seats];
            if v > top + 1e-7 {
                (best, top, ties) = (c, v, 1);
            } else if (v - top).abs() <= 1e-7 {
                ties += 1;
                if rng.random_range(0..ties) == 0 {
                    best = c;
                }
            }
        }
        best
    }

    /// The observation and value vector of candidate `c`'s position after `outcome` (the chance
    /// outcome that followed, none where the move's afterstate was valued whole); none for a
    /// finished game or an outcome not among those scored.
    pub fn position(&self, c: usize, outcome: Option<Action>) -> Option<(&[f32], &[f32])> {
        let candidate = self.candidates[c];
        let leaves = &self.leaves[candidate.leaves.0 as usize..candidate.leaves.1 as usize];
        let leaf = if leaves.len() == 1 && leaves[0].outcome.is_none() {
            &leaves[0]
        } else {
            leaves.iter().find(|l| l.outcome == outcome && outcome.is_some())?
        };
        match leaf.source {
            Source::Row(r) => {
                let r = r as usize;
                Some((&self.obs[r * self.input..(r + 1) * self.input], self.leaf_values(leaf)))
            }
            Source::Result(_) => None,
        }
    }
}

/// The one-ply agent on a value network: plays the move whose afterstate the network values
/// most for the mover, averaging over chance outcomes. Deterministic but for ties (`seed`).
pub struct ValueAgent<S> {
    name: String,
    net: Arc<Network>,
    model: String,
    scorer: Scorer,
    legal: Vec<Action>,
    rng: Rng,
    _state: std::marker::PhantomData<fn(&S)>,
}

impl<S: State> ValueAgent<S> {
    /// The agent `name` (`value` or `catan-td`) on `net`, loaded from `model`.
    pub fn new(name: &str, net: Arc<Network>, model: &str, seats: usize, seed: u64) -> Self {
        let input = net.config().input_len();
        ValueAgent {
            name: name.to_string(),
            net,
            model: model.to_string(),
            scorer: Scorer::new(seats, input),
            legal: Vec::new(),
            rng: rng_from_seed(seed),
            _state: std::marker::PhantomData,
        }
    }

    /// Weighs each action by the position it completes where the game gives one
    /// ([`State::completed`]: Catan's offers and answers by the trade), not by its afterstate.
    pub fn weigh_completed(mut self, on: bool) -> Self {
        self.scorer.completed = on;
        self
    }
}

impl<S: State> Agent<S> for ValueAgent<S> {
    fn spec(&self) -> String {
        let offer = if self.scorer.completed { ",offer=trade" } else { "" };
        format!("{}:model={}{offer}", self.name, self.model)
    }

    fn act(&mut self, state: &S, _budget: &Budget) -> Result<Action, Error> {
        let mover = state.current_player().ok_or_else(|| Error::Invalid("no player to move".into()))?;
        state.legal_actions(&mut self.legal);
        match self.legal.len() {
            0 => return Err(Error::Invalid("no legal move".into())),
            1 => return Ok(self.legal[0]),
            _ => {}
        }
        self.scorer.clear();
        let range = self.scorer.add(state, mover, &self.legal);
        self.scorer.evaluate(&self.net, false).map_err(Error::from)?;
        Ok(self.scorer.candidate(self.scorer.best(range, &mut self.rng)).0)
    }
}

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
mod tests {
    use super::*;

    /// Sutton and Barto's random walk: states 1..=5 between two ends, right end pays 1; true
    /// values k/6. Tabular TD(λ) through the same λ-returns the trainer uses converges there.
    #[test]
    fn td_lambda_on_a_random_walk_converges_to_the_true_values() {
        for lambda in [0.0f32, 0.5, 0.9] {
            let mut v = [0.5f32; 7];
            let mut rng = rng_from_seed(3);
            let mut targets = Vec::new();
            for episode in 0..20_000 {
                let alpha = 0.05 / (1.0 + episode as f32 / 2000.0);
                let mut s = 3usize;
                let mut visited = vec![s];
                while s != 0 && s != 6 {
                    s = if rng.random_bool(0.5) { s + 1 } else { s - 1 };
                    if s != 0 && s != 6 {
                        visited.push(s);
                    }
                }
                let result = [if s == 6 { 1.0f32 } else { 0.0 }];
                let values: Vec<[f32; 1]> = visited.iter().map(|&k| [v[k]]).collect();
                let refs: Vec<&[f32]> = values.iter().map(|x| &x[..]).collect();
                let cut = vec![None; refs.len()];
                lambda_returns(&refs, &cut, &result, lambda, &mut targets);
                for (&k, &g) in visited.iter().zip(&targets) {
                    v[k] += alpha * (g - v[k]);
                }
            }
            for (k, value) in v.iter().enumerate().take(6).skip(1) {
                let truth = k as f32 / 6.0;
                assert!((value - truth).abs() < 0.04, "λ {lambda}: state {k} valued {value} (true {truth})");
            }
        }
    }

    #[test]
    fn lambda_returns_by_hand() {
        let values: [&[f32]; 3] = [&[0.2, 0.8], &[0.4, 0.6], &[0.6, 0.4]];
        let mut out = Vec::new();
        lambda_returns(&values, &[None, None, None], &[1.0, 0.0], 0.5, &mut out);
        // G2 = z = (1, 0); G1 = 0.5 * V2 + 0.5 * G2 = (0.8, 0.2); G0 = 0.5 * V1 + 0.5 * G1 = (0.6, 0.4).
        let want = [0.6, 0.4, 0.8, 0.2, 1.0, 0.0];
        assert!(out.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-6), "{out:?}");
        // A random move after prediction 0 cuts it off: it learns the greedy value given.
        lambda_returns(&values, &[Some(&[0.9, 0.1]), None, None], &[1.0, 0.0], 0.5, &mut out);
        assert!((out[0] - 0.9).abs() < 1e-6 && (out[2] - 0.8).abs() < 1e-6, "{out:?}");
        // λ = 0: each prediction learns the next one (the Catan self-play study's targets).
        lambda_returns(&values, &[None, None, None], &[1.0, 0.0], 0.0, &mut out);
        assert_eq!(&out[..4], &[0.4, 0.6, 0.6, 0.4]);
    }

    /// A round's targets on a scripted three-seat game, by hand: seats 0, 1, 2 predict in turn
    /// (each prediction its value vector seen from the predicting seat, its own value first),
    /// seat 1's second move was a random one (its next record carries the greedy value it
    /// passed up), and seat 2 wins. Each seat's last prediction learns the result turned to
    /// its view; earlier ones the λ-mix of its next prediction and its return, or the greedy
    /// value where a random move cut the line. The observation of each record says which it is.
    #[test]
    fn a_rounds_targets_rotate_the_result_to_each_seat_and_cut_at_random_moves() {
        let record = |seat: usize, tag: f32, values: [f32; 3], greedy: Option<[f32; 3]>| Record {
            seat,
            obs: vec![tag],
            values: values.to_vec(),
            greedy: greedy.map(|g| g.to_vec()),
        };
        let records = vec![
            record(0, 0.0, [0.5, 0.3, 0.2], None),
            record(1, 1.0, [0.4, 0.4, 0.2], None),
            record(2, 2.0, [0.6, 0.2, 0.2], None),
            record(0, 3.0, [0.3, 0.3, 0.4], None),
            record(1, 4.0, [0.2, 0.3, 0.5], None),
            record(2, 5.0, [0.8, 0.1, 0.1], None),
            // Seat 1's move after its prediction 4.0 was random: greedy, it valued (0.5, 0.2, 0.3).
            record(1, 6.0, [0.1, 0.1, 0.8], Some([0.5, 0.2, 0.3])),
        ];
        let result = [0.0, 0.0, 1.0];
        let (mut scratch, mut batch) = (Vec::new(), Batch::default());
        game_targets(&records, &result, 3, 0.5, &mut scratch, &mut batch);
        let target = |tag: f32| {
            let i = batch.obs.iter().position(|&o| o == tag).unwrap();
            batch.value[3 * i..3 * i + 3].to_vec()
        };
        let near = |a: Vec<f32>, b: [f32; 3]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-6);
        assert_eq!(batch.size, 7);
        // Seat 0: the result from its view (0, 0, 1) -> (0, 0, 1); before it, 0.5 V(3.0) + 0.5 G.
        assert!(near(target(3.0), [0.0, 0.0, 1.0]), "{:?}", target(3.0));
        assert!(near(target(0.0), [0.15, 0.15, 0.7]), "{:?}", target(0.0));
        // Seat 1: the result turned to it, (seat 1, seat 2, seat 0) = (0, 1, 0); its prediction
        // 4.0 cut to the greedy value; 1.0 mixes 4.0's prediction with that cut value.
        assert!(near(target(6.0), [0.0, 1.0, 0.0]), "{:?}", target(6.0));
        assert!(near(target(4.0), [0.5, 0.2, 0.3]), "{:?}", target(4.0));
        assert!(near(target(1.0), [0.35, 0.25, 0.4]), "{:?}", target(1.0));
        // Seat 2, the winner: (seat 2, seat 0, seat 1) = (1, 0, 0).
        assert!(near(target(5.0), [1.0, 0.0, 0.0]), "{:?}", target(5.0));
        assert!(near(target(2.0), [0.9, 0.05, 0.05]), "{:?}", target(2.0));
    }

    fn dice_net() -> Network {
        let config = NetConfig::from_spec("mlp:layers=1,width=8", &[8], 2, 2, None).unwrap();
        Network::new(config, 1, 1)
    }

    /// The last decision of the dice game: every afterstate ends the game or rolls a die that
    /// does, so the values are exact: staying on 3 against 5 loses, rerolling wins on a 6 and
    /// ties on a 5 (1.5 / 6); on 5 against 5 staying ties (0.5) and rerolling is worth 0.25.
    #[test]
    fn the_one_ply_agent_averages_chance_outcomes() {
        use meeple_game::testing::{Dice, DiceState};
        let game = Dice::default();
        let net = dice_net();
        let mut scorer = Scorer::new(2, 8);
        let mut rng = rng_from_seed(1);
        for (dice, stay, reroll, best) in [([5, 3], 0.0, 0.25, 1), ([5, 5], 0.5, 0.25, 0)] {
            let s = DiceState::with_dice(&game, &dice, 1);
            scorer.clear();
            let range = scorer.add(&s, 1, &[0, 1]);
            assert_eq!(scorer.rows(), 0, "every leaf is a result");
            scorer.evaluate(&net, true).unwrap();
            let (a, v) = scorer.candidate(range.start);
            assert_eq!(a, 0);
            assert!((v[0] - stay).abs() < 1e-6 && (v[1] - (1.0 - stay)).abs() < 1e-6, "{v:?}");
            let (_, v) = scorer.candidate(range.start + 1);
            assert!((v[0] - reroll).abs() < 1e-6 && (v[1] - (1.0 - reroll)).abs() < 1e-6, "{v:?}");
            assert_eq!(scorer.candidate(scorer.best(range, &mut rng)).0, best);
        }
    }

    /// `--lr-decay`: the full rate until the run's share done is known, then a cosine that
    /// reaches a tenth of it at the run's end; without it the rate stays.
    #[test]
    fn the_rate_anneals_over_the_runs_plan_and_goes_on_from_where_it_stands_when_extended() {
        use crate::run::{Learner, Plan};
        let game = meeple_games::TicTacToe;
        // Rounds of one optimiser step each, the rate set from `plan` before each (a plan changed
        // to `then` after `switch` rounds, extended from where the run stands).
        let rate = |lr_decay: bool, rounds: usize, plan: &Plan, then: Option<(usize, &Plan)>| {
            let mut config = TdConfig::report("tictactoe");
            config.net = "mlp:layers=1,width=8".into();
            config.parallel = 2;
            config.lr = 1e-3;
            config.lr_decay = lr_decay;
            let mut run = TdRun::new(game, config, None).unwrap();
            let mut plan = plan.clone();
            let mut seen = Vec::new();
            for k in 0..rounds {
                let p = Learner::progress(&run);
                if let Some((switch, next)) = then
                    && k == switch
                {
                    plan = next.extending(&plan, &p);
                }
                assert_eq!(p.steps, k as u64, "one step a round");
                run.trainer.set_anneal(plan.anneal(&p));
                seen.push(run.trainer.lr());
                TdRun::round(&mut run).unwrap();
            }
            seen
        };
        let at = |t: f64| 1e-4 + 0.9e-3 * 0.5 * (1.0 + (std::f64::consts::PI * t).cos());
        let forty = Plan { steps: Some(40), ..Plan::default() };
        let seen = rate(true, 44, &forty, None);
        // Step 0 warms up (one step); step k stands at k/40 of the cosine, the floor from 40 on.
        assert!((seen[0] - 1e-3).abs() < 1e-12, "{seen:?}");
        for (k, &lr) in seen.iter().enumerate().skip(1) {
            assert!((lr - at((k as f64 / 40.0).min(1.0))).abs() < 1e-12, "step {k}: {lr}");
        }
        // Extended at its floor to 60 steps: the rate stays at the floor, no jump back up.
        let sixty = Plan { steps: Some(60), ..Plan::default() };
        let floor = rate(true, 50, &forty, Some((40, &sixty)));
        assert!(floor[40..].iter().all(|&lr| (lr - 1e-4).abs() < 1e-12), "{:?}", &floor[40..]);
        // Extended halfway (20 of 40) to 60: from 0.5 of the way, the rest over 40 more steps.
        let half = rate(true, 45, &forty, Some((20, &sixty)));
        assert_eq!(half[..20], seen[..20]);
        for (k, &lr) in half.iter().enumerate().skip(20) {
            let t = 0.5 + 0.5 * (k - 20) as f64 / 40.0;
            assert!((lr - at(t)).abs() < 1e-12, "step {k}: {lr}, not {}", at(t));
        }
        // Without --lr-decay the plan changes nothing.
        let constant = rate(false, 5, &forty, None);
        assert!(constant.iter().all(|&lr| (lr - 1e-3).abs() < 1e-12), "{constant:?}");
    }

    /// Scoring the games in flight on several threads plays the same games as on one: each
    /// thread takes a share of the slots, and the moves are chosen in slot order afterwards
    /// (here 5 games on 3 threads: shares of 2, 2 and 1).
    #[test]
    fn threads_share_the_games_without_changing_them() {
        let play = |threads: usize| {
            let mut config = TdConfig::report("catan:players=3");
            config.net = "resmlp:blocks=1,width=16".into();
            config.parallel = 5;
            config.batch_games = 3;
            config.threads = threads;
            let spec: meeple_game::Spec = "catan:players=3".parse().unwrap();
            let game = meeple_games::catan::Catan::from_spec(&spec).unwrap();
            let mut run = TdRun::new(game, config, None).unwrap();
            let round = run.round().unwrap();
            (round.games, round.positions, round.mean_plies, round.metrics)
        };
        let one = play(1);
        assert_eq!(one.0, 3);
        assert_eq!(play(3), one);
        assert_eq!(play(2), one);
    }

    /// A run limited to N games trains on exactly N, although games in flight finish together
    /// (sixteen tic-tac-toe games started at once end within a few plies of each other): the
    /// games beyond the limit wait for a later round instead of passing it.
    #[test]
    fn a_limit_stops_at_exactly_its_games() {
        let mut config = TdConfig::report("tictactoe");
        config.net = "mlp:layers=1,width=8".into();
        config.parallel = 16;
        let mut run = TdRun::new(meeple_games::TicTacToe, config.clone(), None).unwrap();
        let together = run.round().unwrap().games;
        assert!(together > 1, "games that finish in one step train in one round: {together}");
        let mut run = TdRun::new(meeple_games::TicTacToe, config, None).unwrap();
        let mut rounds = Vec::new();
        while run.progress.episodes < 7 {
            run.set_left(Some(7 - run.progress.episodes));
            rounds.push(run.round().unwrap().games);
        }
        assert_eq!(run.progress.episodes, 7, "rounds {rounds:?}");
        assert_eq!(rounds[0], together.min(7));
    }

    /// Four-player Catan trains as three-player Catan does: a round's games finish (won or
    /// stopped by the turn limit), every seat's predictions are trained on, and the network
    /// gives one value a seat, each a probability.
    #[test]
    fn four_player_catan_trains() {
        use meeple_game::Game;
        let spec: meeple_game::Spec = "catan:players=4".parse().unwrap();
        let game = meeple_games::catan::Catan::from_spec(&spec).unwrap();
        let mut config = TdConfig::report("catan:players=4");
        config.net = "resmlp:blocks=1,width=16".into();
        config.parallel = 2;
        config.batch_games = 2;
        let mut run = TdRun::new(game.clone(), config, None).unwrap();
        let round = run.round().unwrap();
        assert_eq!(round.games, 2);
        assert!(round.positions > 100 && round.loss.is_finite(), "{round:?}");
        assert!(round.metrics.iter().any(|(k, v)| k == "dice_rolls" && *v > 0.0), "{:?}", round.metrics);
        let s = game.initial_state();
        let mut obs = Vec::new();
        s.observation(0, &mut obs);
        let values = run.network().evaluate(&obs, 1).unwrap().values;
        assert_eq!(values.len(), 4);
        assert!(values.iter().all(|v| (0.0..=1.0).contains(v)), "{values:?}");
    }

    /// A value net trained by TD self-play loads as `eval=(net:model=F)` with the value the
    /// trainer's network gives (as a logit), and as the `value` agent.
    #[test]
    fn a_trained_value_net_loads_as_evaluator_and_agent() {
        use meeple_game::testing::{Dice, DiceState};
        let game = Dice::default();
        let mut config = TdConfig::report("dice:players=2");
        config.net = "mlp:layers=1,width=8".into();
        config.parallel = 4;
        config.lr = 1e-2;
        let mut run = TdRun::new(game.clone(), config, None).unwrap();
        for _ in 0..5 {
            run.round().unwrap();
        }
        let dir = std::env::temp_dir().join(format!("meeple-td-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("net.safetensors");
        run.trainer.save(&path, run.sidecar(0.0)).unwrap();
        let s = DiceState::with_dice(&game, &[4, 2], 0);
        let mut obs = Vec::new();
        s.observation(0, &mut obs);
        let v = run.network().evaluate(&obs, 1).unwrap().values[0] as f64;
        let spec = format!("net:model={}", path.display());
        let eval = meeple_search::make_evaluator_with(&game, &spec, &crate::extension()).unwrap();
        let logit = eval.evaluate(&s, 0);
        assert!((logit - (v / (1.0 - v)).ln()).abs() < 1e-4, "{logit} against the trainer's {v}");
        let mut agent = crate::make_agent(&game, &format!("value:model={}", path.display()), 1).unwrap();
        let a = agent.act(&s, &Budget::default()).unwrap();
        assert!(a < 2);
        assert!(crate::make_agent(&game, &format!("catan-td:model={}", path.display()), 1).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
