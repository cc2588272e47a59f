//! The one record every trainer writes to its run's `metrics.jsonl`, and reads back: `meeple
//! plot` draws it by field (every named loss on one panel, every named figure on another, the
//! ladder's scores and Elo), so a new trainer's curves need no plot code of their own.
//!
//! Each line carries its schema version. Lines written before the schema existed (AlphaZero runs
//! whose generation lines had flat `policy_loss`, `value_loss`, ... fields) are read as version 0
//! and converted, so older runs still plot.

use crate::ladder::Evaluation;
use meeple_game::{Error, limits};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The schema this meeple writes; it reads this one and 0.
pub const SCHEMA: u32 = 1;

/// The stats an AlphaZero generation logs (under the names its flat lines used before the
/// schema).
pub(crate) const AZ_STATS: [&str; 9] = [
    "window",
    "selfplay_seconds",
    "positions_per_second",
    "evaluations_per_second",
    "mean_batch",
    "mean_game_length",
    "train_seconds",
    "samples_per_second",
    "lr",
];

/// What a line records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Event {
    /// A unit of training: a self-play generation, a batch of episodes.
    #[default]
    Generation,
    /// A checkpoint's evaluation against the ladder.
    Evaluation,
}

/// One line of a metrics log.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Metrics {
    pub schema: u32,
    pub event: Event,
    /// The trainer that wrote it (`az`).
    pub trainer: String,
    /// The trainer's unit of progress so far (generations).
    pub generation: u64,
    /// Optimiser steps so far.
    pub steps: u64,
    /// Games (episodes) played so far.
    pub episodes: u64,
    /// Positions (decisions) seen so far.
    pub positions: u64,
    /// Wall seconds of the whole run (all sessions).
    pub wall_seconds: f64,
    /// Whether the line trained: a generation cut short before training logs no losses, and is
    /// no point of the loss curves.
    pub trained: bool,
    /// Training losses by name (`policy`, `value`, `ownership`): one curve each.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub losses: BTreeMap<String, f64>,
    /// Other figures worth a curve, by name (`entropy`; exploration rates, mean rewards).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub figures: BTreeMap<String, f64>,
    /// Figures kept but not drawn (speeds, the learning rate, batch sizes).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub stats: BTreeMap<String, f64>,
    /// With [`Event::Evaluation`]: the ladder's result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evaluation: Option<Evaluation>,
}

impl Metrics {
    /// An evaluation line.
    pub fn evaluation(trainer: &str, generation: u64, steps: u64, wall_seconds: f64, evaluation: Evaluation) -> Self {
        Metrics {
            schema: SCHEMA,
            event: Event::Evaluation,
            trainer: trainer.into(),
            generation,
            steps,
            wall_seconds,
            evaluation: Some(evaluation),
            ..Default::default()
        }
    }

    /// The line as JSON, without a newline.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("metrics serialise")
    }

    /// Reads one line of either schema.
    pub fn from_line(text: &str) -> Result<Self, String> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let schema = value.get("schema").and_then(|s| s.as_u64()).unwrap_or(0);
        let m = match schema {
            0 => from_schema_0(&value)?,
            s if s == SCHEMA as u64 => serde_json::from_value(value).map_err(|e| format!("not a metrics line: {e}"))?,
            s => return Err(format!("metrics schema {s}, written by a newer meeple (this one reads {SCHEMA})")),
        };
        let numbers = m.losses.values().chain(m.figures.values()).chain(m.stats.values());
        if !m.wall_seconds.is_finite() || numbers.into_iter().any(|x| !x.is_finite()) {
            return Err("a figure that is not a finite number".into());
        }
        Ok(m)
    }
}

/// A line of the flat format AlphaZero runs wrote before the schema.
fn from_schema_0(v: &serde_json::Value) -> Result<Metrics, String> {
    let number = |k: &str| v.get(k).and_then(|x| x.as_f64());
    let count = |k: &str| v.get(k).and_then(|x| x.as_u64()).unwrap_or(0);
    let wall_seconds = number("wall_seconds").ok_or("no wall_seconds")?;
    let mut m = Metrics {
        schema: 0,
        trainer: "az".into(),
        generation: count("generation"),
        steps: count("steps"),
        episodes: count("games"),
        positions: count("positions"),
        wall_seconds,
        ..Default::default()
    };
    match v.get("event").and_then(|e| e.as_str()) {
        Some("generation") => {
            m.event = Event::Generation;
            m.trained = number("samples_per_second").is_some_and(|s| s > 0.0);
            for (key, name) in [("policy_loss", "policy"), ("value_loss", "value"), ("ownership_loss", "ownership")] {
                match number(key) {
                    // A network without an ownership head logged 0 there.
                    Some(x) if !(name == "ownership" && x == 0.0) => {
                        m.losses.insert(name.into(), x);
                    }
                    None if name != "ownership" => return Err(format!("no {key}")),
                    _ => {}
                }
            }
            m.figures.insert("entropy".into(), number("entropy").ok_or("no entropy")?);
            for key in AZ_STATS {
                if let Some(x) = number(key) {
                    m.stats.insert(key.into(), x);
                }
            }
        }
        Some("evaluation") => {
            m.event = Event::Evaluation;
            let e: Evaluation = serde_json::from_value(v.clone()).map_err(|e| format!("not an evaluation: {e}"))?;
            m.evaluation = Some(e);
        }
        _ => return Err("no event".into()),
    }
    Ok(m)
}

/// Every line of a metrics log, each error naming its line.
pub fn read(path: &Path) -> Result<Vec<Metrics>, Error> {
    let mut out = Vec::new();
    limits::read_lines(path, limits::MAX_RECORD_LINE, "metrics file", |line| {
        if line.text.trim().is_empty() {
            return Ok(());
        }
        let m = Metrics::from_line(line.text)
            .map_err(|e| Error::Record(format!("metrics file '{}' line {}: {e}", path.display(), line.number)))?;
        out.push(m);
        Ok(())
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_both_schemas_read_by_field() {
        let old = r#"{"event":"generation","generation":3,"steps":40,"games":384,"positions":9000,"window":9000,"selfplay_seconds":5.0,"positions_per_second":1800.0,"evaluations_per_second":20000.0,"mean_batch":60.0,"mean_game_length":23.0,"train_seconds":2.0,"samples_per_second":5000.0,"policy_loss":1.5,"value_loss":0.2,"ownership_loss":0.0,"entropy":1.9,"lr":0.002,"wall_seconds":30.0}"#;
        let m = Metrics::from_line(old).unwrap();
        assert_eq!((m.schema, m.event, m.generation, m.episodes, m.trained), (0, Event::Generation, 3, 384, true));
        assert_eq!(m.losses, BTreeMap::from([("policy".into(), 1.5), ("value".into(), 0.2)]), "no ownership head");
        assert_eq!(m.figures["entropy"], 1.9);
        assert_eq!(m.stats["lr"], 0.002);
        // An AlphaZero generation written now names its stats as the flat lines did.
        assert_eq!(m.stats.keys().map(String::as_str).collect::<std::collections::BTreeSet<_>>(), AZ_STATS.into());
        let old_eval = r#"{"event":"evaluation","generation":5,"steps":60,"wall_seconds":61.0,"opponents":[{"opponent":"random","score":0.9,"ci":[0.7,0.97],"wins":18,"draws":0,"losses":2}],"elo":350.0,"elo_ci":[200.0,500.0],"anchor":"random","ladder":[0.0]}"#;
        let e = Metrics::from_line(old_eval).unwrap();
        let ev = e.evaluation.as_ref().unwrap();
        assert_eq!((e.event, ev.opponents[0].wins, ev.elo), (Event::Evaluation, 18, Some(350.0)));
        // The current schema round-trips.
        let mut now = Metrics { schema: SCHEMA, trainer: "az".into(), wall_seconds: 9.0, trained: true, ..m.clone() };
        now.losses.insert("ownership".into(), 0.3);
        assert_eq!(Metrics::from_line(&now.to_line()).unwrap(), now);
        let eval = Metrics::evaluation("az", 5, 60, 61.0, ev.clone());
        assert_eq!(Metrics::from_line(&eval.to_line()).unwrap(), eval);
        // What cannot be read says why.
        let newer = Metrics { schema: SCHEMA + 1, ..now.clone() }.to_line();
        assert!(Metrics::from_line(&newer).unwrap_err().contains("newer meeple"));
        assert!(
            Metrics::from_line(r#"{"event":"generation","wall_seconds":1.0}"#).unwrap_err().contains("policy_loss")
        );
        assert!(Metrics::from_line("{").unwrap_err().contains("not JSON"));
    }
}
