//! Value networks from search data (Sarswat et al.'s MCTS_ANN, MCTS_CNN and "combined"): games
//! played by a search agent, every root child the search visited enough kept with the value
//! the search gave it, and a value network fitted to them.
//!
//! The search is any agent whose `analysis` gives each root move's value (`mcts`, `az`):
//! `mcts:iters=800` for the report's MCTS data, `mcts:iters=800,playout=(alphabeta:depth=1,
//! eval=linear8)` for its combined approach (rollouts that follow the linear agent).

use crate::LearnError;
use meeple_game::{Action, Budget, Game, State, Turn, rng_from_seed};
use meeple_nn::Trainer;
use rand::RngExt;
use serde::{Deserialize, Serialize};

/// Positions and their value targets (each `seats` long, the viewer first).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Samples {
    pub input: usize,
    pub seats: usize,
    pub obs: Vec<f32>,
    pub value: Vec<f32>,
}

impl Samples {
    pub fn len(&self) -> usize {
        self.obs.len().checked_div(self.input).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn push(&mut self, obs: &[f32], value: &[f32]) {
        self.obs.extend_from_slice(obs);
        self.value.extend_from_slice(value);
    }

    fn extend(&mut self, other: Samples) {
        self.obs.extend(other.obs);
        self.value.extend(other.value);
    }
}

/// How search data is gathered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchDataConfig {
    /// The search agent that plays the games (its `analysis` must give root values).
    pub searcher: String,
    pub games: usize,
    /// Uniformly random plies opening each game, so the games differ.
    pub opening_plies: usize,
    /// Fewest visits a root move needs for its value to be kept.
    pub min_visits: u64,
    pub seed: u64,
    pub threads: usize,
}

/// A mover's value `v` as a target vector for `seats` seats: `v` for the viewer, the rest
/// shared equally by the others.
fn target(v: f64, seats: usize, out: &mut Vec<f32>) {
    out.clear();
    out.push(v as f32);
    let rest = if seats > 1 { (1.0 - v) / (seats - 1) as f64 } else { 0.0 };
    out.extend((1..seats).map(|_| rest as f32));
}

/// Plays `config.games` games with the search agent (on `threads` threads, game `i` on thread
/// `i % threads`) and keeps each well-visited root move's afterstate, seen from the mover, with
/// the search's value of it. `progress` is called after each game with the games done.
pub fn search_data<G: Game>(
    game: &G,
    config: &SearchDataConfig,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<Samples, LearnError> {
    crate::make_agent(game, &config.searcher, 0)
        .map_err(|e| LearnError::Config(format!("searcher '{}': {e}", config.searcher)))?;
    let threads = config.threads.max(1);
    let done = std::sync::atomic::AtomicUsize::new(0);
    let parts: Vec<Result<Samples, LearnError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let done = &done;
                scope.spawn(move || {
                    let mut samples = Samples {
                        input: game.observation_shape().iter().product(),
                        seats: game.num_players(),
                        ..Samples::default()
                    };
                    for i in (t..config.games).step_by(threads) {
                        play_one(game, config, i as u64, &mut samples)?;
                        progress(done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1);
                    }
                    Ok(samples)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a data worker does not panic")).collect()
    });
    let mut all =
        Samples { input: game.observation_shape().iter().product(), seats: game.num_players(), ..Samples::default() };
    for p in parts {
        all.extend(p?);
    }
    Ok(all)
}

fn play_one<G: Game>(game: &G, config: &SearchDataConfig, index: u64, out: &mut Samples) -> Result<(), LearnError> {
    let seed = meeple_game::derive_seed(config.seed, index);
    let mut rng = rng_from_seed(seed);
    let mut agent = crate::make_agent(game, &config.searcher, seed)?;
    let mut state = game.initial_state();
    let (mut buf, mut obs, mut t, mut outcomes) = (Vec::<Action>::new(), Vec::new(), Vec::new(), Vec::new());
    let seats = game.num_players();
    let mut plies = 0usize;
    loop {
        match state.turn() {
            Turn::Terminal => return Ok(()),
            Turn::Chance => {
                state.chance_outcomes(&mut outcomes);
                let mut x: f64 = rng.random();
                let mut pick = outcomes.last().expect("a chance node has outcomes").0;
                for &(a, p) in &outcomes {
                    if x < p {
                        pick = a;
                        break;
                    }
                    x -= p;
                }
                state.apply_unchecked(pick);
            }
            Turn::Player(mover) => {
                if plies < config.opening_plies {
                    let a = state.random_action(&mut rng, &mut buf);
                    state.apply_unchecked(a);
                    plies += 1;
                    continue;
                }
                let action = agent.act(&state, &Budget::default())?;
                for stat in agent.analysis() {
                    let (Some(visits), Some(value)) = (stat.visits, stat.value) else { continue };
                    if visits < config.min_visits {
                        continue;
                    }
                    let mut next = state.clone();
                    next.apply_unchecked(stat.action);
                    if next.is_terminal() {
                        continue;
                    }
                    next.observation(mover, &mut obs);
                    target(value, seats, &mut t);
                    out.push(&obs, &t);
                }
                state.apply(action)?;
                plies += 1;
            }
        }
    }
}

/// Figures of one epoch of fitting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Epoch {
    pub epoch: usize,
    pub train_loss: f64,
    /// The mean squared error on the held-out share (the positions of the last games); NaN
    /// (`null` in JSON) with none held out.
    #[serde(deserialize_with = "nan_for_null")]
    pub holdout_loss: f64,
}

fn nan_for_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// Fitting a value head to samples one epoch at a time: the last `holdout` share (the last
/// games' positions) kept out of training to measure the fit, the rest shuffled each epoch.
pub struct Fit {
    order: Vec<usize>,
    rng: meeple_game::Rng,
    held: usize,
    minibatch: usize,
    epoch: usize,
}

impl Fit {
    pub fn new(samples: &Samples, minibatch: usize, holdout: f64, seed: u64) -> Result<Self, LearnError> {
        let n = samples.len();
        let held = ((n as f64) * holdout.clamp(0.0, 0.5)) as usize;
        let train_n = n - held;
        if train_n == 0 {
            return Err(LearnError::Data("no positions to train on".into()));
        }
        Ok(Fit { order: (0..train_n).collect(), rng: rng_from_seed(seed), held, minibatch: minibatch.max(1), epoch: 0 })
    }

    /// Epochs fitted so far.
    pub fn epochs(&self) -> usize {
        self.epoch
    }

    fn shuffle(&mut self) {
        for i in (1..self.order.len()).rev() {
            let j = self.rng.random_range(0..=i);
            self.order.swap(i, j);
        }
    }

    /// Goes on after `epochs` epochs fitted earlier: their shuffles are drawn again, so the
    /// epochs that follow see the order an uninterrupted run would.
    pub fn skip(&mut self, epochs: usize) {
        for _ in 0..epochs {
            self.shuffle();
            self.epoch += 1;
        }
    }

    /// One pass of shuffled minibatches over the training share, then the held-out error.
    pub fn epoch(&mut self, trainer: &mut Trainer, samples: &Samples) -> Result<Epoch, LearnError> {
        self.shuffle();
        self.epoch += 1;
        let n = samples.len();
        let train_n = self.order.len();
        let (input, seats, actions) = (samples.input, samples.seats, trainer.config().actions);
        let make = |idx: &[usize]| crate::td::value_batch(&samples.obs, &samples.value, (input, seats, actions), idx);
        let (mut total, mut steps) = (0.0, 0);
        for chunk in self.order.chunks(self.minibatch) {
            let losses = trainer.train_step(&make(chunk)).map_err(|e| LearnError::Shape(e.to_string()))?;
            total += losses.value;
            steps += 1;
        }
        let holdout_loss = if self.held > 0 {
            let net = trainer.network(1);
            let idx: Vec<usize> = (train_n..n).collect();
            let mut err = 0.0;
            for chunk in idx.chunks(1024) {
                let mb = make(chunk);
                let o = net.evaluate(&mb.obs, mb.size).map_err(|e| LearnError::Shape(e.to_string()))?;
                err += o.values.iter().zip(&mb.value).map(|(a, b)| ((a - b) * (a - b)) as f64).sum::<f64>();
            }
            err / self.held as f64
        } else {
            f64::NAN
        };
        Ok(Epoch { epoch: self.epoch, train_loss: total / steps as f64, holdout_loss })
    }
}

/// Fits the trainer's value head to `samples` for `epochs` epochs of shuffled minibatches,
/// keeping the last `holdout` share out of training to report; `each` gets every epoch.
pub fn fit(
    trainer: &mut Trainer,
    samples: &Samples,
    epochs: usize,
    minibatch: usize,
    holdout: f64,
    seed: u64,
    each: &mut dyn FnMut(&Epoch, &Trainer) -> bool,
) -> Result<Vec<Epoch>, LearnError> {
    let mut fit = Fit::new(samples, minibatch, holdout, seed)?;
    let mut out = Vec::new();
    for _ in 0..epochs {
        let e = fit.epoch(trainer, samples)?;
        out.push(e);
        if !each(&e, trainer) {
            break;
        }
    }
    Ok(out)
}

/// `train value --data search` for [`crate::run::run`]: the searcher's games gathered when
/// the run starts (again on resume: they are the seed's), then one epoch of fitting a round.
/// The checkpoint is the epoch with the lowest held-out loss (a search's values are few and
/// correlated: later epochs fit the training games' noise); the trainer's own state goes
/// beside it (`last.current.safetensors`) for resume.
pub struct SearchValueRun<G: Game> {
    game: G,
    /// The positions the resumed run's data had (checked when they are gathered again).
    expect: Option<u64>,
    config: SearchValueConfig,
    samples: Samples,
    data_seconds: f64,
    trainer: Trainer,
    fit: Option<Fit>,
    done: usize,
    best: Option<(f64, Vec<f32>)>,
    seen: Vec<Epoch>,
    seconds: f64,
}

/// The settings of a search-data value run (`train value --data search`); each is the flag of
/// the same name, its doc the flag's help, [`SearchValueConfig::new`] the defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct SearchValueConfig {
    /// The value network: `mlp:layers=L,width=W` (Sarswat et al.'s ANN: one layer of 256) or
    /// `resnet:blocks=B,channels=C` (its CNN).
    #[arg(long, value_name = "SPEC")]
    pub net: String,
    /// The search whose root values are the targets (its analysis must give them), e.g.
    /// `mcts:iters=800` (MCTS_ANN) or `mcts:iters=800,rollout=(linear:...)` for the combined agent.
    #[arg(long, value_name = "SPEC")]
    pub searcher: String,
    /// The searcher's games: the run's --games.
    #[arg(skip)]
    pub games: usize,
    /// Uniformly random plies opening each of the searcher's games, so the games differ.
    #[arg(long, value_name = "N")]
    pub opening_plies: usize,
    /// Fewest visits a root move needs for its value to be kept.
    #[arg(long, value_name = "N")]
    pub min_visits: u64,
    /// The run's seed: `--seed`.
    #[arg(skip)]
    pub seed: u64,
    /// The run's threads: `--threads`.
    #[arg(skip)]
    pub threads: usize,
    /// AdamW's learning rate.
    #[arg(long)]
    pub lr: f64,
    /// Passes over the positions; the checkpoint is the epoch with the lowest held-out loss.
    #[arg(long, value_name = "N")]
    pub epochs: usize,
    /// Share of the games held out to pick the epoch (whole games, so a game's correlated
    /// positions never sit on both sides).
    #[arg(long, value_name = "SHARE")]
    pub holdout: f64,
    /// Positions per optimiser step.
    #[arg(long)]
    pub minibatch: usize,
}

impl crate::flags::Settings for SearchValueConfig {
    fn defaults() -> serde_json::Value {
        serde_json::to_value(SearchValueConfig::new("")).expect("configs serialise")
    }
}

impl SearchValueConfig {
    /// Sarswat et al.'s MCTS_ANN data: `mcts:iters=800` over 1,000 games (4 random plies first),
    /// root moves of 20 visits or more, a one-layer MLP fitted for 20 epochs with a tenth held
    /// out.
    pub fn new(game: &str) -> Self {
        let td = crate::td::TdConfig::value(game);
        SearchValueConfig {
            net: td.net,
            searcher: "mcts:iters=800".into(),
            games: 1000,
            opening_plies: 4,
            min_visits: 20,
            seed: 1,
            threads: 1,
            lr: td.lr,
            epochs: 20,
            holdout: 0.1,
            minibatch: td.minibatch,
        }
    }

    /// How the data is gathered.
    pub fn data(&self) -> SearchDataConfig {
        SearchDataConfig {
            searcher: self.searcher.clone(),
            games: self.games,
            opening_plies: self.opening_plies,
            min_visits: self.min_visits,
            seed: self.seed,
            threads: self.threads,
        }
    }

    /// The optimiser: Sarswat et al.'s value network's (as `value --data selfplay` trains).
    pub fn train(&self) -> meeple_nn::TrainConfig {
        crate::td::TdConfig { lr: self.lr, ..crate::td::TdConfig::value("") }.train()
    }
}

/// `train value`'s flags: both data sources' settings, each once (`net`, `lr` and `minibatch`
/// are both's), and `--data` to pick one; [`crate::trainers::train`] refuses a setting of the source
/// not picked.
#[derive(Clone, Debug)]
pub struct ValueFlags;

impl clap::FromArgMatches for ValueFlags {
    fn from_arg_matches(_: &clap::ArgMatches) -> Result<Self, clap::Error> {
        Ok(ValueFlags)
    }
    fn update_from_arg_matches(&mut self, _: &clap::ArgMatches) -> Result<(), clap::Error> {
        Ok(())
    }
}

impl clap::Args for ValueFlags {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        let cmd = cmd.arg(
            clap::Arg::new("data")
                .long("data")
                .value_parser(["selfplay", "search"])
                .help("Where the targets come from: the learner's own ε-greedy one-ply games against --opponent (Sarswat et al.'s Algorithm 3), or a search's root values (--searcher)"),
        );
        let mut cmd = <crate::td::TdConfig as clap::Args>::augment_args(cmd);
        let search = <SearchValueConfig as clap::Args>::augment_args(clap::Command::new("search"));
        // The search's own flags under a heading of their own in --help.
        for arg in search.get_arguments() {
            if cmd.get_arguments().all(|a| a.get_id() != arg.get_id()) {
                cmd = cmd.arg(arg.clone().help_heading("Settings of --data search"));
            }
        }
        cmd
    }
    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl crate::flags::Settings for ValueFlags {
    fn defaults() -> serde_json::Value {
        let mut all = serde_json::to_value(SearchValueConfig::new("")).expect("configs serialise");
        let td = serde_json::to_value(crate::td::TdConfig::value("")).expect("configs serialise");
        let map = all.as_object_mut().expect("an object");
        map.extend(td.as_object().expect("an object").clone());
        map.insert("data".into(), "selfplay".into());
        all
    }
}

impl<G: Game> SearchValueRun<G> {
    /// Starts or resumes the fit; the data is gathered by the first round, so a resume with
    /// other settings is refused before any game is played.
    pub fn new(game: G, config: SearchValueConfig, resume: Option<&std::path::Path>) -> Result<Self, LearnError> {
        if config.epochs == 0 {
            return Err(LearnError::Config("--epochs must be at least 1".into()));
        }
        if !(0.0..=0.5).contains(&config.holdout) {
            return Err(LearnError::Config(format!("--holdout {} must be within 0..=0.5", config.holdout)));
        }
        crate::make_agent(&game, &config.searcher, 0)
            .map_err(|e| LearnError::Config(format!("--searcher '{}': {e}", config.searcher)))?;
        let spec = game.spec().to_string();
        let net = meeple_nn::NetConfig::from_spec(
            &config.net,
            &game.observation_shape(),
            game.num_actions(),
            game.num_players(),
            None,
        )?;
        let threads = config.threads.max(1);
        let (trainer, best, seen, seconds, expect, data_seconds) = match resume {
            None => (Trainer::new(net, config.train(), config.seed, threads), None, Vec::new(), 0.0, None, 0.0),
            Some(path) => {
                let current = current_path(path);
                let r = Trainer::resume(&current, &spec, config.train(), threads)?;
                let kept = Trainer::resume(path, &spec, config.train(), 1)?;
                let seen: Vec<Epoch> = serde_json::from_value(r.sidecar.run["epochs"].clone())
                    .map_err(|e| LearnError::Data(format!("'{}': no epochs in its sidecar: {e}", current.display())))?;
                let best = kept.sidecar.run["kept"].as_f64().map(|l| (l, kept.trainer.parameters().to_vec()));
                let seconds = r.sidecar.run["seconds"].as_f64().unwrap_or(0.0);
                let data_seconds = r.sidecar.run["data_seconds"].as_f64().unwrap_or(0.0);
                (r.trainer, best, seen, seconds, r.sidecar.run["positions"].as_u64(), data_seconds)
            }
        };
        Ok(SearchValueRun {
            game,
            expect,
            config,
            samples: Samples::default(),
            data_seconds,
            trainer,
            fit: None,
            done: seen.len(),
            best,
            seen,
            seconds,
        })
    }

    /// Plays the searcher's games (once a session) and sets the fit where the run left off,
    /// telling `hooks` how many are done while they play.
    fn gather(&mut self, budget: &crate::run::Budget<'_>) -> Result<(), LearnError> {
        let started = std::time::Instant::now();
        let done = std::sync::atomic::AtomicUsize::new(0);
        let data = self.config.data();
        let total = data.games;
        let (game, samples) = (&self.game, std::sync::Mutex::new(None));
        std::thread::scope(|scope| {
            let player = scope.spawn(|| {
                let tell = |k: usize| done.store(k, std::sync::atomic::Ordering::Relaxed);
                *samples.lock().expect("unpoisoned") = Some(search_data(game, &data, &tell));
            });
            // The display need not be shareable across threads: this thread reports for it.
            while !player.is_finished() {
                let k = done.load(std::sync::atomic::Ordering::Relaxed);
                budget.working(&format!("search games: {k} of {total}"));
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
        });
        self.samples = samples.into_inner().expect("unpoisoned").expect("the games were played")?;
        if let Some(n) = self.expect
            && n != self.samples.len() as u64
        {
            return Err(LearnError::Data(format!(
                "--resume: the searcher's games gave {} positions, the run's {n}: they are not the same games",
                self.samples.len()
            )));
        }
        if self.expect.is_none() {
            self.data_seconds = started.elapsed().as_secs_f64();
        }
        let mut fit = Fit::new(&self.samples, self.config.minibatch, self.config.holdout, self.config.seed)?;
        fit.skip(self.done);
        self.fit = Some(fit);
        Ok(())
    }

    fn config(&self) -> SearchValueConfig {
        SearchValueConfig { net: self.trainer.config().spec(), ..self.config.clone() }
    }

    fn sidecar(&self, kept: Option<f64>, seconds: f64) -> meeple_nn::Sidecar {
        meeple_nn::Sidecar {
            format: meeple_nn::SIDECAR_FORMAT,
            net: self.trainer.config().clone(),
            game: self.game.spec().to_string(),
            step: self.trainer.step(),
            run: serde_json::json!({
                "trainer": "value",
                "data": "search",
                "search": self.config.data(),
                "positions": if self.samples.is_empty() { self.expect.unwrap_or(0) } else { self.samples.len() as u64 },
                "data_seconds": self.data_seconds,
                "epochs": self.seen,
                "kept": kept,
                "seconds": seconds,
                "train": self.config.train(),
                "value_only": true,
            }),
            commands: Vec::new(),
        }
    }
}

/// Where a search-data value run keeps its trainer's own state beside the kept epoch.
fn current_path(path: &std::path::Path) -> std::path::PathBuf {
    path.with_extension("current.safetensors")
}

fn epoch_name(epoch: u64) -> String {
    format!("epoch-{epoch}")
}

/// `value` fitted to a search's values: its rounds are epochs over the searcher's games.
pub static VALUE_SEARCH: crate::run::Kind = crate::run::Kind {
    may_change: &["threads", "epochs"],
    flags: &[("games", "--games")],
    kept: epoch_name,
    ..crate::run::Kind::new("value")
};

impl<G: Game> crate::run::Learner for SearchValueRun<G> {
    fn kind(&self) -> &'static crate::run::Kind {
        &VALUE_SEARCH
    }

    fn agent(&self) -> String {
        "value:model={model}".into()
    }

    fn round(&mut self, budget: &crate::run::Budget<'_>) -> Result<crate::run::Round, LearnError> {
        if self.fit.is_none() {
            self.gather(budget)?;
        }
        let fit = self.fit.as_mut().expect("gathered");
        let e = fit.epoch(&mut self.trainer, &self.samples)?;
        self.done = fit.epochs();
        self.seen.push(e);
        // No held-out share (NaN): every epoch is kept, the last one stays.
        if e.holdout_loss.is_nan() || self.best.as_ref().is_none_or(|(l, _)| e.holdout_loss < *l) {
            self.best = Some((e.holdout_loss, self.trainer.parameters().to_vec()));
        }
        let mut round = crate::run::Round::default();
        round.loss("value", e.train_loss);
        if !e.holdout_loss.is_nan() {
            round.loss("holdout", e.holdout_loss);
        }
        round.figure("epoch", e.epoch as f64);
        round.stat("data_seconds", self.data_seconds);
        Ok(round)
    }

    fn progress(&self) -> crate::run::Progress {
        crate::run::Progress {
            episodes: self.config.games as u64,
            decisions: if self.samples.is_empty() { self.expect.unwrap_or(0) } else { self.samples.len() as u64 },
            steps: self.trainer.step(),
            seconds: self.seconds,
        }
    }

    fn save(&self, path: &std::path::Path, save: &crate::run::Save<'_>) -> Result<(), LearnError> {
        let seconds = save.seconds;
        match &self.best {
            Some((loss, theta)) => {
                let kept = (!loss.is_nan()).then_some(*loss);
                self.trainer.save_with(theta, path, self.sidecar(kept, seconds))?
            }
            None => self.trainer.save(path, self.sidecar(None, seconds))?,
        }
        if save.resumable {
            self.trainer.save_resumable(&current_path(path), self.sidecar(None, seconds))?;
        }
        Ok(())
    }

    fn settings(&self) -> serde_json::Value {
        serde_json::to_value(self.config()).expect("configs serialise")
    }

    fn generation(&self) -> u64 {
        self.done as u64
    }

    fn finished(&self) -> bool {
        self.done >= self.config.epochs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_give_the_others_what_the_mover_lacks() {
        let mut t = Vec::new();
        target(0.75, 2, &mut t);
        assert_eq!(t, vec![0.75, 0.25]);
        target(0.4, 3, &mut t);
        assert!((t[1] - 0.3).abs() < 1e-6 && (t[2] - 0.3).abs() < 1e-6);
    }
}
