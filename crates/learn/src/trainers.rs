//! The trainers by name: the table the command line's typed door and Python's by-name door
//! both use. Each entry turns a game, the settings a user gave (laid over the trainer's defaults
//! and checked) and the run's options into a learner, and hands it to the one loop,
//! [`crate::run::run`]. The loop itself knows no learner.

use crate::LearnError;
use crate::flags::with_settings;
use crate::run::{Every, Hooks, Progress, RunOptions, run};
use meeple_game::Game;
use serde::Serialize;
use serde_json::Value;

/// The games a `vae` run plays for positions unless given --games (Defradas et al.: 4,000).
const VAE_GAMES: u64 = 4000;

/// The games of a `value` run given neither --games nor --minutes.
const VALUE_GAMES: u64 = 1000;

/// Refuses a `value` setting that only the other data source reads, saying so.
fn refuse_other_source<T: Serialize>(settings: &Value, other: &T, this: &str, that: &str) -> Result<(), LearnError> {
    let theirs = serde_json::to_value(other).expect("configs serialise");
    let ours = if this == "search" {
        serde_json::to_value(crate::value::SearchValueConfig::new("")).expect("configs serialise")
    } else {
        serde_json::to_value(crate::td::TdConfig::value("")).expect("configs serialise")
    };
    let given = settings.as_object().into_iter().flat_map(|m| m.keys());
    match given.into_iter().find(|k| ours.get(k.as_str()).is_none() && theirs.get(k.as_str()).is_some()) {
        Some(k) => Err(LearnError::Config(format!(
            "--{} is a setting of --data {that}; this run learns from --data {this}",
            k.replace('_', "-")
        ))),
        None => Ok(()),
    }
}

/// Why a run with `lr_decay` needs --minutes or --games.
const LR_DECAY: &str = "--lr-decay anneals the learning rate over the run";

/// `options` for a run whose learning rate anneals over its length where `lr_decay`: such a
/// run needs --minutes or --games.
fn annealed(options: &RunOptions, lr_decay: bool) -> RunOptions {
    RunOptions { needs_limit: options.needs_limit.or(lr_decay.then_some(LR_DECAY)), ..options.clone() }
}

/// The trainers [`train`] runs by name.
pub const TRAINERS: &[&str] = &["az", "td", "value", "dqn", "ppo", "vae", "rootstrap", "treestrap", "tdleaf"];

/// Runs the trainer `kind` (one of [`TRAINERS`]) on `game` through [`run`], its settings those
/// of its config (`AzConfig`, `TdConfig`, `DqnConfig`, `PpoConfig`, `StrapConfig`, `VaeRunConfig`,
/// `SearchValueConfig`), the defaults laid under `settings`, and checked as the command line
/// checks them. `value` with `{"data": "search"}` fits a search's values. For front ends that
/// drive trainers by name (Python's `meeple.train`).
pub fn train<G: Game>(
    game: &G,
    kind: &str,
    settings: &Value,
    options: &RunOptions,
    hooks: &mut dyn Hooks,
) -> Result<Progress, LearnError> {
    let spec = game.spec().to_string();
    let mut settings = settings.clone();
    let data = match settings.as_object_mut().and_then(|m| m.remove("data")) {
        None => None,
        Some(Value::String(d)) if kind == "value" && (d == "selfplay" || d == "search") => Some(d),
        Some(d) => {
            return Err(LearnError::Config(format!(
                "data={d}: `value` takes data=\"selfplay\" or data=\"search\"; the other trainers make their own"
            )));
        }
    };
    let seed = options.seed;
    let threads = options.threads.max(1);
    match kind {
        "az" => {
            let config = crate::az::train::az_config(game, &settings, seed, threads)?;
            let dir = options.out.clone();
            let options = RunOptions { save_seconds: 0.0, ..options.clone() };
            run(game, &options, |r| crate::az::train::AzRun::new(game.clone(), config, &dir, r), hooks)
        }
        "td" | "value" if data.as_deref() != Some("search") => {
            let mut base = if kind == "value" {
                refuse_other_source(&settings, &crate::value::SearchValueConfig::new(&spec), "selfplay", "search")?;
                crate::td::TdConfig::value(&spec)
            } else {
                crate::td::TdConfig::for_game(game)
            };
            base.seed = seed;
            base.threads = threads;
            let mut config = with_settings(&base, &settings)?;
            if let Some(init) = config.init.clone() {
                let shape = game.observation_shape();
                config.net = crate::az::train::init_network(&init, &settings, |net| {
                    meeple_nn::NetConfig::from_spec(net, &shape, game.num_actions(), game.num_players(), None)
                        .map(|c| c.spec())
                        .map_err(|e| LearnError::Config(e.to_string()))
                })?;
            }
            config.check()?;
            let mut options = annealed(options, config.lr_decay);
            if kind == "value" && options.games.is_none() && options.minutes.is_none() {
                options.games = Some(VALUE_GAMES);
            }
            let value = kind == "value";
            run(
                game,
                &options,
                |r| crate::td::TdRun::new(game.clone(), config, r).map(|t| if value { t.as_value() } else { t }),
                hooks,
            )
        }
        "value" => {
            refuse_other_source(&settings, &crate::td::TdConfig::value(&spec), "search", "selfplay")?;
            // The games are the data, played before the first epoch; the epochs end the run.
            let mut options = options.clone();
            let games = options.games.take().unwrap_or(VALUE_GAMES);
            let base = crate::value::SearchValueConfig {
                seed,
                threads,
                games: usize::try_from(games).map_err(|_| LearnError::Config(format!("--games {games}: too many")))?,
                ..crate::value::SearchValueConfig::new(&spec)
            };
            let config = with_settings(&base, &settings)?;
            run(game, &options, |r| crate::value::SearchValueRun::new(game.clone(), config, r), hooks)
        }
        "dqn" => {
            let base = crate::dqn::DqnConfig { seed, threads, ..crate::dqn::DqnConfig::report(&spec) };
            let config = with_settings(&base, &settings)?;
            config.check()?;
            let options = annealed(options, config.lr_decay);
            run(game, &options, |r| crate::dqn::DqnRun::new(game.clone(), config, r), hooks)
        }
        "ppo" => {
            let base = crate::ppo::PpoConfig { seed, threads, ..crate::ppo::PpoConfig::report(&spec) };
            let config = with_settings(&base, &settings)?;
            config.check()?;
            let options = annealed(options, config.lr_decay);
            run(game, &options, |r| crate::ppo::PpoRun::new(game.clone(), config, r), hooks)
        }
        "vae" => {
            if !options.ladder.is_empty() {
                return Err(LearnError::Config(
                    "--ladder evaluates an agent; an autoencoder plays no games (dqn and ppo read it with --encoder)"
                        .into(),
                ));
            }
            // The games are the data; the epochs end the run.
            let base = crate::vae::VaeRunConfig {
                games: options.games.unwrap_or(VAE_GAMES),
                ..crate::vae::VaeRunConfig::new(seed)
            };
            let config = with_settings(&base, &settings)?;
            config.check()?;
            if options.eval.is_some_and(|e| e != Every::Never) {
                return Err(LearnError::Config(
                    "--eval-every evaluates an agent; an autoencoder plays no games (dqn and ppo read it with --encoder)"
                        .into(),
                ));
            }
            let options = RunOptions { games: None, eval: Some(Every::Never), save_seconds: 0.0, ..options.clone() };
            run(game, &options, |r| crate::vae::VaeRun::new(game, config, r), hooks)
        }
        "rootstrap" | "treestrap" | "tdleaf" => {
            let strap = match kind {
                "rootstrap" => crate::strap::Strap::Root,
                "treestrap" => crate::strap::Strap::Tree,
                _ => crate::strap::Strap::Leaf,
            };
            // Several starts and the round robin that picks among them are the run's, not the
            // learner's settings.
            let mut take = |key: &str, default: u64| match settings.as_object_mut().and_then(|m| m.remove(key)) {
                None => Ok(default),
                Some(v) => v.as_u64().ok_or_else(|| LearnError::Config(format!("{key}={v}: give a whole number"))),
            };
            let (starts, select_games) = (take("starts", 1)?, take("select_games", 100)?);
            let mut base = crate::strap::StrapConfig::new(strap, "linear8");
            base.seed = seed;
            let config = with_settings(&base, &settings)?;
            if config.strap != strap {
                return Err(LearnError::Config(format!("strap={:?}: the trainer is {kind}", config.strap)));
            }
            config.check()?;
            if starts == 1 {
                return run(game, options, |r| crate::strap::StrapRun::new(game.clone(), config, r), hooks);
            }
            match crate::strap::train_starts(game, &config, options, starts, select_games, hooks)? {
                Some(chosen) => {
                    let dir = options.out.join(format!("start{}", chosen.best + 1));
                    Ok(crate::run::read_run(&dir)?.progress)
                }
                // Stopped before every start was trained: the front end's stop flag says so, and
                // the same call with resume goes on.
                None => Ok(Progress::default()),
            }
        }
        other => Err(LearnError::Config(format!("unknown trainer '{other}'; accepted: {}", TRAINERS.join(", ")))),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn settings_that_are_off_by_default_are_still_settings() {
        use serde_json::json;
        let dqn = crate::dqn::DqnConfig::report("tictactoe");
        let on =
            crate::flags::with_settings(&dqn, &json!({"symmetries": true, "average": 0.9, "encoder": "e.safetensors"}))
                .unwrap();
        assert!(on.symmetries);
        assert_eq!((on.average, on.encoder.encoder.as_deref()), (Some(0.9), Some("e.safetensors")));
        let off = crate::flags::with_settings(&dqn, &json!({"symmetries": false, "average": null})).unwrap();
        assert!(!off.symmetries && off.average.is_none());
        let td = crate::td::TdConfig::report("catan");
        assert_eq!(crate::flags::with_settings(&td, &json!({"init": "x"})).unwrap().init.as_deref(), Some("x"));
        // Unknown keys are still refused, off or on, and a known one of the wrong type too.
        for bad in [json!({"symetries": true}), json!({"symetries": false}), json!({"averag": null})] {
            let e = crate::flags::with_settings(&dqn, &bad).unwrap_err().to_string();
            assert!(e.contains("unknown setting"), "{e}");
        }
        assert!(crate::flags::with_settings(&dqn, &json!({"symmetries": "yes"})).is_err());
    }
}
