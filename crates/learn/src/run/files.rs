//! A run directory's files ([`Layout`]), its `run.json` ([`RunFile`]), and the comparison of
//! a resumed run's settings with the stored ones ([`settings_difference`]).

use super::{Best, Plan, Progress};
use crate::LearnError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};

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

pub(super) fn io(what: &str, path: &Path, e: std::io::Error) -> LearnError {
    LearnError::Io(format!("cannot {what} '{}': {e}", path.display()))
}

/// Reads a run's `run.json`.
pub fn read_run(dir: &Path) -> Result<RunFile, LearnError> {
    let path = Layout { root: dir.to_path_buf() }.run_json();
    let text = meeple_game::limits::read_text(&path, meeple_game::limits::MAX_TEXT_FILE, "run file")?;
    serde_json::from_str(&text).map_err(|e| LearnError::Data(format!("'{}' is not a run file: {e}", path.display())))
}

pub(super) fn write_run(layout: &Layout, file: &RunFile) -> Result<(), LearnError> {
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
