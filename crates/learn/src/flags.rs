//! A trainer's settings as command-line flags, defined once: the config struct derives
//! [`clap::Args`] (its doc comments are the help), its constructor gives the defaults, and its
//! `check()` the validation. [`Given`] reads back only what the user typed, as JSON settings that
//! [`crate::trainers::train`] lays over the defaults, the same way it does for Python's
//! `meeple.train(**settings)`: one path, one set of messages, whatever the front end.
//!
//! The defaults live in the constructors rather than in `default_value` attributes because
//! they depend on the game (AlphaZero's network, Catan's recipe) or on the trainer that shares a
//! config (`value` plays TD(λ) with Sarswat et al.'s defaults); `--help` shows the one a trainer
//! uses. Flags and settings keys share their names (`--batch-games` is `batch_games`), so the
//! command line, Python and `run.json` speak of the same settings.

use crate::LearnError;
use clap::parser::ValueSource;
use clap::{ArgAction, ArgMatches, Args, Command, FromArgMatches};
use serde::Serialize;
use serde_json::{Map, Value};
use std::marker::PhantomData;

/// A config whose fields are flags, with the defaults `--help` shows.
pub trait Settings: Args {
    /// The defaults, as JSON keyed by field (those a game decides may be absent or null).
    fn defaults() -> Value;
}

/// The flags of `T` the user gave on the command line, as settings; nothing else.
#[derive(Clone, Debug)]
pub struct Given<T> {
    settings: Map<String, Value>,
    kind: PhantomData<T>,
}

impl<T> Given<T> {
    /// The settings given, as one JSON object keyed like the config's fields.
    pub fn json(&self) -> Value {
        Value::Object(self.settings.clone())
    }

    /// Whether the user gave the flag of settings key `key`.
    pub fn has(&self, key: &str) -> bool {
        self.settings.contains_key(key)
    }

    /// Adds a setting the front end decides (a flag of its own that maps onto one).
    pub fn set(&mut self, key: &str, value: Value) {
        self.settings.insert(key.to_string(), value);
    }
}

impl<T: Settings> Args for Given<T> {
    fn augment_args(cmd: Command) -> Command {
        let own = T::augment_args(Command::new("settings"));
        let defaults = T::defaults();
        let mut cmd = T::augment_args(cmd);
        for arg in own.get_arguments() {
            let id = arg.get_id().as_str().to_string();
            let default = leaf(&defaults, &id).filter(|v| !v.is_null() && *v != &Value::Bool(false)).map(shown);
            cmd = cmd.mut_arg(&id, |a| {
                // Absent flags keep the trainer's default: none is required.
                let a = a.required(false);
                match &default {
                    Some(d) if !matches!(a.get_action(), ArgAction::SetTrue | ArgAction::SetFalse) => {
                        let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
                        let long = a.get_long_help().map(|h| h.to_string());
                        let a = a.help(format!("{help} [default: {d}]"));
                        match long {
                            Some(l) => a.long_help(format!("{l}\n\n[default: {d}]")),
                            None => a,
                        }
                    }
                    _ => a,
                }
            });
        }
        cmd
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

/// The path to the one setting named `key` in `settings` (a JSON object, nested ones searched
/// too: `sims` is AlphaZero's `selfplay.search.sims`): the key itself where the top level has
/// it, none where no object or several have it.
pub fn leaf_path(settings: &Value, key: &str) -> Option<Vec<String>> {
    fn walk(v: &Value, key: &str, at: &mut Vec<String>, found: &mut Vec<Vec<String>>) {
        if let Value::Object(m) = v {
            for (k, sub) in m {
                at.push(k.clone());
                if k == key {
                    found.push(at.clone());
                }
                walk(sub, key, at, found);
                at.pop();
            }
        }
    }
    if settings.get(key).is_some() {
        return Some(vec![key.to_string()]);
    }
    let mut found = Vec::new();
    walk(settings, key, &mut Vec::new(), &mut found);
    (found.len() == 1).then(|| found.remove(0))
}

/// The one setting named `key` in `settings` (see [`leaf_path`]).
pub fn leaf<'a>(settings: &'a Value, key: &str) -> Option<&'a Value> {
    let path = leaf_path(settings, key)?;
    path.iter().try_fold(settings, |v, k| v.get(k))
}

/// A default as `--help` prints it.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl<T: Settings> FromArgMatches for Given<T> {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let own = T::augment_args(Command::new("settings"));
        let mut settings = Map::new();
        for arg in own.get_arguments() {
            let id = arg.get_id().as_str();
            if m.value_source(id) != Some(ValueSource::CommandLine) {
                continue;
            }
            let value = match arg.get_action() {
                ArgAction::SetTrue => Value::Bool(true),
                ArgAction::SetFalse => Value::Bool(false),
                // A repeated flag (`--players A --players B`) is a list.
                ArgAction::Append => Value::Array(
                    m.get_raw(id)
                        .into_iter()
                        .flatten()
                        .map(|v| Value::String(v.to_string_lossy().into_owned()))
                        .collect(),
                ),
                _ => typed(m, id).map_err(|number| {
                    let flag = arg.get_long().map_or_else(|| id.to_string(), |l| format!("--{l}"));
                    clap::Error::raw(
                        clap::error::ErrorKind::ValueValidation,
                        format!("{flag} {number}: give a finite number (--help names its range)\n"),
                    )
                })?,
            };
            settings.insert(id.to_string(), value);
        }
        Ok(Given { settings, kind: PhantomData })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

/// A flag's parsed value as JSON: numbers as numbers, the rest (strings, value enums) as the
/// text typed, which the config's serde names match. A number JSON cannot hold (NaN, infinity)
/// is refused: no setting takes one.
fn typed(m: &ArgMatches, id: &str) -> Result<Value, String> {
    macro_rules! number {
        ($($t:ty),*) => {$(
            if let Ok(Some(v)) = m.try_get_one::<$t>(id) {
                let v = serde_json::json!(v);
                return if v.is_null() { Err(m.get_raw(id).and_then(|mut r| r.next()).map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()) } else { Ok(v) };
            }
        )*};
    }
    number!(f64, f32, u64, u32, usize, i64, i32);
    if let Ok(Some(v)) = m.try_get_one::<String>(id) {
        return Ok(Value::String(v.clone()));
    }
    let raw = m.get_raw(id).and_then(|mut r| r.next()).map(|s| s.to_string_lossy().into_owned());
    Ok(raw.map_or(Value::Null, Value::String))
}

/// Lays `given` over `base` (both JSON objects): every key of `given` must be one of `base`'s
/// (nested objects merged the same way), or at the top level the name of exactly one nested
/// setting (`sims` for AlphaZero's `selfplay.search.sims`); the error names the key and the
/// accepted ones.
fn overlay(
    base: &mut Value,
    given: &Value,
    path: &str,
    known: &dyn Fn(&str, &Value) -> bool,
) -> Result<(), LearnError> {
    let Value::Object(g) = given else {
        return Err(LearnError::Config(format!("settings{path}: give an object of settings")));
    };
    let mut given = g.clone();
    if path.is_empty() {
        for (k, v) in g {
            if base.get(k).is_none()
                && let Some(at) = leaf_path(base, k)
            {
                given.remove(k);
                let nested = at.iter().rev().fold(v.clone(), |inner, key| serde_json::json!({ key: inner }));
                overlay(base, &nested, path, known)?;
            }
        }
    }
    let Value::Object(b) = base else {
        return Err(LearnError::Config(format!("settings{path}: give an object of settings")));
    };
    for (k, v) in &given {
        // A setting left out of the defaults' JSON because it is off there (`skip_serializing_if`)
        // is still a setting: the config says so when it takes the key.
        if b.get(k).is_none() && path.is_empty() && known(k, v) {
            b.insert(k.clone(), v.clone());
            continue;
        }
        let accepted = b.keys().cloned().collect::<Vec<_>>().join(", ");
        let Some(slot) = b.get_mut(k) else {
            return Err(LearnError::Config(format!("unknown setting '{path}{k}'; accepted: {accepted}")));
        };
        if slot.is_object() && v.is_object() {
            overlay(slot, v, &format!("{path}{k}."), &|_, _| false)?;
        } else {
            *slot = v.clone();
        }
    }
    Ok(())
}

/// `base` with `given` laid over it: the settings a user gave (by the command line's
/// [`crate::flags::Given`] or Python's keywords) over a trainer's defaults; an unknown key or a
/// value of the wrong type is refused, naming it.
pub fn with_settings<T: Serialize + serde::de::DeserializeOwned>(base: &T, given: &Value) -> Result<T, LearnError> {
    let mut v = serde_json::to_value(base).expect("configs serialise");
    let defaults = v.clone();
    overlay(&mut v, given, "", &|k, value| takes_key::<T>(&defaults, k, value))?;
    serde_json::from_value(v).map_err(|e| LearnError::Config(format!("settings: {e}")))
}

/// Whether the config `T` takes the top-level key `k` that its defaults' JSON leaves out: the
/// key set to `value` (or, for an off value, to an on one) either comes back when the config
/// is written again, or is refused for its type; a key `T` does not know is dropped silently.
fn takes_key<T: Serialize + serde::de::DeserializeOwned>(defaults: &Value, k: &str, value: &Value) -> bool {
    let probes = match value {
        Value::Bool(false) => vec![Value::Bool(true)],
        Value::Null => vec![Value::from("x"), Value::from(1.0), Value::Bool(true)],
        v => vec![v.clone()],
    };
    probes.into_iter().any(|probe| {
        let mut with = defaults.clone();
        with[k] = probe;
        match serde_json::from_value::<T>(with) {
            Err(_) => true,
            Ok(config) => serde_json::to_value(&config).is_ok_and(|back| back.get(k).is_some()),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(clap::Args, Debug)]
    struct Demo {
        /// A rate.
        #[arg(long)]
        rate: f64,
        /// A count.
        #[arg(long)]
        count: u32,
        /// A switch.
        #[arg(long)]
        on: bool,
        /// A switch that starts on.
        #[arg(long = "no-off", action = ArgAction::SetFalse)]
        off: bool,
        /// A name.
        #[arg(long)]
        name: Option<String>,
        /// Names.
        #[arg(long = "player")]
        players: Vec<String>,
    }

    impl Settings for Demo {
        fn defaults() -> Value {
            serde_json::json!({"rate": 0.5, "count": 3, "on": false, "off": true, "name": null, "players": ["a"]})
        }
    }

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        given: Given<Demo>,
    }

    #[test]
    fn only_typed_flags_come_back_typed() {
        let cli = Cli::try_parse_from(["x", "--count", "7", "--no-off"]).unwrap();
        assert_eq!(cli.given.json(), serde_json::json!({"count": 7, "off": false}));
        let cli = Cli::try_parse_from(["x", "--rate", "2", "--on", "--name", "12"]).unwrap();
        assert_eq!(cli.given.json(), serde_json::json!({"rate": 2.0, "on": true, "name": "12"}));
        assert_eq!(Cli::try_parse_from(["x"]).unwrap().given.json(), serde_json::json!({}));
        let cli = Cli::try_parse_from(["x", "--player", "b", "--player", "c"]).unwrap();
        assert_eq!(cli.given.json(), serde_json::json!({"players": ["b", "c"]}));
        assert!(Cli::try_parse_from(["x", "--count", "x"]).is_err(), "clap still checks each flag's type");
    }

    #[test]
    fn help_shows_the_trainers_defaults() {
        use clap::CommandFactory;
        let help = Cli::command().render_help().to_string();
        assert!(help.contains("A rate [default: 0.5]"), "{help}");
        assert!(help.contains("A count [default: 3]"), "{help}");
        assert!(!help.contains("A name [default"), "{help}");
    }
}
