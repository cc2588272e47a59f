//! AlphaZero training runs, a [`crate::run::Learner`] ([`AzRun`]) on the one run loop: each
//! round a generation of batched self-play written as a shard, then training steps on a replay
//! window sampled with the game's symmetries.
//!
//! Its run directory has the one layout (`run.json`, `metrics.jsonl`, `ladder.json`,
//! `ckpt/last.safetensors` and every `--eval-every`-th generation's `ckpt/gen-NNNNNN.safetensors`)
//! and `selfplay/gen-NNNNNN.jsonl` (the games of each generation: actions and targets, so a
//! resumed run rebuilds its window).

use crate::az::config::OPTIONS;
pub use crate::az::config::{AzConfig, az_config, default_config, net_config};
use crate::az::selfplay::{SelfPlayGame, replay_states, self_play_until, teacher_play_until};
use crate::run::{Budget, Every, Kind, Layout, Round, Save};
use crate::{LearnError, PolicyValue};
use meeple_game::{Action, Game, Rng, State, derive_seed, rng_from_seed};
use meeple_nn::{Batch, NetConfig, Sidecar, Trainer};
use rand::RngExt;
use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// How often an external run looks for new shards while it waits.
const EXTERNAL_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// One training position.
struct Sample<S> {
    state: S,
    mover: usize,
    legal: Vec<Action>,
    policy: Vec<(Action, f32)>,
    /// Value targets, absolute seats.
    value: Vec<f32>,
    /// The game's last state (shared by its positions): the ownership and score targets.
    last: std::sync::Arc<S>,
}

fn io(what: &str, path: &Path, e: std::io::Error) -> LearnError {
    LearnError::Io(format!("cannot {what} '{}': {e}", path.display()))
}

/// AlphaZero for [`crate::run::run`]: one generation a round (self-play written as the
/// generation's shard in `DIR/selfplay/`, then training steps on the replay window), the
/// network as its checkpoint with the progress in its sidecar.
pub struct AzRun<G: Game> {
    game: G,
    config: AzConfig,
    net: NetConfig,
    run: Layout,
    trainer: Trainer,
    progress: crate::run::Progress,
    /// Generations played.
    generation: u64,
    window: VecDeque<Sample<G::State>>,
    /// The agent spec that plays a checkpoint at evaluations.
    eval_agent: String,
    /// Whether external players have been given a first checkpoint this session.
    published: bool,
}

/// AlphaZero's description: evaluated every 5 generations, its checkpoints named by them.
pub static AZ: Kind = Kind {
    // Runs written before the evaluation cadence became a run option (`--eval-every`) kept it
    // among their settings; it does not change what they train.
    may_change: &["eval_every"],
    flags: OPTIONS,
    evaluate_every: Every::Rounds(5),
    kept: generation_name,
    ..Kind::new("az")
};

fn generation_name(generation: u64) -> String {
    format!("gen-{generation:06}")
}

/// The generation and progress a checkpoint's sidecar keeps (`run.progress`).
fn progress_of(run: &serde_json::Value) -> Result<(u64, crate::run::Progress), LearnError> {
    let p = run.get("progress");
    let generation = p
        .and_then(|p| p.get("generation"))
        .and_then(|g| g.as_u64())
        .ok_or_else(|| LearnError::Data("the last checkpoint has no run progress ('generation')".into()))?;
    Ok((generation, crate::run::Progress::from_sidecar(p)?))
}

impl<G: Game> AzRun<G> {
    /// A run in `dir` from `config`, or continued from its checkpoint `resume`.
    pub fn new(game: G, config: AzConfig, dir: &Path, resume: Option<&Path>) -> Result<Self, LearnError> {
        let spec = game.spec().to_string();
        if config.game != spec {
            return Err(LearnError::Config(format!("the run is for '{}', the game is '{spec}'", config.game)));
        }
        let net = net_config(&game, &config.net)?;
        check_targets(&game, &config)?;
        let run = Layout { root: dir.to_path_buf() };
        let (trainer, generation, progress) = match resume {
            None => match &config.init {
                Some(init) => (warm_start(&game, Path::new(init), &net, &config)?, 0, Default::default()),
                None => (
                    Trainer::new(net.clone(), config.train.clone(), config.seed, config.threads),
                    0,
                    Default::default(),
                ),
            },
            Some(path) => {
                let resumed = Trainer::resume(path, &config.game, config.train.clone(), config.threads)?;
                if resumed.trainer.config() != &net {
                    return Err(LearnError::Config(format!(
                        "cannot resume the run in '{}': its checkpoint holds the network '{}', this run asks for '{}'",
                        run.root.display(),
                        resumed.trainer.config().spec(),
                        net.spec()
                    )));
                }
                let (generation, progress) = progress_of(&resumed.sidecar.run)?;
                (resumed.trainer, generation, progress)
            }
        };
        std::fs::create_dir_all(run.selfplay()).map_err(|e| io("create", &run.selfplay(), e))?;
        let mut window = VecDeque::new();
        if resume.is_some() {
            load_window(&game, &run, generation, &config, &mut window)?;
        }
        let eval_agent = "az:model={model}".to_string();
        Ok(AzRun { game, config, net, run, trainer, progress, generation, window, eval_agent, published: false })
    }

    /// Plays evaluations with this agent spec (`{model}` where the checkpoint goes).
    pub fn evaluated_as(mut self, agent: &str) -> Self {
        self.eval_agent = agent.to_string();
        self
    }

    fn sidecar(&self, seconds: f64) -> Sidecar {
        sidecar(&self.config, self.progress.to_sidecar(seconds, &[("generation", self.generation.into())]))
    }

    fn play(&mut self, budget: &Budget<'_>) -> Result<Round, LearnError> {
        let (game, config, run) = (&self.game, &self.config, &self.run);
        if config.external.is_some() && !self.published {
            // External players start from the first checkpoint there is.
            self.trainer.save_resumable(&run.last("safetensors"), self.sidecar(self.progress.seconds))?;
            self.published = true;
        }
        let generation = self.generation + 1;
        let t0 = Instant::now();
        let played = match &config.external {
            Some(dir) => take_external(game, config, run, dir, generation, budget)?,
            None => play_generation(game, config, &self.trainer, run, generation, budget)?,
        };
        let Some((games, stats)) = played else {
            return Ok(Round::default());
        };
        let selfplay_seconds = t0.elapsed().as_secs_f64();
        let mut new_positions = 0;
        for g in &games {
            new_positions += add_game(game, g, ValueTarget::of(config, generation), &mut self.window)?;
        }
        while self.window.len() > config.window {
            self.window.pop_front();
        }
        let t1 = Instant::now();
        // Each generation samples from its own stream, so a resumed run draws the batches the
        // uninterrupted one would have.
        let mut rng = rng_from_seed(derive_seed(config.seed, 0x7a11 + generation));
        let sums = train_generation(
            &mut self.trainer,
            &self.window,
            &self.net,
            config,
            new_positions,
            &self.progress,
            budget,
            &mut rng,
        )?;
        let train_seconds = t1.elapsed().as_secs_f64();
        self.generation = generation;
        let progress = &mut self.progress;
        progress.episodes += stats.games;
        progress.decisions += stats.positions;
        progress.steps = self.trainer.step();
        let lengths: usize = games.iter().map(|g| g.actions.len()).sum();
        let per = |x: f64| if sums.steps > 0 { x / sums.steps as f64 } else { 0.0 };
        let mut round = Round::default();
        // A generation cut short during its self-play (the time limit or Ctrl-C) trained
        // nothing: zero losses would be no measurement.
        if sums.steps > 0 {
            round.loss("policy", per(sums.policy));
            round.loss("value", per(sums.value));
            for (name, sum) in [("ownership", sums.ownership), ("score", sums.score)] {
                if per(sum) > 0.0 {
                    round.loss(name, per(sum));
                }
            }
        }
        round.figure("entropy", per(sums.entropy));
        let stats = [
            self.window.len() as f64,
            selfplay_seconds,
            stats.positions as f64 / selfplay_seconds.max(1e-9),
            stats.evaluations as f64 / selfplay_seconds.max(1e-9),
            stats.evaluations as f64 / stats.batches.max(1) as f64,
            lengths as f64 / games.len().max(1) as f64,
            train_seconds,
            (sums.steps as f64 * config.batch as f64) / train_seconds.max(1e-9),
            sums.lr,
        ];
        for (name, v) in crate::metrics::AZ_STATS.iter().zip(stats) {
            round.stat(name, v);
        }
        round.stat("generation", generation as f64);
        Ok(round)
    }
}

impl<G: Game> crate::run::Learner for AzRun<G> {
    fn kind(&self) -> &'static Kind {
        &AZ
    }

    fn agent(&self) -> String {
        self.eval_agent.clone()
    }

    fn round(&mut self, budget: &Budget<'_>) -> Result<Round, LearnError> {
        self.play(budget)
    }

    fn progress(&self) -> crate::run::Progress {
        self.progress.clone()
    }

    fn generation(&self) -> u64 {
        self.generation
    }

    fn save(&self, path: &Path, save: &Save<'_>) -> Result<(), LearnError> {
        if save.resumable {
            self.trainer.save_resumable(path, self.sidecar(save.seconds))?;
        } else {
            self.trainer.save(path, self.sidecar(save.seconds))?;
        }
        Ok(())
    }

    fn settings(&self) -> serde_json::Value {
        serde_json::to_value(&self.config).expect("configs serialise")
    }
}

/// A run's settings from its `run.json` (the one run layout's, or an older run's bare
/// configuration).
pub fn read_config(dir: &Path) -> Result<AzConfig, LearnError> {
    let path = Layout { root: dir.to_path_buf() }.run_json();
    let text = meeple_game::limits::read_text(&path, meeple_game::limits::MAX_TEXT_FILE, "run configuration")?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| LearnError::Data(format!("'{}' is not a run configuration: {e}", path.display())))?;
    let settings = v.get("settings").cloned().unwrap_or(v);
    serde_json::from_value(settings)
        .map_err(|e| LearnError::Data(format!("'{}' is not a run configuration: {e}", path.display())))
}

/// The value target's and the teacher's settings, checked before a run starts.
fn check_targets<G: Game>(game: &G, config: &AzConfig) -> Result<(), LearnError> {
    ValueTarget::new(config.value_mix, config.value_lambda)?.with_score(config.value_score)?;
    if config.value_score > 0.0 && game.initial_state().score_scale().is_none() {
        return Err(LearnError::Config(format!(
            "value score share {}: a value target on the score margin needs a game whose final scores say by \
             how much it was won ({} does not; cathedral, catan and sagrada do)",
            config.value_score,
            game.spec()
        )));
    }
    if !(0.0..=1.0).contains(&config.teacher_share) {
        return Err(LearnError::Config(format!("teacher share {} is outside 0 to 1", config.teacher_share)));
    }
    if config.teacher_share > 0.0 && config.teacher.is_none() {
        return Err(LearnError::Config(format!(
            "teacher share {}: there is no teacher to play those games",
            config.teacher_share
        )));
    }
    Ok(())
}

/// Self-play's progress within a generation, for display (the first generations of a large game
/// take minutes).
fn working(budget: &Budget<'_>, generation: u64, games: u64, positions: u64) {
    budget.working(&format!("gen {generation} | self-play: {games} games, {positions} positions"));
}

/// The seed stream of a generation's teacher games beside its self-play (see
/// [`AzConfig::teacher_share`]).
const TEACHER_STREAM: u64 = 0x7eac_4e25;

/// Plays one generation of self-play with the trainer's current weights, writing its games to
/// the generation's shard. `None` when it was stopped before any game ended: no generation took
/// place (nothing is written, so a resumed run plays it again from its seed).
fn play_generation<G: Game>(
    game: &G,
    config: &AzConfig,
    trainer: &Trainer,
    run: &Layout,
    generation: u64,
    budget: &Budget<'_>,
) -> Result<Option<(Vec<SelfPlayGame>, crate::SelfPlayStats)>, LearnError> {
    let network = trainer.network(config.threads);
    let seed = derive_seed(config.seed, generation);
    // The time limit and a stop request end a long generation early (Cathedral or Catan
    // generations take minutes); step limits stay exact, so seeded runs stay reproducible.
    let out_of_time = || budget.must_stop();
    let (mut games_done, mut positions) = (0u64, 0u64);
    let on_game = |g: &SelfPlayGame| {
        games_done += 1;
        positions += g.positions.len() as u64;
        working(budget, generation, games_done, positions);
    };
    let (n, threads) = (config.games_per_generation, config.threads);
    let (games, stats) = match &config.teacher {
        Some(teacher) if generation <= config.teacher_generations => {
            teacher_play_until(game, teacher, &config.selfplay, n, seed, threads, &out_of_time, on_game)?
        }
        Some(teacher) if config.teacher_share > 0.0 => {
            // The teacher's games first, from a seed stream of their own, then self-play's.
            let mut on_game = on_game;
            let taught = ((n as f64) * config.teacher_share).round() as usize;
            let teacher_seed = derive_seed(seed, TEACHER_STREAM);
            let (mut games, mut stats) = teacher_play_until(
                game,
                teacher,
                &config.selfplay,
                taught,
                teacher_seed,
                threads,
                &out_of_time,
                &mut on_game,
            )?;
            let (own, more) = self_play_until(
                game,
                &network,
                &config.selfplay,
                n - taught,
                seed,
                threads,
                &out_of_time,
                &mut on_game,
            )?;
            games.extend(own);
            stats.games += more.games;
            stats.positions += more.positions;
            stats.evaluations += more.evaluations;
            stats.batches += more.batches;
            stats.seconds += more.seconds;
            (games, stats)
        }
        _ => self_play_until(game, &network, &config.selfplay, n, seed, threads, &out_of_time, on_game)?,
    };
    // The shard holds the games in index order, the order the window takes them in, so a
    // resumed run that reads it back trains on the same window as the uninterrupted run.
    let shard_path = run.shard(generation);
    if games.is_empty() {
        return Ok(None);
    }
    let mut shard =
        std::io::BufWriter::new(std::fs::File::create(&shard_path).map_err(|e| io("write", &shard_path, e))?);
    for g in &games {
        serde_json::to_writer(&mut shard, g)
            .map_err(std::io::Error::other)
            .and_then(|_| writeln!(shard))
            .map_err(|e| io("write", &shard_path, e))?;
    }
    shard.flush().map_err(|e| io("write", &shard_path, e))?;
    Ok(Some((games, stats)))
}

/// The names of the external shards a run has taken (kept in the run directory, so a resumed
/// run does not take one twice).
fn taken_path(run: &Layout) -> PathBuf {
    run.root.join("external-taken.json")
}

/// A generation of games from external players: waits until the shards moved into `dir` since
/// the last generation hold `games_per_generation` games (or the run must stop), takes whole
/// files in name order, checks every game by replaying it, and writes them as the generation's
/// own shard (so a resumed run reads its window as the local loop's). `None` when the run must
/// stop before any game came.
fn take_external<G: Game>(
    game: &G,
    config: &AzConfig,
    run: &Layout,
    dir: &Path,
    generation: u64,
    budget: &Budget<'_>,
) -> Result<Option<(Vec<SelfPlayGame>, crate::SelfPlayStats)>, LearnError> {
    let start = Instant::now();
    let mut taken: std::collections::BTreeSet<String> =
        std::fs::read_to_string(taken_path(run)).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
    let mut games = Vec::new();
    let mut names = Vec::new();
    loop {
        let mut fresh: Vec<String> = std::fs::read_dir(dir)
            .map_err(|e| io("read", dir, e))?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".jsonl") && !taken.contains(n) && !names.contains(n))
            .collect();
        fresh.sort();
        for name in fresh {
            let path = dir.join(&name);
            meeple_game::limits::read_lines(&path, meeple_game::limits::MAX_RECORD_LINE, "self-play shard", |line| {
                if line.text.trim().is_empty() {
                    return Ok(());
                }
                let record: SelfPlayGame = serde_json::from_str(line.text).map_err(|e| {
                    meeple_game::Error::Record(format!("shard '{}' line {}: {e}", path.display(), line.number))
                })?;
                replay_states(game, &record).map_err(meeple_game::Error::from)?;
                games.push(record);
                Ok(())
            })?;
            names.push(name);
            working(budget, generation, games.len() as u64, games.iter().map(|g| g.positions.len() as u64).sum());
        }
        if games.len() >= config.games_per_generation {
            break;
        }
        if budget.must_stop() {
            if games.is_empty() {
                return Ok(None);
            }
            break;
        }
        std::thread::sleep(EXTERNAL_POLL);
    }
    let shard_path = run.shard(generation);
    let mut text = String::new();
    for g in &games {
        text.push_str(&serde_json::to_string(g).expect("self-play games serialise"));
        text.push('\n');
    }
    meeple_arena::files::write_atomic(&shard_path, text.as_bytes()).map_err(|e| io("write", &shard_path, e))?;
    taken.extend(names);
    let list = serde_json::to_string(&taken).expect("names serialise");
    meeple_arena::files::write_atomic(&taken_path(run), list.as_bytes())
        .map_err(|e| io("write", &taken_path(run), e))?;
    let positions = games.iter().map(|g| g.positions.len() as u64).sum();
    let stats = crate::SelfPlayStats {
        games: games.len() as u64,
        positions,
        seconds: start.elapsed().as_secs_f64(),
        ..Default::default()
    };
    Ok(Some((games, stats)))
}

/// One external player's batch: `games` self-play games of the run in `run_dir` (its settings
/// from `run.json`) with the newest checkpoint (`ckpt/last.safetensors`), written whole into
/// `out` (a `.jsonl` file in the run's external directory; written under another name first, so
/// the trainer never reads half of it). Returns the batch's counts.
pub fn play_external<G: Game>(
    game: &G,
    run_dir: &Path,
    games: usize,
    seed: u64,
    threads: usize,
    out: &Path,
) -> Result<crate::SelfPlayStats, LearnError> {
    let run = Layout { root: run_dir.to_path_buf() };
    let config = read_config(run_dir)?;
    let spec = game.spec().to_string();
    if config.game != spec {
        return Err(LearnError::Config(format!("the run is for '{}', the game is '{spec}'", config.game)));
    }
    if out.extension().is_none_or(|e| e != "jsonl") {
        return Err(LearnError::Config(format!("'{}': a shard's name ends in .jsonl", out.display())));
    }
    let (network, _) = meeple_nn::Network::load(&run.last("safetensors"), Some(&spec), threads)
        .map_err(|e| LearnError::Data(format!("the run's newest checkpoint: {e}")))?;
    let (played, stats) = self_play_until(game, &network, &config.selfplay, games, seed, threads, &|| false, |_| {})?;
    let mut text = String::new();
    for g in &played {
        text.push_str(&serde_json::to_string(g).expect("self-play games serialise"));
        text.push('\n');
    }
    // Written whole under a temporary name (not ending in .jsonl, which the trainer looks for).
    meeple_arena::files::write_atomic(out, text.as_bytes()).map_err(|e| io("write", out, e))?;
    Ok(stats)
}

/// Sums of a generation's training losses.
#[derive(Default)]
struct LossSums {
    steps: u64,
    policy: f64,
    value: f64,
    ownership: f64,
    score: f64,
    entropy: f64,
    /// The last step's learning rate.
    lr: f64,
}

/// Trains on the window after a generation: `new_positions x reuse / batch` steps (fewer at
/// the step limit or when time runs out), with the learning rate annealed to the run's end.
#[allow(clippy::too_many_arguments)]
fn train_generation<S: State>(
    trainer: &mut Trainer,
    window: &VecDeque<Sample<S>>,
    net: &NetConfig,
    config: &AzConfig,
    new_positions: usize,
    progress: &crate::run::Progress,
    budget: &Budget<'_>,
    rng: &mut Rng,
) -> Result<LossSums, LearnError> {
    let mut sums = LossSums::default();
    if window.len() < config.min_window.max(1) {
        return Ok(sums);
    }
    let wanted = ((new_positions as f64 * config.reuse) / config.batch as f64).ceil().max(1.0) as u64;
    let wanted = match budget.plan().steps {
        Some(max) => wanted.min(max.saturating_sub(progress.steps)),
        None => wanted,
    };
    // The schedule follows the run's plan from where the run stands now (its time included:
    // the generation's self-play has just taken some).
    if let Some(anneal) = budget.anneal_at(progress) {
        trainer.set_anneal(anneal);
    }
    for _ in 0..wanted {
        if budget.must_stop() {
            break;
        }
        let batch = sample_batch(window, net, config.batch, rng);
        let l = trainer.train_step(&batch)?;
        sums.policy += l.policy;
        sums.value += l.value;
        sums.entropy += l.entropy;
        sums.ownership += l.ownership;
        sums.score += l.score;
        sums.lr = l.lr;
        sums.steps += 1;
    }
    Ok(sums)
}

/// The sidecar of a run's checkpoint: the run's configuration and progress, the evaluation
/// settings, and the commit of the meeple that trained it.
fn sidecar(config: &AzConfig, progress: serde_json::Value) -> Sidecar {
    Sidecar {
        format: meeple_nn::SIDECAR_FORMAT,
        net: NetConfig {
            trunk: meeple_nn::Trunk::Mlp { layers: 1, width: 1 },
            input: vec![],
            actions: 0,
            seats: 0,
            head: meeple_nn::Head::Dense,
            ownership: false,
            score: false,
            policy_filters: 2,
            value_filters: 1,
        },
        game: config.game.clone(),
        step: 0,
        run: serde_json::json!({
            "config": config,
            "progress": progress,
            "evaluation": null,
            "commit": env!("MEEPLE_COMMIT"),
        }),
        commands: Vec::new(),
    }
}

/// How a position's value target is made from its game: `mix` x the result + (1 - `mix`) x
/// the short-term search value with `lambda` (see [`AzConfig::value_lambda`]); the result is
/// `score` x the score margin's value + (1 - `score`) x the win or loss
/// (see [`AzConfig::value_score`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ValueTarget {
    pub mix: f64,
    pub lambda: f64,
    pub score: f64,
}

impl ValueTarget {
    /// Both shares checked (0 to 1).
    pub fn new(mix: f64, lambda: f64) -> Result<Self, LearnError> {
        for (name, x) in [("value mix", mix), ("value lambda", lambda)] {
            if !(0.0..=1.0).contains(&x) {
                return Err(LearnError::Config(format!("{name} {x} is outside 0 to 1")));
            }
        }
        Ok(ValueTarget { mix, lambda, score: 0.0 })
    }

    /// The same with `score` of the result on the score margin (0 to 1, checked).
    pub fn with_score(self, score: f64) -> Result<Self, LearnError> {
        if !(0.0..=1.0).contains(&score) {
            return Err(LearnError::Config(format!("value score share {score} is outside 0 to 1")));
        }
        Ok(ValueTarget { score, ..self })
    }

    /// The target for the games of generation `generation` (1 the first).
    fn of(config: &AzConfig, generation: u64) -> Self {
        let warmup = config.value_mix_warmup;
        let ramp = if warmup == 0 { 1.0 } else { (generation as f64 / warmup as f64).min(1.0) };
        ValueTarget { mix: config.value_mix * ramp, lambda: config.value_lambda, score: config.value_score }
    }

    /// The targets of a game's positions, each a value per seat; `margins` the seats' score
    /// margins' values (see [`margin_values`]) where `score` is above 0.
    fn targets(&self, record: &SelfPlayGame, margins: Option<&[f64]>) -> Vec<Vec<f32>> {
        let z: Vec<f64> = match margins {
            Some(m) if self.score > 0.0 => {
                record.returns.iter().zip(m).map(|(&r, &m)| (1.0 - self.score) * r + self.score * m).collect()
            }
            _ => record.returns.clone(),
        };
        // Backwards from the end: short = (1 - λ) q + λ short', the result past the last decision.
        let mut short: Vec<f64> = z.clone();
        let mut out = vec![Vec::new(); record.positions.len()];
        for (p, target) in record.positions.iter().zip(out.iter_mut()).rev() {
            for (s, &q) in short.iter_mut().zip(&p.root_value) {
                *s = (1.0 - self.lambda) * q as f64 + self.lambda * *s;
            }
            *target = z.iter().zip(&short).map(|(&z, &s)| (self.mix * z + (1.0 - self.mix) * s) as f32).collect();
        }
        out
    }
}

/// Adds a game's decisions to the window; returns how many.
fn add_game<G: Game>(
    game: &G,
    record: &SelfPlayGame,
    target: ValueTarget,
    window: &mut VecDeque<Sample<G::State>>,
) -> Result<usize, LearnError> {
    let states = replay_states(game, record)?;
    let last = std::sync::Arc::new(states.last().expect("a game has its first state").clone());
    let mut legal = Vec::new();
    // A game cut at the ply cap has no margin: its result alone (the game's own scale is checked
    // before a run starts).
    let margins = if target.score > 0.0 { margin_values(&*last) } else { None };
    for (p, value) in record.positions.iter().zip(target.targets(record, margins.as_deref())) {
        let state = states
            .get(p.ply as usize)
            .ok_or_else(|| LearnError::Data(format!("a position at ply {} beyond the game", p.ply)))?;
        state.legal_actions(&mut legal);
        window.push_back(Sample {
            state: state.clone(),
            mover: p.mover,
            legal: legal.clone(),
            policy: p.policy.clone(),
            value,
            last: last.clone(),
        });
    }
    Ok(record.positions.len())
}

/// Refills the window from the newest shards, up to its size.
fn load_window<G: Game>(
    game: &G,
    run: &Layout,
    generation: u64,
    config: &AzConfig,
    window: &mut VecDeque<Sample<G::State>>,
) -> Result<(), LearnError> {
    let mut generations: Vec<u64> = (1..=generation).rev().collect();
    generations.retain(|&g| run.shard(g).exists());
    let mut loaded: Vec<VecDeque<Sample<G::State>>> = Vec::new();
    let mut total = 0;
    for g in generations {
        let mut part = VecDeque::new();
        read_shard(game, &run.shard(g), ValueTarget::of(config, g), &mut part)?;
        total += part.len();
        loaded.push(part);
        if total >= config.window {
            break;
        }
    }
    for part in loaded.into_iter().rev() {
        window.extend(part);
    }
    while window.len() > config.window {
        window.pop_front();
    }
    Ok(())
}

/// Adds the positions of a self-play shard's games to `window` (a line cut off mid-write is
/// left out: its game is not whole).
fn read_shard<G: Game>(
    game: &G,
    path: &Path,
    target: ValueTarget,
    window: &mut VecDeque<Sample<G::State>>,
) -> Result<(), LearnError> {
    meeple_game::limits::read_lines(path, meeple_game::limits::MAX_RECORD_LINE, "self-play shard", |line| {
        if line.text.trim().is_empty() || !line.ended {
            return Ok(());
        }
        let record: SelfPlayGame = serde_json::from_str(line.text)
            .map_err(|e| meeple_game::Error::Record(format!("self-play shard line {}: {e}", line.number)))?;
        add_game(game, &record, target, window).map_err(meeple_game::Error::from)?;
        Ok(())
    })?;
    Ok(())
}

/// A training batch of `size` positions drawn from self-play shard files as `train az` draws
/// its batches from its window (uniformly, each under a random symmetry; value targets as
/// `target` makes them), for a trainer outside this process (the PyTorch one). The same seed
/// gives the same batch.
pub fn batch_from_shards<G: Game>(
    game: &G,
    shards: &[PathBuf],
    net: &NetConfig,
    target: ValueTarget,
    size: usize,
    seed: u64,
) -> Result<Batch, LearnError> {
    let target = ValueTarget::new(target.mix, target.lambda)?.with_score(target.score)?;
    if target.score > 0.0 && game.initial_state().score_scale().is_none() {
        return Err(LearnError::Config(format!(
            "value score share {}: {} has no score margin (cathedral, catan and sagrada do)",
            target.score,
            game.spec()
        )));
    }
    // The network must be one for this game: its shapes size the batch.
    let shape = (game.observation_shape(), game.num_actions(), game.num_players());
    if (net.input.clone(), net.actions, net.seats) != shape {
        return Err(LearnError::Config(format!(
            "the network reads {:?} with {} actions and {} seats; {} has {:?}, {} and {}",
            net.input,
            net.actions,
            net.seats,
            game.spec(),
            shape.0,
            shape.1,
            shape.2
        )));
    }
    let mut window = VecDeque::new();
    for path in shards {
        read_shard(game, path, target, &mut window)?;
    }
    if window.is_empty() {
        return Err(LearnError::Data("the shards hold no finished game".into()));
    }
    Ok(sample_batch(&window, net, size, &mut rng_from_seed(seed)))
}

/// A training batch drawn uniformly from the window, each position under a random symmetry
/// (its ownership target under the same one), with the auxiliary targets the network has.
fn sample_batch<S: State>(window: &VecDeque<Sample<S>>, net: &NetConfig, size: usize, rng: &mut Rng) -> Batch {
    let (n, a, seats, cells) = (net.input_len(), net.actions, net.seats, net.ownership_cells());
    let mut batch = Batch {
        size,
        obs: Vec::with_capacity(size * n),
        legal: vec![0.0; size * a],
        policy: vec![0.0; size * a],
        policy_weight: Vec::with_capacity(size),
        value: Vec::with_capacity(size * seats),
        ownership: Vec::with_capacity(size * cells),
        ownership_weight: Vec::with_capacity(if cells > 0 { size } else { 0 }),
        score: Vec::with_capacity(if net.score { size } else { 0 }),
        score_weight: Vec::with_capacity(if net.score { size } else { 0 }),
    };
    let mut obs = Vec::new();
    let mut own = Vec::new();
    for b in 0..size {
        let s = &window[rng.random_range(0..window.len())];
        let k = rng.random_range(0..s.state.symmetries().max(1));
        let image = s.state.symmetric(k);
        image.observation(s.mover, &mut obs);
        batch.obs.extend_from_slice(&obs);
        for &x in &s.legal {
            batch.legal[b * a + s.state.symmetric_action(x, k) as usize] = 1.0;
        }
        for &(x, p) in &s.policy {
            batch.policy[b * a + s.state.symmetric_action(x, k) as usize] = p;
        }
        batch.policy_weight.push(if s.policy.is_empty() { 0.0 } else { 1.0 });
        batch.value.extend((0..seats).map(|i| s.value[(s.mover + i) % seats]));
        if cells > 0 {
            let known = s.last.symmetric(k).ownership(s.mover, &mut own) && own.len() == cells;
            batch.ownership.extend((0..cells).map(|c| if known { own[c] } else { 0.0 }));
            batch.ownership_weight.push(if known { 1.0 } else { 0.0 });
        }
        if net.score {
            let margin = score_margin(&*s.last, s.mover);
            batch.score.push(margin.unwrap_or(0.0));
            batch.score_weight.push(if margin.is_some() { 1.0 } else { 0.0 });
        }
    }
    batch
}

/// Each seat's score margin as a value in 0..=1 for a game that ended in `last`: `0.5 + 0.5 x`
/// [`score_margin`] (a seat that won by the game's scale or more 1, one that lost by it 0).
/// `None` where the game is unfinished or has no score scale.
pub(crate) fn margin_values<S: State>(last: &S) -> Option<Vec<f64>> {
    (0..last.scores().len()).map(|p| score_margin(last, p).map(|m| 0.5 + 0.5 * m as f64)).collect()
}

/// The score-margin target of a game that ended in `last`, for `mover`: the mover's score minus
/// the best other seat's, over the game's [`State::score_scale`], clamped to -1..=1. `None`
/// where the game has no scale or did not finish (a game cut at the ply cap).
fn score_margin<S: State>(last: &S, mover: usize) -> Option<f32> {
    let scale = last.score_scale()?;
    last.returns()?;
    let scores = last.scores();
    let best_other = (0..scores.len()).filter(|&p| p != mover).map(|p| scores[p]).fold(f64::NEG_INFINITY, f64::max);
    Some((((scores[mover] - best_other) as f32) / scale).clamp(-1.0, 1.0))
}

/// `train az`'s settings for `game`: `given` (the flags typed, or Python's keywords: each by
/// its own name, `sims`, `lr`, `in_flight`, or by its path, `selfplay.search.sims`) over
/// [`default_config`] with their simulations, then checked. The in-flight games are at most a
/// generation's, the window's start at most the window, and random openings without a share
/// have no length.
/// The network of a run started from `init` (`--init`): the checkpoint's, as a spec; a --net
/// among the `given` settings is refused unless it is the same network (`spec` writes a given
/// spec as the network's own spec reads).
pub(crate) fn init_network(
    init: &str,
    given: &serde_json::Value,
    spec: impl Fn(&str) -> Result<String, LearnError>,
) -> Result<String, LearnError> {
    let theirs = init_sidecar(Path::new(init))?.net.spec();
    match crate::flags::leaf(given, "net").and_then(|v| v.as_str()) {
        None => Ok(theirs),
        Some(net) if spec(net)? == theirs => Ok(theirs),
        Some(net) => Err(LearnError::Config(format!(
            "--net {net}: --init '{init}' is the network '{theirs}', which a warm start keeps; leave --net out or give \
             that"
        ))),
    }
}

/// The sidecar of a network to start from (`--init`), read without its weights.
fn init_sidecar(path: &Path) -> Result<Sidecar, LearnError> {
    let side = meeple_nn::sidecar_path(path);
    let text = meeple_game::limits::read_text(&side, meeple_game::limits::MAX_TEXT_FILE, "--init sidecar")
        .map_err(|e| LearnError::Config(format!("--init '{}': {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| {
        LearnError::Config(format!("--init '{}': '{}' is not a network sidecar: {e}", path.display(), side.display()))
    })
}

/// For each action of `to`, the action of `from` (a related game: another variant) that its
/// notation names alike, at the first decision of each game's opening. Games whose action ids
/// share their meaning map id to id; a variant that renumbers or adds actions maps only those
/// it shares.
pub fn corresponding_actions<G: Game>(from: &G, to: &G) -> Vec<Option<usize>> {
    fn first_decision<G: Game>(game: &G) -> G::State {
        let mut state = game.initial_state();
        let mut outcomes = Vec::new();
        while state.turn() == meeple_game::Turn::Chance {
            state.chance_outcomes(&mut outcomes);
            state.apply_unchecked(outcomes[0].0);
        }
        state
    }
    let (a, b) = (first_decision(from), first_decision(to));
    let names: std::collections::HashMap<String, usize> =
        (0..from.num_actions()).map(|x| (a.action_to_string(x as Action), x)).collect();
    (0..to.num_actions()).map(|x| names.get(&b.action_to_string(x as Action)).copied()).collect()
}

/// The trainer of a run started warm from `init` (`--init`): the network `net` for `game`, the
/// checkpoint's trunk and value head, and policy rows where the actions correspond.
fn warm_start<G: Game>(game: &G, init: &Path, net: &NetConfig, config: &AzConfig) -> Result<Trainer, LearnError> {
    let side = init_sidecar(init)?;
    let refuse = |why: String| LearnError::Config(format!("--init '{}': {why}", init.display()));
    let theirs: meeple_game::Spec = side.game.parse().map_err(|e| refuse(format!("its game '{}': {e}", side.game)))?;
    if theirs.name != G::INFO.name {
        return Err(refuse(format!(
            "it plays {}, not {}: a warm start takes a variant of the same game",
            side.game,
            G::INFO.name
        )));
    }
    let from = G::from_spec(&theirs).map_err(|e| refuse(format!("its game '{}': {e}", side.game)))?;
    let rows = corresponding_actions(&from, game);
    let (trainer, _) = Trainer::warm_start_into(init, net, &rows, config.train.clone(), config.threads)
        .map_err(|e| LearnError::Config(e.to_string()))?;
    Ok(trainer)
}

/// The network a run would start with, for checks and benchmarks.
pub fn fresh_network<G: Game>(
    game: &G,
    net: &str,
    seed: u64,
    threads: usize,
) -> Result<meeple_nn::Network, LearnError> {
    Ok(meeple_nn::Network::new(net_config(game, net)?, seed, threads))
}

/// Evaluations per second of `evaluator` at a batch size, on observations of `game` (for
/// benchmarks).
pub fn evaluations_per_second<G: Game>(
    game: &G,
    evaluator: &dyn PolicyValue,
    batch: usize,
    seconds: f64,
) -> Result<f64, LearnError> {
    let mut obs = Vec::new();
    let mut one = Vec::new();
    let state = game.initial_state();
    let mut s = state.clone();
    let mut rng = rng_from_seed(1);
    let mut legal = Vec::new();
    for _ in 0..batch {
        // Varied positions: a few random plies from the start.
        if s.current_player().is_none() {
            s = state.clone();
        }
        if let Some(p) = s.current_player() {
            s.observation(p, &mut one);
            obs.extend_from_slice(&one);
            s.apply_unchecked(s.random_action(&mut rng, &mut legal));
        } else {
            s.observation(0, &mut one);
            obs.extend_from_slice(&one);
        }
    }
    let start = Instant::now();
    let mut done = 0u64;
    while start.elapsed().as_secs_f64() < seconds || done == 0 {
        evaluator.evaluate(&obs, batch)?;
        done += batch as u64;
    }
    Ok(done as f64 / start.elapsed().as_secs_f64())
}

#[cfg(test)]
#[path = "train_tests.rs"]
mod tests;
