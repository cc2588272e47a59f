//! The observation autoencoder's data and its use under the model-free learners (Defradas et al.):
//! positions from games of given agents, and a frozen encoder that turns each observation into
//! its latent mean before a DQN or PPO network sees it.

use crate::{LearnError, make_agent};
use meeple_game::{Game, State, Turn, derive_seed, rng_from_seed};
use meeple_nn::Vae;
use std::path::{Path, PathBuf};

/// Observations of the player to move at every decision of `games` games: game `i` is played
/// by `players[i % players.len()]` in every seat (Defradas et al.: half of the games by random
/// players, half by a trained agent). Gives the observations laid end to end.
pub fn positions<G: Game>(game: &G, players: &[String], games: u64, seed: u64) -> Result<Vec<f32>, LearnError> {
    if players.is_empty() {
        return Err(LearnError::Config("give at least one agent to play the games".into()));
    }
    let n: usize = game.observation_shape().iter().product();
    let mut out = Vec::new();
    let mut view = Vec::new();
    let mut outcomes = Vec::new();
    for i in 0..games {
        let spec = &players[(i % players.len() as u64) as usize];
        let s = derive_seed(seed, i);
        let mut agents = (0..game.num_players())
            .map(|p| make_agent(game, spec, meeple_game::seat_seed(s, p)))
            .collect::<Result<Vec<_>, _>>()?;
        let mut rng = rng_from_seed(s);
        let mut state = game.initial_state();
        loop {
            match state.turn() {
                Turn::Terminal => break,
                Turn::Chance => {
                    state.apply_unchecked(meeple_game::draw_chance(&state, &mut outcomes, &mut rng));
                }
                Turn::Player(p) => {
                    state.observation(p, &mut view);
                    out.extend_from_slice(&view[..n]);
                    let a = agents[p].act(&state, &meeple_game::Budget::UNLIMITED)?;
                    state.apply(a)?;
                }
            }
        }
    }
    Ok(out)
}

/// An autoencoder's encoder in front of a learner's network: observations become latent means.
/// Frozen, or fine-tuned with the network (it then learns from the network's loss through the
/// gradient at its means).
pub struct Encoder {
    vae: Vae,
    /// The file it was read from, as given.
    pub path: String,
    /// The learning rate when fine-tuned; `None`: frozen.
    fine_tune: Option<f32>,
    scratch: Vec<f32>,
}

impl Encoder {
    /// Reads an autoencoder checkpoint for `game` (its observations must be the game's).
    pub fn load<G: Game>(game: &G, path: &Path, given: &str, fine_tune: Option<f64>) -> Result<Self, LearnError> {
        let (vae, _) =
            Vae::load(path, Some(&game.spec().to_string())).map_err(|e| LearnError::Config(e.to_string()))?;
        let n: usize = game.observation_shape().iter().product();
        if vae.config().input != n {
            return Err(LearnError::Config(format!(
                "encoder '{given}' reads observations of {}, {} has {n}",
                vae.config().input,
                game.spec()
            )));
        }
        if let Some(lr) = fine_tune
            && !(lr.is_finite() && lr > 0.0)
        {
            return Err(LearnError::Config(format!("the encoder's learning rate {lr} must be a positive number")));
        }
        Ok(Encoder { vae, path: given.to_string(), fine_tune: fine_tune.map(|x| x as f32), scratch: Vec::new() })
    }

    /// The latent size (the learner network's input).
    pub fn latent(&self) -> usize {
        self.vae.config().latent
    }

    /// Whether it learns with the network.
    pub fn fine_tuned(&self) -> bool {
        self.fine_tune.is_some()
    }

    /// The latent means of `rows` observations.
    pub fn encode(&mut self, obs: &[f32], rows: usize) -> &[f32] {
        self.vae.encode(obs, rows, &mut self.scratch);
        &self.scratch
    }

    /// Replaces `rows` observations in `obs` by their latent means.
    pub fn encode_in_place(&mut self, obs: &mut Vec<f32>, rows: usize) {
        self.vae.encode(obs, rows, &mut self.scratch);
        std::mem::swap(obs, &mut self.scratch);
    }

    /// Fine-tuning: one step of the encoder on the network's loss gradient `dlatent` at the
    /// means of `rows` observations; nothing when frozen.
    pub fn learn(&mut self, obs: &[f32], rows: usize, dlatent: &[f32]) {
        if let Some(lr) = self.fine_tune {
            self.vae.encoder_step(obs, rows, dlatent, lr);
        }
    }

    /// Writes the encoder as it is now (an autoencoder checkpoint) to `path`.
    pub fn save<G: Game>(&self, game: &G, path: &Path) -> Result<(), LearnError> {
        let run = serde_json::json!({ "fine_tuned_from": self.path });
        self.vae.save(path, &game.spec().to_string(), run).map_err(|e| LearnError::Data(e.to_string()))
    }
}

/// The network's input for `rows` observations: their latent means where an encoder is in front,
/// the observations themselves otherwise.
pub fn net_input<'a>(encoder: &mut Option<Encoder>, obs: &'a [f32], rows: usize) -> std::borrow::Cow<'a, [f32]> {
    match encoder {
        Some(e) => std::borrow::Cow::Owned(e.encode(obs, rows).to_vec()),
        None => std::borrow::Cow::Borrowed(obs),
    }
}

/// Where a learner keeps a fine-tuned encoder beside its checkpoint `path`
/// (`last.safetensors`: `last.encoder.safetensors`).
pub fn fine_tuned_path(path: &Path) -> PathBuf {
    path.with_extension("encoder.safetensors")
}

/// The encoder a learner's checkpoint names (its sidecar's `run.encoder`): the fine-tuned one
/// beside it, or the frozen one its run read.
pub fn encoder_named(checkpoint: &Path) -> Option<String> {
    let text = std::fs::read_to_string(meeple_nn::sidecar_path(checkpoint)).ok()?;
    let side: serde_json::Value = serde_json::from_str(&text).ok()?;
    side.pointer("/run/encoder")?.as_str().map(str::to_string)
}

/// Reads the encoder for a learner run: from beside the checkpoint being resumed when it was
/// fine-tuned (the run goes on with the encoder as it had become), else from `given`.
pub fn learner_encoder<G: Game>(
    game: &G,
    given: Option<&String>,
    fine_tune: Option<f64>,
    resume: Option<&Path>,
) -> Result<Option<Encoder>, LearnError> {
    let Some(given) = given else { return Ok(None) };
    let tuned = resume.map(fine_tuned_path).filter(|p| fine_tune.is_some() && p.is_file());
    match tuned {
        Some(p) => {
            let mut e = Encoder::load(game, &p, given, fine_tune)?;
            e.path = given.clone();
            Ok(Some(e))
        }
        None => Encoder::load(game, Path::new(given), given, fine_tune).map(Some),
    }
}

/// What a learner's sidecar says of its encoder: the name to find it by (the fine-tuned copy's
/// file name, or the frozen file as given), written beside the checkpoint first where fine-tuned.
pub fn save_encoder<G: Game>(
    game: &G,
    encoder: &Option<Encoder>,
    checkpoint: &Path,
) -> Result<Option<String>, LearnError> {
    let Some(e) = encoder else { return Ok(None) };
    if !e.fine_tuned() {
        return Ok(Some(e.path.clone()));
    }
    let path = fine_tuned_path(checkpoint);
    e.save(game, &path)?;
    Ok(path.file_name().map(|f| f.to_string_lossy().into_owned()))
}

/// Where a learner's sidecar names its encoder: a file of that name beside the checkpoint
/// first (so the two can be moved together), then the path as given.
pub fn encoder_path(checkpoint: &Path, named: &str) -> PathBuf {
    let beside = Path::new(named).file_name().and_then(|f| checkpoint.parent().map(|d| d.join(f)));
    match beside {
        Some(p) if p.is_file() => p,
        _ => PathBuf::from(named),
    }
}

/// One optimiser step of `trainer` on `rows` observations (as the environment gives them),
/// through the encoder where there is one; a fine-tuned encoder takes its step too, on the
/// gradient at its means.
pub fn train_through(
    trainer: &mut meeple_nn::Trainer,
    encoder: &mut Option<Encoder>,
    obs: &[f32],
    rows: usize,
    objective: impl FnMut(&[f32], &[f32], &mut [f32], &mut [f32]) + Send,
) -> Result<f64, LearnError> {
    match encoder {
        Some(e) if e.fine_tuned() => {
            let input = e.encode(obs, rows).to_vec();
            let mut dlatent = Vec::new();
            let lr = trainer.train_step_with_input_grad(&input, rows, objective, &mut dlatent)?;
            e.learn(obs, rows, &dlatent);
            Ok(lr)
        }
        _ => Ok(trainer.train_step_with(&net_input(encoder, obs, rows), rows, objective)?),
    }
}

/// The settings of `train vae`; each is the flag of the same name, its doc the flag's help,
/// [`VaeRunConfig::new`] the defaults.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, clap::Args)]
pub struct VaeRunConfig {
    /// Agents whose games give the positions, taking turns game by game (repeat; Defradas et al.:
    /// half random, half a trained PPO agent).
    #[arg(long = "players", value_name = "SPEC")]
    pub players: Vec<String>,
    /// The games played for positions: the run's --games (Defradas et al.: 4,000).
    #[arg(skip)]
    pub games: u64,
    /// Width of the encoder's and decoder's hidden layer.
    #[arg(long)]
    pub hidden: usize,
    /// Size of the latent code (Defradas et al.: 32).
    #[arg(long)]
    pub latent: usize,
    /// Passes over the training positions (Defradas et al.: 300).
    #[arg(long)]
    pub epochs: u64,
    /// Positions per optimiser step.
    #[arg(long)]
    pub batch: usize,
    /// AdamW's learning rate.
    #[arg(long)]
    pub lr: f64,
    /// Share of the positions (the last games') held out to measure the reconstruction.
    #[arg(long)]
    pub held_out: f64,
    /// The run's seed: `--seed`.
    #[arg(skip)]
    pub seed: u64,
}

impl crate::flags::Settings for VaeRunConfig {
    fn defaults() -> serde_json::Value {
        serde_json::to_value(VaeRunConfig::new(1)).expect("configs serialise")
    }
}

impl VaeRunConfig {
    /// Defradas et al.'s autoencoder: 4,000 games of `random`, latent 32, 30 epochs (the report:
    /// 300) of 256 positions a step at 1e-3, a tenth held out.
    pub fn new(seed: u64) -> Self {
        VaeRunConfig {
            players: vec!["random".into()],
            games: 4000,
            hidden: 256,
            latent: 32,
            epochs: 30,
            batch: 256,
            lr: 1e-3,
            held_out: 0.1,
            seed,
        }
    }

    /// Refuses settings out of range, naming the flag.
    pub fn check(&self) -> Result<(), LearnError> {
        let bad = |m: String| Err(LearnError::Config(m));
        if !(self.lr.is_finite() && self.lr > 0.0) {
            return bad(format!("--lr {} must be a positive number", self.lr));
        }
        if !(self.held_out > 0.0 && self.held_out < 1.0) {
            return bad(format!("--held-out {} must be within 0 and 1 (excluded)", self.held_out));
        }
        if !(1..=65_536).contains(&self.batch) {
            return bad(format!("--batch {} must be within 1..=65536", self.batch));
        }
        if !(1..=10_000_000).contains(&self.games) {
            return bad(format!("--games {} must be within 1..=10000000", self.games));
        }
        if self.epochs == 0 {
            return bad("--epochs must be at least 1".into());
        }
        Ok(())
    }
}

/// `train vae` for [`crate::run::run`]: the positions played when the run starts (again on
/// resume: they are the seed's), then one epoch of the ELBO a round, the held-out
/// reconstruction after each.
pub struct VaeRun {
    game: String,
    config: VaeRunConfig,
    data: Vec<f32>,
    train_rows: usize,
    test_rows: usize,
    vae: Vae,
    rng: meeple_game::Rng,
    order: Vec<usize>,
    batch: Vec<f32>,
    epoch: u64,
    seconds: f64,
}

impl VaeRun {
    pub fn new<G: Game>(game: &G, config: VaeRunConfig, resume: Option<&Path>) -> Result<Self, LearnError> {
        config.check()?;
        let spec = game.spec().to_string();
        let n: usize = game.observation_shape().iter().product();
        let shape = meeple_nn::VaeConfig { input: n, hidden: config.hidden, latent: config.latent };
        let (vae, epoch, seconds) = match resume {
            Some(path) => {
                let (vae, side) = Vae::load(path, Some(&spec))?;
                if side.vae != shape {
                    return Err(LearnError::Config(format!(
                        "--resume: '{}' is a VAE of {:?}, not {shape:?}",
                        path.display(),
                        side.vae
                    )));
                }
                let epochs = side.run.get("epochs").and_then(|e| e.as_u64()).unwrap_or(0);
                (vae, epochs, side.run.get("seconds").and_then(|e| e.as_f64()).unwrap_or(0.0))
            }
            None => (Vae::new(shape, config.seed)?, 0, 0.0),
        };
        let data = positions(game, &config.players, config.games, config.seed)?;
        let rows = data.len() / n;
        // The held-out positions are whole games' worth at the end (the last games played).
        let test_rows = ((rows as f64 * config.held_out) as usize).max(1).min(rows.saturating_sub(1));
        let train_rows = rows - test_rows;
        if train_rows == 0 {
            return Err(LearnError::Data(format!("{rows} positions: too few to hold some out; play more --games")));
        }
        let mut run = VaeRun {
            game: spec,
            data,
            train_rows,
            test_rows,
            vae,
            rng: rng_from_seed(derive_seed(config.seed, 0x7a3)),
            order: (0..train_rows).collect(),
            batch: Vec::with_capacity(config.batch * n),
            epoch: 0,
            seconds,
            config,
        };
        // The shuffles of the epochs done, drawn again: the epochs that follow see the order an
        // uninterrupted run would.
        for _ in 0..epoch {
            run.shuffle();
        }
        run.epoch = epoch;
        Ok(run)
    }

    fn shuffle(&mut self) {
        use rand::RngExt;
        for i in (1..self.order.len()).rev() {
            self.order.swap(i, self.rng.random_range(0..=i));
        }
    }

    /// The held-out reconstruction now.
    pub fn held_out(&self) -> meeple_nn::Reconstruction {
        let n = self.vae_input();
        self.vae.reconstruction(&self.data[self.train_rows * n..], self.test_rows)
    }

    fn vae_input(&self) -> usize {
        self.data.len() / (self.train_rows + self.test_rows)
    }
}

fn epoch_name(epoch: u64) -> String {
    format!("epoch-{epoch}")
}

/// The autoencoder's description: it plays no games, so it is never evaluated; its rounds are
/// epochs.
pub static VAE: crate::run::Kind = crate::run::Kind {
    flags: &[("players", "--player")],
    evaluate_every: crate::run::Every::Never,
    may_change: &["epochs"],
    kept: epoch_name,
    ..crate::run::Kind::new("vae")
};

impl crate::run::Learner for VaeRun {
    fn kind(&self) -> &'static crate::run::Kind {
        &VAE
    }

    /// An autoencoder plays no games: it is read by `dqn`/`ppo`'s `--encoder`.
    fn agent(&self) -> String {
        String::new()
    }

    fn round(&mut self, _budget: &crate::run::Budget<'_>) -> Result<crate::run::Round, LearnError> {
        self.shuffle();
        let n = self.vae_input();
        let (mut recon, mut kl, mut steps) = (0.0, 0.0, 0u64);
        for chunk in self.order.chunks(self.config.batch) {
            self.batch.clear();
            for &r in chunk {
                self.batch.extend_from_slice(&self.data[r * n..(r + 1) * n]);
            }
            let l = self.vae.train_step(&self.batch, chunk.len(), self.config.lr as f32)?;
            recon += l.reconstruction;
            kl += l.kl;
            steps += 1;
        }
        self.epoch += 1;
        let held = self.held_out();
        let mut round = crate::run::Round::default();
        round.loss("reconstruction", recon / steps as f64);
        round.loss("kl", kl / steps as f64);
        round.figure("accuracy", held.accuracy);
        round.figure("on_accuracy", held.on_accuracy);
        round.stat("epoch", self.epoch as f64);
        Ok(round)
    }

    fn progress(&self) -> crate::run::Progress {
        crate::run::Progress {
            episodes: self.config.games,
            decisions: self.train_rows as u64,
            steps: self.vae.step(),
            seconds: self.seconds,
        }
    }

    fn save(&self, path: &Path, save: &crate::run::Save<'_>) -> Result<(), LearnError> {
        let held = self.held_out();
        let run = serde_json::json!({
            "trainer": "vae", "epochs": self.epoch, "games": self.config.games, "players": self.config.players,
            "positions": self.train_rows + self.test_rows, "held_out": self.test_rows, "reconstruction": held,
            "seconds": save.seconds,
        });
        Ok(self.vae.save(path, &self.game, run)?)
    }

    fn settings(&self) -> serde_json::Value {
        serde_json::to_value(&self.config).expect("configs serialise")
    }

    fn generation(&self) -> u64 {
        self.epoch
    }

    fn finished(&self) -> bool {
        self.epoch >= self.config.epochs
    }
}
