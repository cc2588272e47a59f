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
            clock: Clock { session: Instant::now(), base: 0.0 },
            hooks: &Quiet,
            anneal: None,
            games_left: None,
        }
    }

    /// The run's plan: its limits in minutes of all sessions, games and optimiser steps, and
    /// where it was extended (for rounds long enough to be cut short by them, and steps to stop
    /// at exactly).
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The seconds the run has trained, this session's and earlier ones'.
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
    /// The seconds trained, this session's and earlier ones'.
    pub seconds: f64,
    /// The command lines that made the run (earlier sessions' first), for checkpoints that keep
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

/// The run's best checkpoint by its evaluations ([`Evaluation::merit`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Best {
    /// The trainer's round it was saved at ([`Learner::generation`]), and its progress.
    pub generation: u64,
    pub progress: Progress,
    /// Its merit, and what the merit is.
    pub merit: f64,
    pub by: String,
}

/// What a run was planned to do, kept in `run.json`: its limits, and where it was last extended
/// to them. A learning rate annealed over the run follows the plan, so a run resumed with the
/// same limits goes on with the schedule it had, and one extended to a new end (`--extend`)
/// anneals from the rate it stands at to the new end.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minutes: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub games: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<u64>,
    /// Where the run stood when it was extended to these limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Mark>,
}

/// Where a run stood in its plan when it was extended: the share of the old plan done, and its
/// progress then.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Mark {
    pub done: f64,
    pub progress: Progress,
}

impl Plan {
    /// The plan of `options`' limits, not extended.
    pub fn of(options: &RunOptions) -> Self {
        Plan { minutes: options.minutes, games: options.games, steps: options.steps, from: None }
    }

    /// Whether both plans have the same limits.
    pub fn same_limits(&self, other: &Plan) -> bool {
        (self.minutes, self.games, self.steps) == (other.minutes, other.games, other.steps)
    }

    /// The limits as flags (`--minutes 60 --games 1000`), or "no limit".
    pub fn flags(&self) -> String {
        let mut parts = Vec::new();
        if let Some(m) = self.minutes {
            parts.push(format!("--minutes {m}"));
        }
        if let Some(g) = self.games {
            parts.push(format!("--games {g}"));
        }
        if let Some(s) = self.steps {
            parts.push(format!("--steps {s}"));
        }
        if parts.is_empty() { "no limit".to_string() } else { parts.join(" ") }
    }

    /// The share of the plan done at `p` (0 to 1; 0 without limits): the furthest of its
    /// limits, counted from where it was extended.
    pub fn done(&self, p: &Progress) -> f64 {
        let (d0, base) = match &self.from {
            Some(m) => (m.done, m.progress.clone()),
            None => (0.0, Progress::default()),
        };
        let share = |x: f64, x0: f64, total: f64| if total > x0 { (x - x0) / (total - x0) } else { 1.0 };
        let shares = [
            self.minutes.map(|m| share(p.seconds, base.seconds, m * 60.0)),
            self.games.map(|g| share(p.episodes as f64, base.episodes as f64, g as f64)),
            self.steps.map(|s| share(p.steps as f64, base.steps as f64, s as f64)),
        ];
        let f = shares.into_iter().flatten().fold(0.0f64, f64::max).clamp(0.0, 1.0);
        (d0 + (1.0 - d0) * f).clamp(0.0, 1.0)
    }

    /// Where a run at `p` stands for its learning rate: the share done, and the step it ends at
    /// (a step limit's exactly; otherwise at the pace since the plan began or was extended).
    pub fn anneal(&self, p: &Progress) -> Anneal {
        let done = self.done(p);
        let (d0, s0) = self.from.as_ref().map_or((0.0, 0), |m| (m.done, m.progress.steps));
        let by_pace =
            (done > d0 && p.steps > s0).then(|| s0 + ((p.steps - s0) as f64 * (1.0 - d0) / (done - d0)).round() as u64);
        let end = if done >= 1.0 { Some(p.steps) } else { [self.steps, by_pace].into_iter().flatten().min() };
        Anneal { step: p.steps, done, end }
    }

    /// This plan's limits taken up at `p` by a run planned as `old`.
    pub fn extending(&self, old: &Plan, p: &Progress) -> Plan {
        Plan { from: Some(Mark { done: old.done(p), progress: p.clone() }), ..self.clone() }
    }
}

/// What every run takes, whatever its trainer.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The run directory.
    pub out: PathBuf,
    /// Continue the run in `out` from its last checkpoint.
    pub resume: bool,
    /// Resuming with other limits: the run's new plan, its schedule going on from where it
    /// stands (without it, other limits are refused).
    pub extend: bool,
    /// Stop after this many minutes (this session and earlier ones together).
    pub minutes: Option<f64>,
    /// Stop after this many games (episodes).
    pub games: Option<u64>,
    /// Stop after this many optimiser steps.
    pub steps: Option<u64>,
    /// Seed of the evaluations.
    pub seed: u64,
    /// Threads for the evaluations.
    pub threads: usize,
    /// How often to evaluate against the ladder, keeping that checkpoint (`None`: the
    /// trainer's own [`Kind::evaluate_every`]).
    pub eval: Option<Every>,
    /// Random plies that open each evaluation game (`None`: the ladder's default).
    pub eval_opening_plies: Option<usize>,
    /// Whether the checkpoints kept on that cadence play the ladder (false: only kept).
    pub evaluate_kept: bool,
    /// Games against each ladder opponent per evaluation, a multiple of the seatings.
    pub eval_games: Option<usize>,
    /// The ladder's opponents (empty: `random` and the game's ladder agents).
    pub ladder: Vec<String>,
    /// The equal-time opponent of each evaluation (`None`: without one).
    pub equal_time: Option<String>,
    /// Write a resumable checkpoint at least this often.
    pub save_seconds: f64,
    /// The command lines that made the run, kept in `run.json`.
    pub commands: Vec<String>,
    /// The learner anneals its rate over the run, which needs a limit.
    pub needs_limit: Option<&'static str>,
    /// Also write the last checkpoint here when the run ends (refused where a file is already).
    pub export: Option<PathBuf>,
}

impl RunOptions {
    /// A run in `out` with no limits, no evaluation, a checkpoint a minute.
    pub fn new(out: impl Into<PathBuf>) -> Self {
        RunOptions {
            out: out.into(),
            resume: false,
            extend: false,
            minutes: None,
            games: None,
            steps: None,
            seed: 1,
            threads: 1,
            eval: None,
            eval_opening_plies: None,
            evaluate_kept: true,
            eval_games: None,
            ladder: Vec::new(),
            equal_time: None,
            save_seconds: 60.0,
            commands: Vec::new(),
            needs_limit: None,
            export: None,
        }
    }
}

/// How often a run plays its ladder, keeping that checkpoint (`--eval-every`): never, every
/// so many minutes, or every so many of the trainer's rounds as its checkpoints are numbered
/// ([`Learner::generation`]: AlphaZero's generations, the epochs of `vae` and `value --data
/// search`, the other trainers' games).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Every {
    Never,
    Minutes(f64),
    Rounds(u64),
}

impl std::str::FromStr for Every {
    type Err = String;

    /// `0` or `never`; a time (`90s`, `10m`, `1h`); or a count (`5`).
    fn from_str(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let why = || {
            format!(
                "'{t}': give 0 (never), a time like 90s, 10m or 1h, or a count of rounds like 5 (generations, \
                 epochs or games as the trainer numbers its checkpoints)"
            )
        };
        if t == "never" {
            return Ok(Every::Never);
        }
        if let Ok(n) = t.parse::<u64>() {
            return Ok(if n == 0 { Every::Never } else { Every::Rounds(n) });
        }
        if t.ends_with(|c: char| c.is_ascii_alphabetic()) {
            let d = meeple_game::parse_duration(t).ok_or_else(why)?;
            let minutes = d.as_secs_f64() / 60.0;
            return Ok(if minutes > 0.0 { Every::Minutes(minutes) } else { Every::Never });
        }
        Err(why())
    }
}

impl std::fmt::Display for Every {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Every::Never => write!(f, "0"),
            Every::Minutes(m) => write!(f, "{m}m"),
            Every::Rounds(n) => write!(f, "{n}"),
        }
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

/// The files of a run directory.
#[derive(Clone, Debug)]
pub struct Layout {
    pub root: PathBuf,
}

impl Layout {
    pub fn run_json(&self) -> PathBuf {
        self.root.join("run.json")
    }
    pub fn metrics(&self) -> PathBuf {
        self.root.join("metrics.jsonl")
    }
    pub fn checkpoints(&self) -> PathBuf {
        self.root.join("ckpt")
    }
    /// The checkpoint to resume from.
    pub fn last(&self, extension: &str) -> PathBuf {
        self.checkpoints().join(format!("last.{extension}"))
    }
    pub fn kept(&self, name: &str, extension: &str) -> PathBuf {
        self.checkpoints().join(format!("{name}.{extension}"))
    }
    /// The checkpoint the evaluations rated best so far.
    pub fn best(&self, extension: &str) -> PathBuf {
        self.checkpoints().join(format!("best.{extension}"))
    }
    /// AlphaZero's self-play shards, one a generation.
    pub fn selfplay(&self) -> PathBuf {
        self.root.join("selfplay")
    }
    pub fn shard(&self, generation: u64) -> PathBuf {
        self.selfplay().join(format!("gen-{generation:06}.jsonl"))
    }

    /// The files present that a run needs to go on elsewhere, relative to its directory:
    /// `run.json`, the metrics, the ladder's ratings, and the last and best checkpoints with what
    /// sits beside them (sidecar, optimiser state).
    pub fn resume_files(&self) -> Vec<String> {
        let mut files = vec!["run.json".to_string()];
        for name in ["metrics.jsonl", "ladder.json"] {
            if self.root.join(name).is_file() {
                files.push(name.to_string());
            }
        }
        let mut beside: Vec<String> = std::fs::read_dir(self.checkpoints())
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|n| n.starts_with("last.") || n.starts_with("best."))
            .map(|n| format!("ckpt/{n}"))
            .collect();
        beside.sort();
        files.extend(beside);
        files
    }
}

/// The plan of a run started or resumed with `options`: a new run's limits; a resumed run's
/// stored plan, refused where the limits differ unless extended (`--extend`), which takes the
/// new limits from where the run stands at `progress`.
fn plan_of(options: &RunOptions, stored: Option<&RunFile>, progress: &Progress) -> Result<Plan, LearnError> {
    let now = Plan::of(options);
    let Some(file) = stored else {
        if options.extend {
            return Err(LearnError::Config(
                "--extend gives a run a new end: it goes with --resume, on a run that has one".into(),
            ));
        }
        return Ok(now);
    };
    // A run of an older meeple kept no plan: it goes on to the limits given.
    let Some(old) = &file.plan else { return Ok(now) };
    match (old.same_limits(&now), options.extend) {
        (true, false) => Ok(old.clone()),
        (true, true) => Err(LearnError::Config(format!(
            "--extend: the run is planned for {} already; give the new total (--minutes, --games or --steps) to \
             extend it to",
            old.flags()
        ))),
        (false, true) => Ok(now.extending(old, progress)),
        (false, false) => Err(LearnError::Config(format!(
            "cannot resume the run in '{}' with {}: it was planned for {}, and its learning rate anneals to that end \
             ({:.0}% of the way there). Resume with the same limits to go on as planned, or add --extend to make {} \
             the new end: the schedule goes on from where it stands",
            options.out.display(),
            now.flags(),
            old.flags(),
            100.0 * old.done(progress),
            now.flags()
        ))),
    }
}

/// `run.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunFile {
    pub trainer: String,
    pub game: String,
    pub settings: Value,
    #[serde(default)]
    pub progress: Progress,
    /// The agent spec that plays a checkpoint (`{model}` where its path goes).
    #[serde(default)]
    pub agent: String,
    /// The checkpoint to resume from, relative to the run directory (`ckpt/last.safetensors`).
    pub last: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
    /// The checkpoint the evaluations rated best so far, kept as `ckpt/best.EXT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best: Option<Best>,
    /// The run's plan (absent in runs of an older meeple: their resume takes the limits given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
    /// The files the run needs to go on, relative to its directory: all that must travel to
    /// resume it on another machine (the kept checkpoints and self-play shards need not).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resume_files: Vec<String>,
}

fn io(what: &str, path: &Path, e: std::io::Error) -> LearnError {
    LearnError::Io(format!("cannot {what} '{}': {e}", path.display()))
}

/// Reads a run's `run.json`.
pub fn read_run(dir: &Path) -> Result<RunFile, LearnError> {
    let path = Layout { root: dir.to_path_buf() }.run_json();
    let text = meeple_game::limits::read_text(&path, meeple_game::limits::MAX_TEXT_FILE, "run file")?;
    serde_json::from_str(&text).map_err(|e| LearnError::Data(format!("'{}' is not a run file: {e}", path.display())))
}

fn write_run(layout: &Layout, file: &RunFile) -> Result<(), LearnError> {
    let text = serde_json::to_string_pretty(file).expect("run files serialise") + "\n";
    meeple_arena::files::write_atomic(&layout.run_json(), text.as_bytes())
        .map_err(|e| io("write", &layout.run_json(), e))
}

/// The first setting in which `stored` differs from `now`, as "--lr 0.001 (this run: 0.002)":
/// the settings with a flag first, in `flags`' order, then any other by its path; `None` when
/// they are the same apart from the paths in `may_change`.
pub fn settings_difference(stored: &Value, now: &Value, flags: &[(&str, &str)], may_change: &[&str]) -> Option<String> {
    fn walk(path: &str, a: &Value, b: &Value, skip: &[&str]) -> Option<(String, String, String)> {
        if skip.contains(&path) {
            return None;
        }
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
                keys.into_iter().find_map(|k| {
                    let sub = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                    // A setting the stored run did not record (it came later) was off there.
                    if !x.contains_key(k) && y.get(k).is_some_and(off) {
                        return None;
                    }
                    walk(&sub, x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null), skip)
                })
            }
            _ if a != b => Some((path.to_string(), a.to_string(), b.to_string())),
            _ => None,
        }
    }
    let named = flags.iter().filter(|(path, _)| !may_change.contains(path)).find_map(|(path, _)| {
        let pointer = format!("/{}", path.replace('.', "/"));
        let (x, y) = (stored.pointer(&pointer), now.pointer(&pointer));
        let unrecorded_and_off = x.is_none() && y.is_none_or(off);
        (x != y && !unrecorded_and_off).then(|| {
            let show = |v: Option<&Value>| v.map_or("nothing".to_string(), |v| v.to_string());
            (path.to_string(), show(x), show(y))
        })
    });
    let (path, was, is) = named.or_else(|| walk("", stored, now, may_change))?;
    let name = flags.iter().find(|(p, _)| *p == path).map_or_else(|| flag_of(&path), |(_, o)| o.to_string());
    Some(format!("{name} {was} (this run: {is})"))
}

/// A setting's value that means "not used": null, false, zero, an empty text or list.
fn off(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(_) => false,
    }
}

/// The flag a setting has by the usual naming: its path with `-` for `.` and `_`, the
/// optimiser's settings (`train.`) by their own name: `train.weight_decay` is
/// `--weight-decay`, `rate.start` is `--rate-start`.
fn flag_of(path: &str) -> String {
    format!("--{}", path.strip_prefix("train.").unwrap_or(path).replace(['.', '_'], "-"))
}

/// The wall clock of a run: this session's time on top of earlier sessions'.
#[derive(Clone, Copy, Debug)]
struct Clock {
    session: Instant,
    base: f64,
}

impl Clock {
    fn seconds(&self) -> f64 {
        self.base + self.session.elapsed().as_secs_f64()
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
    let mut session = Session::start(game, options, layout, stored, &learner, plan)?;
    while !session.done(&learner, &*hooks) {
        session.round(&mut learner, hooks)?;
    }
    session.save(&learner)?;
    if let Some(export) = &options.export {
        learner.save(export, &Save { resumable: false, ..session.saving() })?;
    }
    Ok(session.progress(&learner))
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

/// A run between its start and its end: the files it writes, its clock and its cadences.
struct Session<'o, G: Game> {
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

impl<'o, G: Game> Session<'o, G> {
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
        Ok(Session {
            options,
            every: options.eval.unwrap_or(kind.evaluate_every),
            layout,
            file,
            plan,
            ladder,
            log,
            clock: Clock { session: Instant::now(), base: learner.progress().seconds },
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

#[cfg(test)]
mod tests {
    use super::Every;

    #[test]
    fn the_evaluation_cadence_reads_never_a_time_or_a_count() {
        let read = |t: &str| t.parse::<Every>();
        assert_eq!(read("0"), Ok(Every::Never));
        assert_eq!(read("never"), Ok(Every::Never));
        assert_eq!(read("5"), Ok(Every::Rounds(5)));
        assert_eq!(read("10m"), Ok(Every::Minutes(10.0)));
        assert_eq!(read("90s"), Ok(Every::Minutes(1.5)));
        assert_eq!(read("1h"), Ok(Every::Minutes(60.0)));
        for bad in ["", "-1", "1.5", "5x", "m", "NaN"] {
            let err = read(bad).unwrap_err();
            assert!(err.contains("give 0 (never), a time like 90s"), "{bad}: {err}");
        }
        for every in [Every::Never, Every::Rounds(3), Every::Minutes(2.5)] {
            assert_eq!(read(&every.to_string()), Ok(every));
        }
    }
}
