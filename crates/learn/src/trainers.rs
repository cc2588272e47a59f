//! The trainers as the front ends meet them: each a [`Trainer`] (its settings' type, their
//! defaults on a game laid under what the user gave and checked, the run's options as it takes
//! them, and the run through the one loop, [`crate::run::run`]), and the table by name,
//! [`train`], that Python's `meeple.train` and the command line's by-name subcommands use; the
//! command line's typed subcommands call a trainer directly ([`train_with`]). The defaults live
//! here once for both. The loop itself knows no learner.

use crate::LearnError;
use crate::flags::with_settings;
use crate::run::{Every, Hooks, Kind, Progress, RunOptions, run};
use meeple_game::Game;
use serde::Serialize;
use serde_json::Value;
use std::path::Path;

/// A trainer: the settings of its runs and the run itself.
pub trait Trainer {
    /// Its settings: each field a flag of `meeple train NAME` and a keyword of `meeple.train`.
    type Config;
    /// What kind of trainer it is (its name, checkpoints, evaluation cadence).
    fn kind(&self) -> &'static Kind;
    /// The settings of a run on `game`: the defaults there (the run's seed and threads among
    /// them), `given` laid over them, checked with messages that name the flags; and the run's
    /// options as this trainer takes them (a default length, its checkpoint cadence, evaluation
    /// options refused where it plays no games).
    fn settings<G: Game>(&self, game: &G, given: &Value, options: &mut RunOptions) -> Result<Self::Config, LearnError>;
    /// The learner it trains on `game`.
    type Run<G: Game>: crate::run::Learner;
    /// The learner, fresh or from the checkpoint `resume` (in `out`, the run's directory).
    fn make<G: Game>(
        &self,
        game: &G,
        config: Self::Config,
        out: &Path,
        resume: Option<&Path>,
    ) -> Result<Self::Run<G>, LearnError>;
    /// Runs it through the one loop.
    fn run<G: Game>(
        &self,
        game: &G,
        config: Self::Config,
        options: &RunOptions,
        hooks: &mut dyn Hooks,
    ) -> Result<Progress, LearnError> {
        run(game, options, |resume| self.make(game, config, &options.out, resume), hooks)
    }
}

/// Runs `trainer` on `game`, `given` laid over its defaults.
pub fn train_with<T: Trainer, G: Game>(
    trainer: &T,
    game: &G,
    given: &Value,
    options: &RunOptions,
    hooks: &mut dyn Hooks,
) -> Result<Progress, LearnError> {
    let mut options = options.clone();
    let config = trainer.settings(game, given, &mut options)?;
    trainer.run(game, config, &options, hooks)
}

/// The games a `vae` run plays for positions unless given --games (Defradas et al.: 4,000).
const VAE_GAMES: u64 = 4000;

/// The games of a `value` run given neither --games nor --minutes.
const VALUE_GAMES: u64 = 1000;

/// The self-play games of a bootstrap run given neither --games nor --minutes (the report's
/// runs were longer).
const STRAP_GAMES: u64 = 100;

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

/// A run whose learning rate anneals over its length where `lr_decay` needs --minutes or --games.
fn annealed(options: &mut RunOptions, lr_decay: bool) {
    options.needs_limit = options.needs_limit.or(lr_decay.then_some(LR_DECAY));
}

/// AlphaZero.
pub struct Az;

impl Trainer for Az {
    type Config = crate::az::train::AzConfig;

    fn kind(&self) -> &'static Kind {
        &crate::az::train::AZ
    }

    fn settings<G: Game>(&self, game: &G, given: &Value, options: &mut RunOptions) -> Result<Self::Config, LearnError> {
        // A generation's checkpoint is written when it ends, as external players need it.
        options.save_seconds = 0.0;
        crate::az::train::az_config(game, given, options.seed, options.threads.max(1))
    }

    type Run<G: Game> = crate::az::train::AzRun<G>;

    fn make<G: Game>(
        &self,
        game: &G,
        config: Self::Config,
        out: &Path,
        resume: Option<&Path>,
    ) -> Result<Self::Run<G>, LearnError> {
        crate::az::train::AzRun::new(game.clone(), config, out, resume)
    }
}

/// TD(λ) from self-play: `td`, or `value` with `--data selfplay` (Sarswat et al.'s defaults).
pub struct Td {
    pub value: bool,
}

impl Trainer for Td {
    type Config = crate::td::TdConfig;

    fn kind(&self) -> &'static Kind {
        if self.value { &crate::td::VALUE_SELFPLAY } else { &crate::td::TD }
    }

    fn settings<G: Game>(&self, game: &G, given: &Value, options: &mut RunOptions) -> Result<Self::Config, LearnError> {
        let spec = game.spec().to_string();
        let mut base = if self.value {
            refuse_other_source(given, &crate::value::SearchValueConfig::new(&spec), "selfplay", "search")?;
            crate::td::TdConfig::value(&spec)
        } else {
            crate::td::TdConfig::for_game(game)
        };
        (base.seed, base.threads) = (options.seed, options.threads.max(1));
        let mut config = with_settings(&base, given)?;
        if let Some(init) = config.init.clone() {
            let shape = game.observation_shape();
            config.net = crate::az::train::init_network(&init, given, |net| {
                meeple_nn::NetConfig::from_spec(net, &shape, game.num_actions(), game.num_players(), None)
                    .map(|c| c.spec())
                    .map_err(|e| LearnError::Config(e.to_string()))
            })?;
        }
        config.check()?;
        annealed(options, config.lr_decay);
        if self.value && options.games.is_none() && options.minutes.is_none() {
            options.games = Some(VALUE_GAMES);
        }
        Ok(config)
    }

    type Run<G: Game> = crate::td::TdRun<G>;

    fn make<G: Game>(
        &self,
        game: &G,
        config: Self::Config,
        _out: &Path,
        resume: Option<&Path>,
    ) -> Result<Self::Run<G>, LearnError> {
        let run = crate::td::TdRun::new(game.clone(), config, resume)?;
        Ok(if self.value { run.as_value() } else { run })
    }
}

/// `value` fitted to a search's values (`--data search`).
pub struct SearchValue;

impl Trainer for SearchValue {
    type Config = crate::value::SearchValueConfig;

    fn kind(&self) -> &'static Kind {
        &crate::value::VALUE_SEARCH
    }

    fn settings<G: Game>(&self, game: &G, given: &Value, options: &mut RunOptions) -> Result<Self::Config, LearnError> {
        let spec = game.spec().to_string();
        refuse_other_source(given, &crate::td::TdConfig::value(&spec), "search", "selfplay")?;
        // The games are the data, played before the first epoch; the epochs end the run.
        let games = options.games.take().unwrap_or(VALUE_GAMES);
        let base = crate::value::SearchValueConfig {
            seed: options.seed,
            threads: options.threads.max(1),
            games: usize::try_from(games).map_err(|_| LearnError::Config(format!("--games {games}: too many")))?,
            ..crate::value::SearchValueConfig::new(&spec)
        };
        with_settings(&base, given)
    }

    type Run<G: Game> = crate::value::SearchValueRun<G>;

    fn make<G: Game>(
        &self,
        game: &G,
        config: Self::Config,
        _out: &Path,
        resume: Option<&Path>,
    ) -> Result<Self::Run<G>, LearnError> {
        crate::value::SearchValueRun::new(game.clone(), config, resume)
    }
}

/// DQN.
pub struct Dqn;

impl Trainer for Dqn {
    type Config = crate::dqn::DqnConfig;

    fn kind(&self) -> &'static Kind {
        &crate::dqn::DQN
    }

    fn settings<G: Game>(&self, game: &G, given: &Value, options: &mut RunOptions) -> Result<Self::Config, LearnError> {
        let (seed, threads) = (options.seed, options.threads.max(1));
        let base = crate::dqn::DqnConfig { seed, threads, ..crate::dqn::DqnConfig::report(&game.spec().to_string()) };
        let config = with_settings(&base, given)?;
        config.check()?;
        annealed(options, config.lr_decay);
        Ok(config)
    }

    type Run<G: Game> = crate::dqn::DqnRun<G>;

    fn make<G: Game>(
        &self,
        game: &G,
        config: Self::Config,
        _out: &Path,
        resume: Option<&Path>,
    ) -> Result<Self::Run<G>, LearnError> {
        crate::dqn::DqnRun::new(game.clone(), config, resume)
    }
}

/// PPO.
pub struct Ppo;

impl Trainer for Ppo {
    type Config = crate::ppo::PpoConfig;

    fn kind(&self) -> &'static Kind {
        &crate::ppo::PPO
    }

    fn settings<G: Game>(&self, game: &G, given: &Value, options: &mut RunOptions) -> Result<Self::Config, LearnError> {
        let (seed, threads) = (options.seed, options.threads.max(1));
        let base = crate::ppo::PpoConfig { seed, threads, ..crate::ppo::PpoConfig::report(&game.spec().to_string()) };
        let config = with_settings(&base, given)?;
        config.check()?;
        annealed(options, config.lr_decay);
        Ok(config)
    }

    type Run<G: Game> = crate::ppo::PpoRun<G>;

    fn make<G: Game>(
        &self,
        game: &G,
        config: Self::Config,
        _out: &Path,
        resume: Option<&Path>,
    ) -> Result<Self::Run<G>, LearnError> {
        crate::ppo::PpoRun::new(game.clone(), config, resume)
    }
}

/// The observation autoencoder.
pub struct Vae;

impl Trainer for Vae {
    type Config = crate::vae::VaeRunConfig;

    fn kind(&self) -> &'static Kind {
        &crate::vae::VAE
    }

    fn settings<G: Game>(
        &self,
        _game: &G,
        given: &Value,
        options: &mut RunOptions,
    ) -> Result<Self::Config, LearnError> {
        let plays_none = "an autoencoder plays no games (dqn and ppo read it with --encoder)";
        if !options.ladder.is_empty() {
            return Err(LearnError::Config(format!("--ladder evaluates an agent; {plays_none}")));
        }
        if options.eval.is_some_and(|e| e != Every::Never) {
            return Err(LearnError::Config(format!("--eval-every evaluates an agent; {plays_none}")));
        }
        // The games are the data; the epochs end the run.
        let base = crate::vae::VaeRunConfig {
            games: options.games.take().unwrap_or(VAE_GAMES),
            ..crate::vae::VaeRunConfig::new(options.seed)
        };
        let config = with_settings(&base, given)?;
        config.check()?;
        (options.eval, options.save_seconds) = (Some(Every::Never), 0.0);
        Ok(config)
    }

    type Run<G: Game> = crate::vae::VaeRun;

    fn make<G: Game>(
        &self,
        game: &G,
        config: Self::Config,
        _out: &Path,
        resume: Option<&Path>,
    ) -> Result<Self::Run<G>, LearnError> {
        crate::vae::VaeRun::new(game, config, resume)
    }
}

/// The bootstrap learners of a linear evaluator: RootStrap, TreeStrap, TD-Leaf.
impl Trainer for crate::strap::Strap {
    type Config = crate::strap::StrapConfig;

    fn kind(&self) -> &'static Kind {
        crate::strap::Strap::kind(*self)
    }

    fn settings<G: Game>(
        &self,
        _game: &G,
        given: &Value,
        options: &mut RunOptions,
    ) -> Result<Self::Config, LearnError> {
        let base = crate::strap::StrapConfig { seed: options.seed, ..crate::strap::StrapConfig::new(*self, "linear8") };
        let config = with_settings(&base, given)?;
        if config.strap != *self {
            return Err(LearnError::Config(format!("strap={:?}: the trainer is {}", config.strap, self.name())));
        }
        config.check()?;
        // A game takes seconds: keep a checkpoint after every one, as the weights file always was.
        options.save_seconds = 0.0;
        if options.games.is_none() && options.minutes.is_none() {
            options.games = Some(STRAP_GAMES);
        }
        Ok(config)
    }

    type Run<G: Game> = crate::strap::StrapRun<G>;

    fn make<G: Game>(
        &self,
        game: &G,
        config: Self::Config,
        _out: &Path,
        resume: Option<&Path>,
    ) -> Result<Self::Run<G>, LearnError> {
        crate::strap::StrapRun::new(game.clone(), config, resume)
    }
}

/// The trainers [`train`] runs by name.
pub const TRAINERS: &[&str] = &["az", "td", "value", "dqn", "ppo", "vae", "rootstrap", "treestrap", "tdleaf"];

/// Runs the trainer `kind` (one of [`TRAINERS`]) on `game` with the settings `given` over its
/// defaults, as its [`Trainer`] does. `value` with `{"data": "search"}` fits a search's values;
/// the bootstrap learners take `{"starts": N, "select_games": G}` for several random starts and
/// the round robin that picks one ([`crate::strap::train_starts`]). For front ends that drive
/// trainers by name (Python's `meeple.train`).
pub fn train<G: Game>(
    game: &G,
    kind: &str,
    given: &Value,
    options: &RunOptions,
    hooks: &mut dyn Hooks,
) -> Result<Progress, LearnError> {
    let mut given = given.clone();
    let data = match given.as_object_mut().and_then(|m| m.remove("data")) {
        None => None,
        Some(Value::String(d)) if kind == "value" && (d == "selfplay" || d == "search") => Some(d),
        Some(d) => {
            return Err(LearnError::Config(format!(
                "data={d}: `value` takes data=\"selfplay\" or data=\"search\"; the other trainers make their own"
            )));
        }
    };
    match kind {
        "az" => train_with(&Az, game, &given, options, hooks),
        "td" => train_with(&Td { value: false }, game, &given, options, hooks),
        "value" if data.as_deref() == Some("search") => train_with(&SearchValue, game, &given, options, hooks),
        "value" => train_with(&Td { value: true }, game, &given, options, hooks),
        "dqn" => train_with(&Dqn, game, &given, options, hooks),
        "ppo" => train_with(&Ppo, game, &given, options, hooks),
        "vae" => train_with(&Vae, game, &given, options, hooks),
        "rootstrap" => train_strap(game, crate::strap::Strap::Root, &mut given, options, hooks),
        "treestrap" => train_strap(game, crate::strap::Strap::Tree, &mut given, options, hooks),
        "tdleaf" => train_strap(game, crate::strap::Strap::Leaf, &mut given, options, hooks),
        other => Err(LearnError::Config(format!("unknown trainer '{other}'; accepted: {}", TRAINERS.join(", ")))),
    }
}

/// A bootstrap learner by name: one run, or several starts and the round robin among them.
fn train_strap<G: Game>(
    game: &G,
    strap: crate::strap::Strap,
    given: &mut Value,
    options: &RunOptions,
    hooks: &mut dyn Hooks,
) -> Result<Progress, LearnError> {
    // Several starts and the round robin that picks among them are the run's, not the
    // learner's settings.
    let mut take = |key: &str, default: u64| match given.as_object_mut().and_then(|m| m.remove(key)) {
        None => Ok(default),
        Some(v) => v.as_u64().ok_or_else(|| LearnError::Config(format!("{key}={v}: give a whole number"))),
    };
    let (starts, select_games) = (take("starts", 1)?, take("select_games", 100)?);
    let mut options = options.clone();
    let config = strap.settings(game, given, &mut options)?;
    if starts == 1 {
        return strap.run(game, config, &options, hooks);
    }
    match crate::strap::train_starts(game, &config, &options, starts, select_games, hooks)? {
        Some(chosen) => Ok(crate::run::read_run(&options.out.join(format!("start{}", chosen.best + 1)))?.progress),
        // Stopped before every start was trained: the front end's stop flag says so, and the
        // same call with resume goes on.
        None => Ok(Progress::default()),
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
