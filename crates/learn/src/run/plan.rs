//! What a run was planned and asked to do: its limits and where it was extended ([`Plan`]),
//! the options every run takes ([`RunOptions`]), its evaluation cadence ([`Every`]) and best
//! checkpoint ([`Best`]).

use super::{Anneal, Progress, RunFile};
use crate::LearnError;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

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
    /// Stop after this many minutes (every piece of the run together).
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
    /// The ladder's opponents (empty: the one default ladder, `ladder::default_opponents`).
    pub ladder: Vec<String>,
    /// The equal-time opponent of each evaluation (`None`: without one; by default
    /// [`crate::ladder::DEFAULT_EQUAL_TIME`], for the command line and Python alike).
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
            equal_time: Some(crate::ladder::DEFAULT_EQUAL_TIME.to_string()),
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

/// The plan of a run started or resumed with `options`: a new run's limits; a resumed run's
/// stored plan, refused where the limits differ unless extended (`--extend`), which takes the
/// new limits from where the run stands at `progress`.
pub(super) fn plan_of(options: &RunOptions, stored: Option<&RunFile>, progress: &Progress) -> Result<Plan, LearnError> {
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
