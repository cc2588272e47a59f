//! The one run loop every trainer goes through, and the one layout of a run directory:
//!
//! ```text
//! DIR/run.json          the trainer, the game, its settings and how far the run has come
//! DIR/metrics.jsonl     one typed `Metrics` line a round (with its losses) and an evaluation
//! DIR/ladder.json       the evaluation opponents' ratings among themselves
//! DIR/ckpt/last.EXT     the checkpoint to resume from (a network, or a weights file)
//! DIR/ckpt/NAME.EXT     a checkpoint kept at each evaluation
//! DIR/selfplay/         AlphaZero's self-play shards, one a generation
//! ```
//!
//! A trainer implements [`Learner`]: one round of its work (reporting its losses and figures),
//! saving, the agent spec that plays its checkpoint, its settings. [`run`] owns the rest: the
//! directory, resume (refusing a run made with other settings, naming the one that differs),
//! the limits (minutes, games, steps), the checkpoint and evaluation cadence, the stop flag, the
//! clock and the totals; a front end gives [`Hooks`] for progress and the flag.

use crate::LearnError;
use crate::ladder::{Evaluation, Ladder, LadderConfig};
use crate::metrics::{Event, Metrics};
use meeple_game::Game;
pub use meeple_nn::Anneal;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

mod files;
mod plan;
pub use files::*;
pub use plan::*;

/// How far a run has come; kept in `run.json` and its checkpoints' sidecars, so `--resume`
/// goes on from there.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// Finished games (episodes).
    pub episodes: u64,
    /// Decisions of the learner played (positions seen).
    pub decisions: u64,
    /// Optimiser steps (weight updates).
    pub steps: u64,
    pub seconds: f64,
}

impl Progress {
    /// The progress as AlphaZero's and TD's checkpoint sidecars keep it (`games`, `positions`,
    /// `steps`, `seconds`), with the trainer's own `extra` fields.
    pub fn to_sidecar(&self, seconds: f64, extra: &[(&str, Value)]) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("games".into(), self.episodes.into());
        m.insert("positions".into(), self.decisions.into());
        m.insert("steps".into(), self.steps.into());
        m.insert("seconds".into(), seconds.into());
        for (k, v) in extra {
            m.insert(k.to_string(), v.clone());
        }
        Value::Object(m)
    }

    /// The progress a checkpoint's sidecar keeps (see [`Progress::to_sidecar`]).
    pub fn from_sidecar(v: Option<&Value>) -> Result<Progress, LearnError> {
        let field = |name: &str| v.and_then(|p| p.get(name));
        let count = |name: &str| {
            field(name)
                .and_then(|v| v.as_u64())
                .ok_or_else(|| LearnError::Data(format!("the checkpoint has no run progress ('{name}')")))
        };
        Ok(Progress {
            episodes: count("games")?,
            decisions: count("positions")?,
            steps: count("steps")?,
            seconds: field("seconds").and_then(|v| v.as_f64()).unwrap_or(0.0),
        })
    }
}

/// One round's figures, named as the metrics log names them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Round {
    pub losses: Vec<(String, f64)>,
    pub figures: Vec<(String, f64)>,
    pub stats: Vec<(String, f64)>,
}

impl Round {
    pub fn loss(&mut self, name: &str, v: f64) {
        self.losses.push((name.to_string(), v));
    }

    pub fn figure(&mut self, name: &str, v: f64) {
        self.figures.push((name.to_string(), v));
    }

    pub fn stat(&mut self, name: &str, v: f64) {
        self.stats.push((name.to_string(), v));
    }

    /// The value named `name` among the losses, figures and statistics.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.figures.iter().chain(&self.losses).chain(&self.stats).find(|(n, _)| n == name).map(|(_, v)| *v)
    }

    /// One line for a progress bar: every figure, short.
    pub fn summary(&self) -> String {
        self.losses
            .iter()
            .map(|(n, v)| format!("{n} loss {v:.4}"))
            .chain(self.figures.iter().map(|(n, v)| format!("{n} {v:.3}")))
            .chain(
                self.stats
                    .iter()
                    .filter(|(n, _)| n.ends_with("per_second"))
                    .map(|(n, v)| format!("{v:.0} {}", n.replace('_', " ").replace(" per second", "/s"))),
            )
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What kind of trainer a learner is, whatever its run: its name, its checkpoint files, the
/// settings a resumed run may change, and the flags behind settings not named the usual way.
/// One static per trainer; the loop and the front ends read it.
#[derive(Debug)]
pub struct Kind {
    /// The trainer's name in metrics, `run.json` and sidecars (`td`, `dqn`, `ppo`).
    pub name: &'static str,
    /// The checkpoint's file extension.
    pub extension: &'static str,
    /// The settings a resumed run may change without changing what it trains (how often it is
    /// evaluated, where it writes), as paths into [`Learner::settings`].
    pub may_change: &'static [&'static str],
    /// The flags behind settings not named the usual way (see [`settings_difference`]), for
    /// messages: `("train.decay", "--lr-decay")`; those first when several settings differ.
    pub flags: &'static [(&'static str, &'static str)],
    /// How often the run is evaluated unless told (`--eval-every`).
    pub evaluate_every: Every,
    /// The name of the checkpoint kept at an evaluation (without its extension), by the
    /// learner's round ([`Learner::generation`]).
    pub kept: fn(u64) -> String,
}

fn games(n: u64) -> String {
    format!("games-{n}")
}

impl Kind {
    /// A trainer named `name` with the usual choices: a network checkpoint, evaluated every 10
    /// minutes, its checkpoints named by games.
    pub const fn new(name: &'static str) -> Kind {
        Kind {
            name,
            extension: "safetensors",
            may_change: &[],
            flags: &[],
            evaluate_every: Every::Minutes(10.0),
            kept: games,
        }
    }
}

/// What the loop gives a round: the run's plan and clock, where the run stands for its learning
/// rate, the games it may still play, and the front end's display and stop flag.
pub struct Budget<'a> {
    plan: Plan,
    clock: Clock,
    hooks: &'a dyn Hooks,
    /// Where the run stands for a learning rate annealed over the whole run (`decay: 0`;
    /// [`meeple_nn::Trainer::set_anneal`]) as the round starts; none outside a run's loop.
    pub anneal: Option<Anneal>,
    /// The games the run may still play (its `--games` less those played; none without a
    /// limit). Learners whose rounds can take several games at once use it to stop at the limit
    /// exactly; the others may pass it by up to a round.
    pub games_left: Option<u64>,
}

impl Budget<'_> {
    /// A round with no limits, no display and no stop flag (tests, a learner driven by hand).
    pub fn unlimited() -> Budget<'static> {
        Budget {
            plan: Plan::default(),
            clock: Clock { started: Instant::now(), base: 0.0 },
            hooks: &Quiet,
            anneal: None,
            games_left: None,
        }
    }

    /// The run's plan: its limits in minutes of all its pieces, games and optimiser steps, and
    /// where it was extended (for rounds long enough to be cut short by them, and steps to stop
    /// at exactly).
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The seconds the run has trained, in this process and its earlier pieces.
    pub fn seconds(&self) -> f64 {
        self.clock.seconds()
    }

    /// Whether the run's time is up.
    pub fn over_time(&self) -> bool {
        self.plan.minutes.is_some_and(|m| self.seconds() >= m * 60.0)
    }

    /// Whether the user asked to stop (Ctrl-C): a long round ends early, or gives an empty
    /// [`Round`] when it did nothing worth a line.
    pub fn should_stop(&self) -> bool {
        self.hooks.should_stop()
    }

    /// Out of time or asked to stop.
    pub fn must_stop(&self) -> bool {
        self.over_time() || self.should_stop()
    }

    /// Progress within a long round (a generation's self-play games), for display.
    pub fn working(&self, text: &str) {
        self.hooks.working(text);
    }

    /// Where the run stands for its learning rate at `p`, with the time of now: a round that
    /// trains after playing anneals from there (none outside a run's loop).
    pub fn anneal_at(&self, p: &Progress) -> Option<Anneal> {
        self.anneal.map(|_| self.plan.anneal(&Progress { seconds: self.seconds(), ..p.clone() }))
    }
}

/// What a checkpoint records beside the learner's own state.
pub struct Save<'a> {
    /// With what `--resume` needs beside it (the optimiser's state, a replay memory's place).
    pub resumable: bool,
    /// The seconds trained, in this process and the run's earlier pieces.
    pub seconds: f64,
    /// The command lines that made the run (earlier pieces' first), for checkpoints that keep
    /// them where the network sidecars' own record does not reach.
    pub commands: &'a [String],
}

impl Save<'_> {
    /// A checkpoint outside a run's loop: not resumable, no commands.
    pub fn plain(seconds: f64) -> Save<'static> {
        Save { resumable: false, seconds, commands: &[] }
    }
}

/// A trainer's run, driven round by round by [`run`], which owns the clock, the limits, the
/// checkpoints' cadence and the evaluations.
pub trait Learner {
    /// What kind of trainer it is.
    fn kind(&self) -> &'static Kind;
    /// The agent spec that plays a checkpoint, `{model}` where its path goes (empty: none).
    fn agent(&self) -> String;
    /// Plays and trains one round within `budget`.
    fn round(&mut self, budget: &Budget<'_>) -> Result<Round, LearnError>;
    /// Its counts (the seconds as of its last checkpoint: the loop's clock goes on from them).
    fn progress(&self) -> Progress;
    /// The trainer's unit of progress in its metrics lines and kept checkpoints: games by
    /// default; AlphaZero's generations, the epochs of learners that pass over a fixed set of
    /// games.
    fn generation(&self) -> u64 {
        self.progress().episodes
    }
    /// Writes the checkpoint.
    fn save(&self, path: &Path, save: &Save<'_>) -> Result<(), LearnError>;
    /// Its settings as they are kept in `run.json`: a resumed run must have the same.
    fn settings(&self) -> Value;
    /// Whether the learner has done all its work (the epochs of a fixed data set), whatever
    /// the run's limits.
    fn finished(&self) -> bool {
        false
    }
}

/// What a front end does around the loop.
pub trait Hooks {
    /// A round ended.
    fn round(&mut self, progress: &Progress, round: &Round) {
        let _ = (progress, round);
    }
    /// The checkpoint after `progress` is being evaluated against the ladder.
    fn evaluating(&mut self, progress: &Progress) {
        let _ = progress;
    }
    /// Its evaluation (also written to the metrics log).
    fn evaluated(&mut self, progress: &Progress, evaluation: &Evaluation) {
        let _ = (progress, evaluation);
    }
    /// Whether the user asked to stop (Ctrl-C): the run saves a checkpoint and returns.
    fn should_stop(&self) -> bool {
        false
    }
    /// Progress within a long round (a generation's self-play games), for display.
    fn working(&self, text: &str) {
        let _ = text;
    }
}

/// No display, never asked to stop.
pub struct Quiet;

impl Hooks for Quiet {}

/// The wall clock of a run: this process's time on top of the run's earlier pieces'.
#[derive(Clone, Copy, Debug)]
struct Clock {
    started: Instant,
    base: f64,
}

impl Clock {
    fn seconds(&self) -> f64 {
        self.base + self.started.elapsed().as_secs_f64()
    }
}

/// Checks the run directory, builds the learner (`make` gets the checkpoint to resume from),
/// then plays and trains rounds until a limit or the stop flag; writes a resumable checkpoint
/// every `save_seconds` and at the end, and evaluates on the ladder at the `eval` cadence
/// (keeping that checkpoint). Gives the progress it stopped at.
pub fn run<G: Game, L: Learner>(
    game: &G,
    options: &RunOptions,
    make: impl FnOnce(Option<&Path>) -> Result<L, LearnError>,
    hooks: &mut dyn Hooks,
) -> Result<Progress, LearnError> {
    check_options(options)?;
    let layout = Layout { root: options.out.clone() };
    let stored = stored_run(options, &layout)?;
    let mut learner = match &stored {
        Some(file) => make(Some(&resume_from(game, options, file)?))?,
        None => make(None)?,
    };
    if let Some(file) = &stored {
        check_resume(options, file, &learner)?;
    }
    let plan = plan_of(options, stored.as_ref(), &learner.progress())?;
    std::fs::create_dir_all(layout.checkpoints()).map_err(|e| io("create", &layout.checkpoints(), e))?;
    let mut stint = Stint::start(game, options, layout, stored, &learner, plan)?;
    while !stint.done(&learner, &*hooks) {
        stint.round(&mut learner, hooks)?;
    }
    stint.save(&learner)?;
    if let Some(export) = &options.export {
        learner.save(export, &Save { resumable: false, ..stint.saving() })?;
    }
    Ok(stint.progress(&learner))
}

/// Refuses options that cannot make a run: an annealed rate without an end, an export over a file.
fn check_options(options: &RunOptions) -> Result<(), LearnError> {
    if let Some(why) = options.needs_limit
        && options.minutes.is_none()
        && options.games.is_none()
        && options.steps.is_none()
    {
        return Err(LearnError::Config(format!("{why}: give the run's length with --minutes, --games or --steps")));
    }
    if let Some(export) = &options.export
        && export.exists()
    {
        return Err(LearnError::Config(format!(
            "--export: '{}' exists already; give another file (results are never overwritten)",
            export.display()
        )));
    }
    Ok(())
}

/// The run being resumed (`--resume`), or none for a new run in an empty directory.
fn stored_run(options: &RunOptions, layout: &Layout) -> Result<Option<RunFile>, LearnError> {
    if options.resume {
        if !layout.run_json().is_file() {
            return Err(LearnError::Config(format!(
                "--resume: '{}' holds no run (no {})",
                options.out.display(),
                layout.run_json().display()
            )));
        }
        return read_run(&options.out).map(Some);
    }
    if layout.run_json().exists() || layout.metrics().exists() || layout.checkpoints().exists() {
        return Err(LearnError::Config(format!(
            "'{}' holds a run already: give --resume to continue it, or another --out",
            options.out.display()
        )));
    }
    Ok(None)
}

/// The checkpoint a resumed run goes on from: its `last`, of the same game, inside its `ckpt/`.
fn resume_from<G: Game>(game: &G, options: &RunOptions, file: &RunFile) -> Result<PathBuf, LearnError> {
    if file.game != game.spec().to_string() {
        return Err(LearnError::Config(format!(
            "cannot resume the run in '{}': it is of '{}', not '{}'",
            options.out.display(),
            file.game,
            game.spec()
        )));
    }
    let last = options.out.join(&file.last);
    if !file.last.starts_with("ckpt/") || file.last.contains("..") || !last.is_file() {
        return Err(LearnError::Config(format!("--resume: no checkpoint '{}' to continue", last.display())));
    }
    Ok(last)
}

/// Refuses to resume a run of another trainer or made with other settings, naming the one that differs.
fn check_resume<L: Learner>(options: &RunOptions, file: &RunFile, learner: &L) -> Result<(), LearnError> {
    let kind = learner.kind();
    let out = options.out.display();
    if file.trainer != kind.name {
        return Err(LearnError::Config(format!(
            "cannot resume the run in '{out}': it is a {} run, not {}",
            file.trainer, kind.name
        )));
    }
    let now = learner.settings();
    // Settings this meeple does not know: the run was written by one that kept them otherwise.
    let unknown: Vec<&str> = file
        .settings
        .as_object()
        .into_iter()
        .flat_map(|m| m.keys())
        .map(String::as_str)
        .filter(|k| now.get(k).is_none() && !kind.may_change.contains(k))
        .collect();
    if !unknown.is_empty() {
        return Err(LearnError::Config(format!(
            "cannot resume the run in '{out}': it was written by an older meeple that kept its settings otherwise \
             ({}, which {} does not take); start a new run with another --out",
            unknown.join(", "),
            kind.name
        )));
    }
    // The threads change how fast a run goes, not what it learns (every trainer plays the same
    // games on any number of them; only on one is a run repeatable bit for bit).
    let may_change: Vec<&str> = kind.may_change.iter().copied().chain(["threads"]).collect();
    match settings_difference(&file.settings, &now, kind.flags, &may_change) {
        Some(why) => Err(LearnError::Config(format!(
            "cannot resume the run in '{out}': it was made with {why}; resume with the same settings, or start a new \
             run with another --out"
        ))),
        None => Ok(()),
    }
}

/// The ladder a run's kept checkpoints play at its cadence (none where they are only kept), or
/// a refusal of evaluation flags for a run never evaluated.
fn ladder_of<G: Game>(
    game: &G,
    options: &RunOptions,
    kind: &Kind,
    agent: &str,
) -> Result<Option<Ladder<G>>, LearnError> {
    let name = kind.name;
    if options.eval.unwrap_or(kind.evaluate_every) == Every::Never {
        let given = [
            (!options.ladder.is_empty(), "--ladder"),
            (options.eval_games.is_some(), "--eval-games"),
            (options.eval_opening_plies.is_some(), "--eval-opening-plies"),
        ];
        if let Some((_, flag)) = given.iter().find(|(g, _)| *g) {
            return Err(LearnError::Config(format!(
                "{flag} sets how the run's checkpoints are evaluated, and this {name} run is never evaluated \
                 (--eval-every 0{}): give --eval-every (a time like 10m, or a count of rounds) too",
                if options.eval.is_none() { ", its default" } else { "" }
            )));
        }
        return Ok(None);
    }
    if agent.is_empty() {
        return Err(LearnError::Config(format!(
            "a {name} run has no agent to evaluate: give --eval-every 0 (and no --ladder)"
        )));
    }
    if !options.evaluate_kept {
        return Ok(None);
    }
    let mut c = LadderConfig::new(game, agent, options.threads, options.seed);
    c.opponents =
        if options.ladder.is_empty() { crate::ladder::default_opponents(game) } else { options.ladder.clone() };
    if let Some(g) = options.eval_games {
        c.games = g;
    }
    if let Some(p) = options.eval_opening_plies {
        c.opening_plies = p;
    }
    c.equal_time = options.equal_time.clone();
    Ladder::new(game, c, &options.out).map(Some)
}

/// A run's stint in this process, between its start and its end: the files it writes, its clock
/// and its cadences.
struct Stint<'o, G: Game> {
    options: &'o RunOptions,
    layout: Layout,
    file: RunFile,
    plan: Plan,
    every: Every,
    ladder: Option<Ladder<G>>,
    log: std::fs::File,
    clock: Clock,
    commands: Vec<String>,
    /// When and at which round the last evaluation was.
    last_eval: (Instant, u64),
    last_save: Instant,
}

impl<'o, G: Game> Stint<'o, G> {
    /// Writes `run.json` (the run's trainer, settings, plan and commands) and opens the
    /// metrics log and the ladder.
    fn start<L: Learner>(
        game: &G,
        options: &'o RunOptions,
        layout: Layout,
        stored: Option<RunFile>,
        learner: &L,
        plan: Plan,
    ) -> Result<Self, LearnError> {
        let kind = learner.kind();
        let mut commands = stored.as_ref().map(|f| f.commands.clone()).unwrap_or_default();
        commands.extend(options.commands.iter().cloned());
        let file = RunFile {
            trainer: kind.name.to_string(),
            game: game.spec().to_string(),
            settings: learner.settings(),
            progress: learner.progress(),
            agent: learner.agent(),
            last: format!("ckpt/last.{}", kind.extension),
            commands: commands.clone(),
            best: stored.and_then(|f| f.best),
            plan: Some(plan.clone()),
            resume_files: Vec::new(),
        };
        write_run(&layout, &file)?;
        let ladder = ladder_of(game, options, kind, &learner.agent())?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(layout.metrics())
            .map_err(|e| io("write", &layout.metrics(), e))?;
        Ok(Stint {
            options,
            every: options.eval.unwrap_or(kind.evaluate_every),
            layout,
            file,
            plan,
            ladder,
            log,
            clock: Clock { started: Instant::now(), base: learner.progress().seconds },
            commands,
            last_eval: (Instant::now(), learner.generation()),
            last_save: Instant::now(),
        })
    }

    /// The learner's progress on the run's clock.
    fn progress<L: Learner>(&self, learner: &L) -> Progress {
        Progress { seconds: self.clock.seconds(), ..learner.progress() }
    }

    fn saving(&self) -> Save<'_> {
        Save { resumable: true, seconds: self.clock.seconds(), commands: &self.commands }
    }

    /// Whether the run ends before another round: stopped, finished, or at a limit.
    fn done<L: Learner>(&self, learner: &L, hooks: &dyn Hooks) -> bool {
        let (o, p) = (self.options, self.progress(learner));
        hooks.should_stop()
            || learner.finished()
            || o.minutes.is_some_and(|m| p.seconds >= m * 60.0)
            || o.games.is_some_and(|g| p.episodes >= g)
            || o.steps.is_some_and(|s| p.steps >= s)
    }

    /// One round: its metrics line, a checkpoint when one is due, an evaluation when due.
    fn round<L: Learner>(&mut self, learner: &mut L, hooks: &mut dyn Hooks) -> Result<(), LearnError> {
        let before = self.progress(learner);
        let budget = Budget {
            plan: self.plan.clone(),
            clock: self.clock,
            hooks: &*hooks,
            anneal: Some(self.plan.anneal(&before)),
            games_left: self.options.games.map(|g| g.saturating_sub(before.episodes)),
        };
        let round = learner.round(&budget)?;
        let p = self.progress(learner);
        if round == Round::default() && (p.episodes, p.steps) == (before.episodes, before.steps) {
            // Stopped before it did anything: no line, and the loop's checks end the run.
            return Ok(());
        }
        self.write_line(&round_line(learner, &p, before.steps, &round))?;
        hooks.round(&p, &round);
        if self.last_save.elapsed().as_secs_f64() >= self.options.save_seconds {
            self.save(learner)?;
            self.last_save = Instant::now();
        }
        let due = match self.every {
            Every::Never => false,
            Every::Minutes(m) => self.last_eval.0.elapsed().as_secs_f64() >= m * 60.0,
            // A round may count many games: due once it passes the next multiple.
            Every::Rounds(n) => learner.generation() / n > self.last_eval.1 / n,
        };
        if due {
            self.evaluate(learner, &p, hooks)?;
        }
        Ok(())
    }

    /// Keeps the checkpoint at `p` and plays it against the ladder, keeping it as the best
    /// where its merit is the highest yet.
    fn evaluate<L: Learner>(&mut self, learner: &L, p: &Progress, hooks: &mut dyn Hooks) -> Result<(), LearnError> {
        let kind = learner.kind();
        let generation = learner.generation();
        let path = self.layout.kept(&(kind.kept)(generation), kind.extension);
        let commands = self.commands.clone();
        let plain = Save { resumable: false, seconds: self.clock.seconds(), commands: &commands };
        learner.save(&path, &plain)?;
        self.last_eval = (Instant::now(), generation);
        let Some(ladder) = self.ladder.as_mut() else { return Ok(()) };
        hooks.evaluating(p);
        let mut evaluation = ladder.evaluate(&path, generation);
        if let Some((merit, by)) = evaluation.merit()
            && self.file.best.as_ref().is_none_or(|b| b.by != by || merit > b.merit)
        {
            // The weights evaluated are the learner's own: nothing trained since they were saved.
            learner.save(&self.layout.best(kind.extension), &plain)?;
            self.file.best = Some(Best { generation, progress: p.clone(), merit, by });
            evaluation.best = true;
            write_run(&self.layout, &self.file)?;
        }
        self.write_line(&Metrics::evaluation(kind.name, generation, p.steps, p.seconds, evaluation.clone()))?;
        hooks.evaluated(p, &evaluation);
        self.last_eval.0 = Instant::now();
        Ok(())
    }

    /// The resumable checkpoint, and `run.json` with the progress it holds.
    fn save<L: Learner>(&mut self, learner: &L) -> Result<(), LearnError> {
        learner.save(&self.layout.last(learner.kind().extension), &self.saving())?;
        self.file.progress = self.progress(learner);
        self.file.resume_files = self.layout.resume_files();
        write_run(&self.layout, &self.file)
    }

    fn write_line(&mut self, line: &Metrics) -> Result<(), LearnError> {
        writeln!(self.log, "{}", line.to_line())
            .and_then(|_| self.log.flush())
            .map_err(|e| io("write", &self.layout.metrics(), e))
    }
}

/// A round's metrics line at `p`; it trained where the steps passed `steps_before` (a round
/// that only gathered experience, a replay memory filling, trained nothing).
fn round_line<L: Learner>(learner: &L, p: &Progress, steps_before: u64, round: &Round) -> Metrics {
    let named = |v: &[(String, f64)]| v.iter().cloned().collect();
    Metrics {
        schema: crate::metrics::SCHEMA,
        event: Event::Generation,
        trainer: learner.kind().name.into(),
        generation: learner.generation(),
        steps: p.steps,
        episodes: p.episodes,
        positions: p.decisions,
        wall_seconds: p.seconds,
        trained: p.steps > steps_before,
        losses: named(&round.losses),
        figures: named(&round.figures),
        stats: named(&round.stats),
        ..Metrics::default()
    }
}
