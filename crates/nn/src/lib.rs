//! meeple's neural networks, on burn's pure-Rust CPU backend (flex). The only crate that
//! depends on burn: everything it offers speaks plain `f32` slices, so learners and agents never
//! see a tensor.
//!
//! - [`NetConfig`]: a residual tower for board planes or an MLP for flat observations, a policy
//!   head with one logit per action id and a value head with each seat's expected return.
//! - [`Network`]: batched inference in its own thread pool.
//! - [`Trainer`]: AdamW with weight decay, gradient-norm clipping and a warm-up + cosine
//!   schedule; masked policy cross-entropy and value MSE.
//! - Checkpoints: safetensors weights beside a JSON sidecar ([`Sidecar`]) that says what the
//!   weights are for; a wrong, mismatched or truncated checkpoint is an error.

mod conv;
mod fast;
mod gemm;
mod grad;
mod net;
mod vae;

pub use net::{Head, NetConfig, Trunk};
pub use vae::{Reconstruction, Vae, VaeConfig, VaeLosses, VaeSidecar};

use burn::module::Module;
use burn::store::{ModuleSnapshot, SafetensorsStore};
use burn::tensor::{Device, Tensor, TensorData};
use net::PolicyValueNet;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Everything that can go wrong with networks and checkpoints.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NnError {
    /// A network spec that does not fit.
    #[error("{0}")]
    Spec(String),
    /// A checkpoint that cannot be used: missing, truncated, for another game or shape.
    #[error("checkpoint '{path}': {reason}")]
    Checkpoint { path: String, reason: String },
    /// Input of the wrong size.
    #[error("{0}")]
    Shape(String),
}

/// What a checkpoint's weights are for, written beside them as JSON (`model.safetensors` and
/// `model.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sidecar {
    /// Format version of this sidecar.
    pub format: u32,
    /// The network's shape.
    pub net: NetConfig,
    /// The canonical spec of the game it plays.
    pub game: String,
    /// Optimiser steps taken when it was saved.
    pub step: u64,
    /// The run that made it (its configuration and figures), free-form.
    #[serde(default)]
    pub run: serde_json::Value,
    /// The command lines that made it, oldest first: a resumed run adds its own. Empty where
    /// the program that wrote it did not record its command ([`record_command`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
}

/// This process's command line, as [`record_command`] set it.
static COMMAND: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Records the command line of this process (program name first), so that every checkpoint it
/// writes names the command that made it. The first call wins.
pub fn record_command(args: impl IntoIterator<Item = String>) {
    let line: Vec<String> = args.into_iter().map(|a| shell_word(&a)).collect();
    let _ = COMMAND.set(line.join(" "));
}

/// `word` as a POSIX shell reads it back: bare where it holds only characters the shell takes
/// literally, else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// `commands` with this process's command added (unless it is already the last).
fn with_command(commands: &mut Vec<String>) {
    if let Some(c) = COMMAND.get()
        && commands.last() != Some(c)
    {
        commands.push(c.clone());
    }
}

/// The sidecar format this crate writes and reads.
pub const SIDECAR_FORMAT: u32 = 1;

/// The sidecar path of a weights file: the same path with `.json` in place of its extension.
pub fn sidecar_path(weights: &Path) -> PathBuf {
    weights.with_extension("json")
}

/// A network ready for inference: BatchNorm on running statistics, no autodiff, its own
/// thread pool (burn-flex parallelises on the current rayon pool).
pub struct Network {
    config: NetConfig,
    model: PolicyValueNet,
    fast: fast::Fast,
    pool: rayon::ThreadPool,
}

impl std::fmt::Debug for Network {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Network").field("config", &self.config).finish()
    }
}

/// One forward pass's output: `logits[b * actions + a]`, `values[b * seats + s]` (mover first).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Output {
    pub logits: Vec<f32>,
    pub values: Vec<f32>,
}

/// Builds a freshly initialised model from `seed`. burn's seed may be global to the process, so
/// seeding and drawing the initial weights happen under one lock: two networks built at once
/// on two threads still get the weights of their own seeds.
fn initialise(config: &NetConfig, device: &Device, seed: u64) -> PolicyValueNet {
    static INIT: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = INIT.lock().unwrap_or_else(|e| e.into_inner());
    device.seed(seed);
    let model = config.build(device);
    // burn draws a parameter's initial values lazily, on first use: draw them all now, under
    // the lock, or another thread's seeding could land between.
    model.visit(&mut Materialise);
    model
}

struct Materialise;

impl burn::module::ModuleVisitor for Materialise {
    fn visit_float<const D: usize>(&mut self, param: &burn::module::Param<Tensor<D>>) {
        let _ = param.val();
    }
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(|i| format!("meeple-nn-{i}"))
        .build()
        .expect("a thread pool of a few threads starts")
}

impl Network {
    /// A freshly initialised network; the same seed gives the same weights.
    pub fn new(config: NetConfig, seed: u64, threads: usize) -> Self {
        let device = Device::flex();
        let model = initialise(&config, &device, seed);
        Network::from_model(config, model, threads)
    }

    fn from_model(config: NetConfig, model: PolicyValueNet, threads: usize) -> Self {
        let fast = fast::Fast::new(&model, &config);
        Network { config, model, fast, pool: pool(threads) }
    }

    /// The network's shape.
    pub fn config(&self) -> &NetConfig {
        &self.config
    }

    /// Evaluates `batch` observations laid end to end in `obs` (each `config().input_len()`
    /// values): policy logits and each seat's value, mover first.
    pub fn evaluate(&self, obs: &[f32], batch: usize) -> Result<Output, NnError> {
        self.forward(obs, batch, false)
    }

    /// [`Network::evaluate`] on the calling thread alone, not in the network's pool: for
    /// callers that keep a core busy each (self-play workers), where handing every batch to the
    /// pool and back only adds waiting. The same outputs as `evaluate`.
    pub fn evaluate_serial(&self, obs: &[f32], batch: usize) -> Result<Output, NnError> {
        self.forward(obs, batch, true)
    }

    fn check_input(&self, obs: &[f32], batch: usize) -> Result<(), NnError> {
        let n = self.config.input_len();
        if obs.len() != batch * n {
            return Err(NnError::Shape(format!(
                "{} values for {batch} observations of {n} (the network's input {:?})",
                obs.len(),
                self.config.input
            )));
        }
        Ok(())
    }

    fn forward(&self, obs: &[f32], batch: usize, serial: bool) -> Result<Output, NnError> {
        if batch == 0 {
            return Ok(Output::default());
        }
        self.check_input(obs, batch)?;
        let mut out = Output::default();
        if serial {
            self.fast.evaluate_serial(obs, batch, &mut out.logits, &mut out.values);
        } else {
            self.pool.install(|| self.fast.evaluate(obs, batch, &mut out.logits, &mut out.values));
        }
        Ok(out)
    }

    /// The logits of listed actions alone, and every seat's value: sample `b`'s actions are
    /// `actions[starts[b]..starts[b + 1]]` and its logits land at the same places in
    /// `Output::logits` (`starts` has `batch + 1` offsets, from 0 to `actions.len()`). A search
    /// reads only its legal moves' logits; with a dense head and a few legal moves among many
    /// ids this skips most of the head's product. Equal to [`Network::evaluate`]'s logits at
    /// those actions, to float rounding (tested). `serial` as [`Network::evaluate_serial`].
    pub fn evaluate_listed(
        &self,
        obs: &[f32],
        batch: usize,
        actions: &[u32],
        starts: &[usize],
        serial: bool,
    ) -> Result<Output, NnError> {
        let total = self.config.actions;
        if starts.len() != batch + 1
            || starts.first() != Some(&0)
            || starts.last() != Some(&actions.len())
            || starts.windows(2).any(|w| w[0] > w[1])
        {
            return Err(NnError::Shape(format!(
                "{} offsets for {batch} observations' lists of {} actions: wanted {} rising from 0 to {}",
                starts.len(),
                actions.len(),
                batch + 1,
                actions.len()
            )));
        }
        if let Some(&a) = actions.iter().find(|&&a| a as usize >= total) {
            return Err(NnError::Shape(format!("action {a} listed for a network of {total} actions")));
        }
        // Where most ids are listed anyway (or the head reads planes), the full product is as
        // cheap: take it and pick the listed ones out.
        if batch == 0 || !self.fast.lists() || 2 * actions.len() >= batch * total {
            let full = self.forward(obs, batch, serial)?;
            let mut logits = Vec::with_capacity(actions.len());
            for b in 0..batch {
                let row = &full.logits[b * total..(b + 1) * total];
                logits.extend(actions[starts[b]..starts[b + 1]].iter().map(|&a| row[a as usize]));
            }
            return Ok(Output { logits, values: full.values });
        }
        self.check_input(obs, batch)?;
        let mut out = Output::default();
        if serial {
            self.fast.evaluate_listed(obs, batch, actions, starts, true, &mut out);
        } else {
            self.pool.install(|| self.fast.evaluate_listed(obs, batch, actions, starts, false, &mut out));
        }
        Ok(out)
    }

    /// The same as [`Network::evaluate`] through burn's own forward pass (slower; the reference
    /// the fast path is tested against).
    pub fn evaluate_reference(&self, obs: &[f32], batch: usize) -> Result<Output, NnError> {
        let n = self.config.input_len();
        if batch == 0 || obs.len() != batch * n {
            return Err(NnError::Shape(format!("{} values for {batch} observations of {n}", obs.len())));
        }
        self.pool.install(|| {
            let device = Device::flex();
            let input = Tensor::<2>::from_data(TensorData::new(obs.to_vec(), [batch, n]), &device);
            let (logits, values) = self.model.forward(input, &self.config);
            Ok(Output {
                logits: logits.into_data().try_to_vec::<f32>().expect("f32 logits"),
                values: values.into_data().try_to_vec::<f32>().expect("f32 values"),
            })
        })
    }

    /// Saves the weights (safetensors, written whole) and the sidecar beside them.
    pub fn save(&self, path: &Path, sidecar: &Sidecar) -> Result<(), NnError> {
        save(&self.model, &self.config, path, sidecar)
    }

    /// Loads a checkpoint: its sidecar first, then weights that must fill the network exactly.
    /// `game` (a canonical game spec), if given, must be the one the network was trained for.
    pub fn load(path: &Path, game: Option<&str>, threads: usize) -> Result<(Self, Sidecar), NnError> {
        let (model, sidecar) = load(path, game, &Device::flex())?;
        Ok((Network::from_model(sidecar.net.clone(), model, threads), sidecar))
    }
}

fn checkpoint_error(path: &Path, reason: impl Into<String>) -> NnError {
    NnError::Checkpoint { path: path.display().to_string(), reason: reason.into() }
}

fn save(model: &PolicyValueNet, config: &NetConfig, path: &Path, sidecar: &Sidecar) -> Result<(), NnError> {
    if sidecar.net != *config {
        return Err(checkpoint_error(path, "the sidecar describes another network"));
    }
    let mut sidecar = sidecar.clone();
    with_command(&mut sidecar.commands);
    let json = serde_json::to_string_pretty(&sidecar).expect("sidecars serialise");
    write_checkpoint(path, &json, |store| model.save_into(store).map_err(|e| e.to_string()))
}

/// Writes a checkpoint: the weights (`write` fills the store) and the sidecar JSON, each
/// written whole beside its target and renamed over it, so an interruption leaves the old
/// checkpoint or the new one, never half of one.
pub(crate) fn write_checkpoint(
    path: &Path,
    sidecar_json: &str,
    write: impl FnOnce(&mut SafetensorsStore) -> Result<(), String>,
) -> Result<(), NnError> {
    let tmp_weights = path.with_extension(format!("safetensors.{}.tmp", std::process::id()));
    let mut store = SafetensorsStore::from_file(&tmp_weights).overwrite(true);
    if let Err(e) = write(&mut store) {
        let _ = std::fs::remove_file(&tmp_weights);
        return Err(checkpoint_error(path, format!("cannot write the weights: {e}")));
    }
    let side = sidecar_path(path);
    let tmp = side.with_extension(format!("json.{}.tmp", std::process::id()));
    let written = std::fs::write(&tmp, format!("{sidecar_json}\n"))
        .and_then(|()| readable(&tmp_weights))
        .and_then(|()| std::fs::rename(&tmp_weights, path))
        .and_then(|()| std::fs::rename(&tmp, &side));
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp_weights);
        let _ = std::fs::remove_file(&tmp);
        checkpoint_error(path, format!("cannot write the checkpoint: {e}"))
    })
}

/// The store creates its file readable by the owner only; a checkpoint is meant to be shared
/// like any other output.
fn readable(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644))?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

fn load(path: &Path, game: Option<&str>, device: &Device) -> Result<(PolicyValueNet, Sidecar), NnError> {
    let side = sidecar_path(path);
    let bytes = std::fs::metadata(&side)
        .ok()
        .filter(|m| m.len() <= 1 << 20)
        .and_then(|_| std::fs::read_to_string(&side).ok())
        .ok_or_else(|| {
            checkpoint_error(
                path,
                format!("no readable sidecar '{}' (the JSON written beside the weights)", side.display()),
            )
        })?;
    let sidecar: Sidecar =
        serde_json::from_str(&bytes).map_err(|e| checkpoint_error(path, format!("the sidecar is not valid: {e}")))?;
    if sidecar.format != SIDECAR_FORMAT {
        return Err(checkpoint_error(
            path,
            format!("sidecar format {} (this meeple reads {SIDECAR_FORMAT})", sidecar.format),
        ));
    }
    if let Some(game) = game
        && sidecar.game != game
    {
        return Err(checkpoint_error(path, format!("trained for '{}', not '{game}'", sidecar.game)));
    }
    // The sidecar's config is checked again here so a hand-edited one cannot ask for a huge net.
    let c = &sidecar.net;
    let checked = NetConfig::from_spec(&c.spec(), &c.input, c.actions, c.seats, c.planes())
        .map_err(|e| checkpoint_error(path, e.to_string()))?;
    if checked != *c {
        return Err(checkpoint_error(path, format!("the sidecar's network does not read back as '{}'", c.spec())));
    }
    if !path.is_file() {
        return Err(checkpoint_error(path, "no weights file"));
    }
    let mut model = c.build(device);
    let mut store = SafetensorsStore::from_file(path);
    let applied = model.load_from(&mut store).map_err(|e| {
        let text = e.to_string();
        let first = text.lines().next().unwrap_or_default().trim().trim_end_matches(':');
        if text.contains("Missing") || text.contains("not found") || text.contains("shape") {
            checkpoint_error(path, format!("the weights do not fit the network in the sidecar ({first})"))
        } else {
            checkpoint_error(path, format!("unreadable weights ({first})"))
        }
    })?;
    if !applied.errors.is_empty() || !applied.missing.is_empty() || !applied.unused.is_empty() {
        return Err(checkpoint_error(
            path,
            format!(
                "the weights do not fit the network in the sidecar ({} errors, {} missing, {} unused tensors{})",
                applied.errors.len(),
                applied.missing.len(),
                applied.unused.len(),
                applied.errors.first().map(|e| format!(": {e:?}")).unwrap_or_default()
            ),
        ));
    }
    Ok((model, sidecar))
}

/// The machine's measured speed of the matrix product the networks use (faer's, rows split
/// over `threads` threads as the training pass splits them), GFLOP/s: an `n` x `n` product
/// repeated for about `seconds` (the peak a network's GFLOP/s compares to).
pub fn matmul_gflops(n: usize, threads: usize, seconds: f64) -> f64 {
    let data: Vec<f32> = (0..n * n).map(|i| ((i % 17) as f32 - 8.0) / 8.0).collect();
    let mut out = vec![0.0f32; n * n];
    pool(threads).install(|| {
        gflops(2.0 * (n as f64).powi(3), seconds, || grad::product(&data, n, n, gemm::mat(&data, n, n), &mut out))
    })
}

/// GFLOP/s of `product` (`flops` a call), repeated for about `seconds` after one call that keeps
/// start-up costs out of the measure.
fn gflops(flops: f64, seconds: f64, mut product: impl FnMut()) -> f64 {
    product();
    let start = std::time::Instant::now();
    let mut done = 0u64;
    while start.elapsed().as_secs_f64() < seconds || done == 0 {
        product();
        done += 1;
    }
    flops * done as f64 / start.elapsed().as_secs_f64() / 1e9
}

/// The measured speed of the in-place convolution kernel (`conv`, which the towers' 3x3
/// convolutions use where their width fits the vector unit), GFLOP/s, on the product of a 3x3
/// convolution from 32 channels to 32 over 4,096 cells (`[4096 x 288] . [288 x 32]`, the shape
/// it is built for: its output columns stay in registers; on a large square product it has no
/// cache blocking and runs slower), rows split over `threads` threads; `None` where the kernel
/// does not take 32 columns on this machine (the towers then use faer's product,
/// [`matmul_gflops`]).
pub fn conv_kernel_gflops(threads: usize, seconds: f64) -> Option<f64> {
    use rayon::prelude::*;
    let (m, k, n) = (4096, 288, 32);
    if !conv::fits(n) {
        return None;
    }
    let a: Vec<f32> = (0..m * k).map(|i| ((i % 17) as f32 - 8.0) / 8.0).collect();
    let b: Vec<f32> = (0..k * n).map(|i| ((i % 13) as f32 - 6.0) / 8.0).collect();
    let starts: Vec<usize> = (0..m).map(|i| i * k).collect();
    let mut out = vec![0.0f32; m * n];
    let rows = m.div_ceil(threads.max(1) * 4).max(1);
    Some(pool(threads).install(|| {
        gflops(2.0 * (m * k * n) as f64, seconds, || {
            out.par_chunks_mut(rows * n).zip(starts.par_chunks(rows)).for_each(|(o, s)| {
                let a = conv::Rows { data: &a, starts: s, segs: 1, stride: 0, len: k };
                conv::nn(a, &b, n, o, false);
            })
        })
    }))
}

/// Training settings.
/// The learning rate is a flag of the trainers that flatten these settings (AlphaZero's);
/// the rest are set by each trainer's recipe.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct TrainConfig {
    /// Peak learning rate.
    #[arg(long)]
    pub lr: f64,
    /// AdamW's decoupled weight decay.
    #[arg(skip)]
    pub weight_decay: f64,
    /// Largest gradient norm; larger gradients are scaled down to it: each parameter tensor's
    /// own norm, or with [`TrainConfig::clip_global`] the norm of all of them together.
    #[arg(skip)]
    pub clip_norm: f64,
    /// Clip the gradient by its one global norm over every tensor (PyTorch's
    /// `clip_grad_norm_`, as the Catan self-play study trained), not tensor by tensor.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[arg(skip)]
    pub clip_global: bool,
    /// Steps of linear warm-up from 0 to `lr`.
    #[arg(skip)]
    pub warmup: u64,
    /// Steps of the cosine decay after the warm-up (to 10% of `lr`; constant afterwards); 0:
    /// decay over the run's plan, which the caller follows with [`Trainer::set_anneal`].
    #[arg(skip)]
    pub decay: u64,
    /// Weight of the value loss against the policy loss.
    #[arg(skip)]
    pub value_weight: f64,
    /// Weight of the ownership loss (the mean squared error per cell), where the network has
    /// an ownership head.
    #[serde(default = "auxiliary_weight_default")]
    #[arg(skip)]
    pub ownership_weight: f64,
    /// Weight of the score-margin loss (its squared error), where the network has a score head.
    #[serde(default = "auxiliary_weight_default")]
    #[arg(skip)]
    pub score_weight: f64,
    /// The value loss: Huber with this threshold (the Catan self-play study's smooth L1), or the squared
    /// error where absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(skip)]
    pub huber: Option<f64>,
}

/// Both auxiliary heads weigh half the value loss: enough to shape the trunk, not enough to
/// outweigh the targets the search plays by.
fn auxiliary_weight_default() -> f64 {
    0.5
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            lr: 2e-3,
            weight_decay: 1e-4,
            clip_norm: 1.0,
            clip_global: false,
            warmup: 200,
            decay: 0,
            value_weight: 1.0,
            ownership_weight: auxiliary_weight_default(),
            score_weight: auxiliary_weight_default(),
            huber: None,
        }
    }
}

/// Decay steps when neither the configuration nor the caller gives a plan.
const DEFAULT_DECAY: u64 = 20_000;

/// Where a run annealed over its plan (`decay: 0`) stands: at optimiser step `step` it had done
/// `done` of its plan (0 to 1), and at its pace it reaches the end at step `end` (`None` while
/// the pace is not known: the rate holds where it stands). The cosine's fraction runs linearly
/// from `done` at `step` to 1 at `end`, so a schedule depends only on where the run stands in its
/// plan, never on how it got there: a run stopped and resumed, or extended to a new end, goes on
/// from the rate it had.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Anneal {
    pub step: u64,
    pub done: f64,
    pub end: Option<u64>,
}

impl Anneal {
    /// The share of the decay done at `step`.
    pub fn at(&self, step: u64) -> f64 {
        let t = match self.end {
            Some(end) if end > self.step => {
                self.done + (1.0 - self.done) * step.saturating_sub(self.step) as f64 / (end - self.step) as f64
            }
            Some(_) => 1.0,
            None => self.done,
        };
        t.clamp(0.0, 1.0)
    }
}

impl TrainConfig {
    /// The learning rate at `step`.
    pub fn lr_at(&self, step: u64) -> f64 {
        self.lr_annealed(step, None)
    }

    /// The learning rate at `step` of a run annealed over its plan as `anneal` says (used where
    /// `decay` is 0).
    pub fn lr_annealed(&self, step: u64, anneal: Option<Anneal>) -> f64 {
        if step < self.warmup {
            return self.lr * (step + 1) as f64 / self.warmup as f64;
        }
        let t = match (self.decay, anneal) {
            (0, Some(a)) => a.at(step),
            (d, _) => {
                let decay = if d == 0 { DEFAULT_DECAY } else { d };
                ((step - self.warmup) as f64 / decay as f64).min(1.0)
            }
        };
        let floor = 0.1 * self.lr;
        floor + (self.lr - floor) * 0.5 * (1.0 + (std::f64::consts::PI * t).cos())
    }
}

/// One training batch, laid out flat: `obs[b * input_len..]`, `legal[b * actions + a]` (1 for
/// a legal action), `policy[b * actions + a]` (target probabilities over the legal actions),
/// `policy_weight[b]` (0 for positions whose search was too short to teach the policy),
/// `value[b * seats + s]` (target returns, mover first); for a network with an ownership head,
/// `ownership[b * cells + c]` (who holds cell `c` at the game's end from the mover's view, -1
/// to 1) and `ownership_weight[b]` (0 where the target is unknown), both empty otherwise; for
/// a network with a score head, `score[b]` (the final score margin from the mover's view over
/// the game's scale, -1 to 1) and `score_weight[b]` (0 where unknown), both empty otherwise.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Batch {
    pub size: usize,
    pub obs: Vec<f32>,
    pub legal: Vec<f32>,
    pub policy: Vec<f32>,
    pub policy_weight: Vec<f32>,
    pub value: Vec<f32>,
    pub ownership: Vec<f32>,
    pub ownership_weight: Vec<f32>,
    pub score: Vec<f32>,
    pub score_weight: Vec<f32>,
}

/// Losses of one training step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Losses {
    pub policy: f64,
    pub value: f64,
    /// Entropy of the network's policy over the legal moves, nats (mean over the batch).
    pub entropy: f64,
    pub lr: f64,
    /// Mean squared error of the ownership head per cell (0 without one).
    #[serde(default)]
    pub ownership: f64,
    /// Mean squared error of the score-margin head (0 without one).
    #[serde(default)]
    pub score: f64,
}

/// Trains a network: its weights as flat vectors, the hand-written forward and backward passes
/// of a training step (`grad`), and AdamW.
pub struct Trainer {
    config: NetConfig,
    train: TrainConfig,
    model: grad::Model,
    optim: grad::AdamW,
    work: grad::Work,
    tensors: Vec<usize>,
    pool: rayon::ThreadPool,
    step: u64,
    /// Where the run stands in its plan (for `decay: 0`).
    anneal: Option<Anneal>,
    /// The commands of the checkpoint this trainer resumed, which its own checkpoints carry on.
    commands: Vec<String>,
}

impl Trainer {
    /// A trainer for a fresh network; the same seed gives the same initial weights.
    pub fn new(config: NetConfig, train: TrainConfig, seed: u64, threads: usize) -> Self {
        let model = initialise(&config, &Device::flex(), seed);
        Self::from_model(config, train, &model, 0, threads)
    }

    /// Continues from a checkpoint: its weights, and AdamW's moments and step count where
    /// [`Trainer::save_resumable`] wrote them beside it (a checkpoint without them, from an older
    /// meeple, starts the moments again; `restored` in the answer says which).
    pub fn resume(path: &Path, game: &str, train: TrainConfig, threads: usize) -> Result<Resumed, NnError> {
        let (model, sidecar) = load(path, Some(game), &Device::flex())?;
        let mut trainer = Self::from_model(sidecar.net.clone(), train, &model, sidecar.step, threads);
        trainer.commands = sidecar.commands.clone();
        let state = optimizer_path(path);
        let restored = match std::fs::metadata(&state) {
            Err(_) => false,
            Ok(m) if m.len() > 16 * (trainer.model.theta.len() as u64 + 8) => {
                return Err(checkpoint_error(
                    path,
                    format!("'{}' is larger than this network's optimiser state", state.display()),
                ));
            }
            Ok(_) => {
                let bytes = std::fs::read(&state)
                    .map_err(|e| checkpoint_error(path, format!("cannot read '{}': {e}", state.display())))?;
                trainer.optim =
                    grad::AdamW::from_bytes(&bytes, trainer.model.theta.len(), trainer.step).map_err(|e| {
                        checkpoint_error(
                            path,
                            format!("'{}': {e} (remove it to go on with fresh moments)", state.display()),
                        )
                    })?;
                true
            }
        };
        Ok(Resumed { trainer, sidecar, restored })
    }

    /// A trainer that starts from another run's weights (a network of the same shape, perhaps
    /// trained on another variant of the game): step 0, fresh optimiser moments. Gives the
    /// trainer and the checkpoint's sidecar.
    pub fn warm_start(path: &Path, train: TrainConfig, threads: usize) -> Result<(Self, Sidecar), NnError> {
        let (model, sidecar) = load(path, None, &Device::flex())?;
        Ok((Self::from_model(sidecar.net.clone(), train, &model, 0, threads), sidecar))
    }

    /// A warm start from a network for a narrower variant of the game, whose inputs are the
    /// first of `input` and whose actions the first of `actions` (the game says which variants
    /// those are): the first layer's weights for the new inputs, and the policy's for the new
    /// actions, start at zero, so the network values every position as before until training
    /// moves them. Dense trunks only: [`Trainer::warm_start_into`] takes towers.
    pub fn warm_start_widened(
        path: &Path,
        input: &[usize],
        actions: usize,
        train: TrainConfig,
        threads: usize,
    ) -> Result<(Self, Sidecar), NnError> {
        let (_, sidecar) = load(path, None, &Device::flex())?;
        let from = &sidecar.net;
        let refuse = |why: &str| Err(checkpoint_error(path, why.to_string()));
        if matches!(from.trunk, Trunk::Resnet { .. }) {
            return refuse("a residual tower reads board planes: only a dense network can take more inputs");
        }
        let (&[had], &[has]) = (&from.input[..], input) else {
            return refuse("a dense network widens a flat observation only");
        };
        if has < had || actions < from.actions {
            return refuse("the game's observation or action space is smaller than the network's");
        }
        let config = NetConfig { input: input.to_vec(), actions, ..from.clone() };
        let rows: Vec<Option<usize>> = (0..actions).map(|a| (a < from.actions).then_some(a)).collect();
        Self::warm_start_into(path, &config, &rows, train, threads)
    }

    /// A warm start from the network at `path`, trained on a related game or variant, into the
    /// network `into` of the same trunk and heads: the trunk and the value head as they were;
    /// the first layer takes the inputs (dense inputs, or a tower's planes) the old network had
    /// as the first of its own, the others at weight zero, so positions of the old game (the
    /// new inputs zero) keep their values, and the new inputs change nothing until trained; the
    /// policy's row for action `a` is the old action `policy_rows[a]`'s, zero where none
    /// corresponds. Step 0, fresh optimiser moments. Refused, saying what differs, where the
    /// networks are not of one shape.
    pub fn warm_start_into(
        path: &Path,
        into: &NetConfig,
        policy_rows: &[Option<usize>],
        train: TrainConfig,
        threads: usize,
    ) -> Result<(Self, Sidecar), NnError> {
        let device = Device::flex();
        let (narrow, sidecar) = load(path, None, &device)?;
        let from = &sidecar.net;
        let refuse = |why: String| Err(checkpoint_error(path, why));
        if from.trunk != into.trunk
            || matches!(from.head, Head::Planes { .. }) != matches!(into.head, Head::Planes { .. })
        {
            return refuse(format!(
                "its network is '{}', this run's '{}': a warm start keeps the trunk",
                from.spec(),
                into.spec()
            ));
        }
        if (from.policy_filters, from.value_filters) != (into.policy_filters, into.value_filters) {
            return refuse(format!(
                "its heads read {} policy and {} value planes, this run's {} and {}",
                from.policy_filters, from.value_filters, into.policy_filters, into.value_filters
            ));
        }
        if from.seats != into.seats {
            return refuse(format!("it values {} seats, this game has {}", from.seats, into.seats));
        }
        let fits = match from.trunk {
            Trunk::Resnet { .. } => {
                from.input.len() == 3
                    && into.input.len() == 3
                    && from.input[1..] == into.input[1..]
                    && into.input[0] >= from.input[0]
            }
            _ => {
                let flat = |s: &[usize]| s.iter().product::<usize>();
                flat(&into.input) >= flat(&from.input)
            }
        };
        if !fits {
            return refuse(format!(
                "it reads observations of shape {:?}; this game's {:?} is not that with more planes or inputs",
                from.input, into.input
            ));
        }
        let mut model = into.build(&device);
        grad::transplant(&narrow, &mut model, policy_rows, &device);
        Ok((Self::from_model(into.clone(), train, &model, 0, threads), sidecar))
    }

    fn from_model(config: NetConfig, train: TrainConfig, model: &PolicyValueNet, step: u64, threads: usize) -> Self {
        let model = grad::Model::from_burn(model, &config);
        let tensors = model.tensor_lengths();
        Trainer {
            config,
            train,
            optim: grad::AdamW::new(model.theta.len()),
            model,
            work: grad::Work::default(),
            tensors,
            pool: pool(threads),
            step,
            anneal: None,
            commands: Vec::new(),
        }
    }

    /// Where the run stands in its plan: with `decay: 0` the learning rate follows it to its
    /// floor at the plan's end. A run sets it before each round, as its pace becomes known.
    pub fn set_anneal(&mut self, anneal: Anneal) {
        self.anneal = Some(anneal);
    }

    /// The learning rate the next step takes.
    pub fn lr(&self) -> f64 {
        self.train.lr_annealed(self.step, self.anneal)
    }

    /// Optimiser steps taken.
    pub fn step(&self) -> u64 {
        self.step
    }

    /// The network's shape.
    pub fn config(&self) -> &NetConfig {
        &self.config
    }

    /// One optimiser step on `batch`.
    pub fn train_step(&mut self, batch: &Batch) -> Result<Losses, NnError> {
        let (b, n, a, s) = (batch.size, self.config.input_len(), self.config.actions, self.config.seats);
        if b == 0
            || batch.obs.len() != b * n
            || batch.legal.len() != b * a
            || batch.policy.len() != b * a
            || batch.policy_weight.len() != b
            || batch.value.len() != b * s
            || (self.config.ownership
                && (batch.ownership.len() != b * self.config.ownership_cells() || batch.ownership_weight.len() != b))
            || (self.config.score && (batch.score.len() != b || batch.score_weight.len() != b))
        {
            return Err(NnError::Shape(format!("a training batch of {b} does not fit a network {:?}", self.config)));
        }
        let lr = self.lr();
        let Trainer { model, optim, work, tensors, train, .. } = self;
        let mut losses = self.pool.install(|| {
            let weights = grad::Weights {
                value: train.value_weight as f32,
                ownership: train.ownership_weight as f32,
                score: train.score_weight as f32,
                huber: train.huber.map(|h| h as f32),
            };
            let losses = model.gradients(batch, weights, work);
            optim.step(
                &mut model.theta,
                &mut work.grad,
                tensors,
                lr as f32,
                train.weight_decay as f32,
                (train.clip_norm as f32, train.clip_global),
            );
            losses
        });
        losses.lr = lr;
        self.step += 1;
        Ok(losses)
    }

    /// One optimiser step on a loss of the caller's over `batch` observations laid end to end:
    /// `objective(logits, values, dlogits, dvalues)` gets the network's outputs on them in
    /// training mode (`logits[b * actions + a]`, `values[b * seats + s]` after the sigmoid) and
    /// writes the gradient of its loss (a mean over the batch, as the caller defines it) at
    /// those outputs into `dlogits` and `dvalues`, which come zeroed. Ownership and score heads get no
    /// gradient. Returns the learning rate used. DQN's and PPO's losses come in this way, so
    /// every learner shares the one backward pass and AdamW.
    pub fn train_step_with(
        &mut self,
        obs: &[f32],
        batch: usize,
        mut objective: impl FnMut(&[f32], &[f32], &mut [f32], &mut [f32]) + Send,
    ) -> Result<f64, NnError> {
        let n = self.config.input_len();
        if batch == 0 || obs.len() != batch * n {
            return Err(NnError::Shape(format!(
                "{} values for {batch} observations of {n} (the network's input {:?})",
                obs.len(),
                self.config.input
            )));
        }
        let lr = self.lr();
        let Trainer { model, optim, work, tensors, train, .. } = self;
        self.pool.install(|| {
            model.gradients_with(obs, batch, work, &mut objective);
            optim.step(
                &mut model.theta,
                &mut work.grad,
                tensors,
                lr as f32,
                train.weight_decay as f32,
                (train.clip_norm as f32, train.clip_global),
            );
        });
        self.step += 1;
        Ok(lr)
    }

    /// [`Trainer::train_step_with`], also giving the loss's gradient at the observations in
    /// `dobs` (`batch` x input): what an encoder in front of the network learns from. Dense
    /// trunks only (`mlp`, `resmlp`).
    pub fn train_step_with_input_grad(
        &mut self,
        obs: &[f32],
        batch: usize,
        objective: impl FnMut(&[f32], &[f32], &mut [f32], &mut [f32]) + Send,
        dobs: &mut Vec<f32>,
    ) -> Result<f64, NnError> {
        if matches!(self.config.trunk, Trunk::Resnet { .. }) {
            return Err(NnError::Spec(format!(
                "net '{}': an encoder learns through a dense trunk (mlp or resmlp)",
                self.config.spec()
            )));
        }
        self.work.want_input = true;
        let lr = self.train_step_with(obs, batch, objective);
        self.work.want_input = false;
        dobs.clear();
        dobs.extend_from_slice(&self.work.dinput);
        lr
    }

    /// Every trainable weight in one flat vector (a target network keeps a copy of it).
    pub fn parameters(&self) -> &[f32] {
        &self.model.theta
    }

    /// An inference network with `theta` (a copy of [`Trainer::parameters`], e.g. a target
    /// network's moving average) in place of the current weights; BatchNorm statistics are the
    /// trainer's.
    pub fn network_with(&self, theta: &[f32], threads: usize) -> Result<Network, NnError> {
        if theta.len() != self.model.theta.len() {
            return Err(NnError::Shape(format!("{} weights for a network of {}", theta.len(), self.model.theta.len())));
        }
        Ok(Network::from_model(self.config.clone(), self.model.to_burn_with(theta, &Device::flex()), threads))
    }

    /// Saves `theta` (laid out like [`Trainer::parameters`]) as this network's checkpoint.
    pub fn save_with(&self, theta: &[f32], path: &Path, mut sidecar: Sidecar) -> Result<(), NnError> {
        let network = self.network_with(theta, 1)?;
        sidecar.net = self.config.clone();
        sidecar.step = self.step;
        if sidecar.commands.is_empty() {
            sidecar.commands = self.commands.clone();
        }
        network.save(path, &sidecar)
    }

    /// The current weights as an inference network.
    pub fn network(&self, threads: usize) -> Network {
        Network::from_model(self.config.clone(), self.model.to_burn(&Device::flex()), threads)
    }

    /// Saves the current weights with `sidecar` (its `net` and `step` are set here, and its
    /// `commands`, where empty, from the checkpoint this trainer resumed).
    pub fn save(&self, path: &Path, mut sidecar: Sidecar) -> Result<(), NnError> {
        sidecar.net = self.config.clone();
        sidecar.step = self.step;
        if sidecar.commands.is_empty() {
            sidecar.commands = self.commands.clone();
        }
        save(&self.model.to_burn(&Device::flex()), &self.config, path, &sidecar)
    }

    /// [`Trainer::save`], and AdamW's state beside the weights ([`optimizer_path`]), so that
    /// [`Trainer::resume`] goes on exactly where this left off. Both carry the step: a pair cut
    /// apart by an interruption between the two writes is refused on resume, not mixed.
    pub fn save_resumable(&self, path: &Path, sidecar: Sidecar) -> Result<(), NnError> {
        let state = optimizer_path(path);
        let tmp = state.with_extension(format!("adamw.{}.tmp", std::process::id()));
        std::fs::write(&tmp, self.optim.to_bytes(self.step)).and_then(|()| std::fs::rename(&tmp, &state)).map_err(
            |e| {
                let _ = std::fs::remove_file(&tmp);
                checkpoint_error(path, format!("cannot write the optimiser state: {e}"))
            },
        )?;
        self.save(path, sidecar)
    }
}

/// A trainer continued from a checkpoint.
pub struct Resumed {
    pub trainer: Trainer,
    pub sidecar: Sidecar,
    /// Whether AdamW's moments were restored (false: the checkpoint had none beside it).
    pub restored: bool,
}

/// Where [`Trainer::save_resumable`] keeps the optimiser state of the checkpoint at `path`.
pub fn optimizer_path(path: &Path) -> PathBuf {
    path.with_extension("adamw")
}

#[cfg(test)]
mod tests {
    /// A recorded command reads back as the words it was given: quoted where a shell would
    /// split or expand them.
    #[test]
    fn recorded_words_survive_a_shell() {
        assert_eq!(super::shell_word("eval=(net:model=a.safetensors)"), "'eval=(net:model=a.safetensors)'");
        assert_eq!(super::shell_word("catan:players=3,board=random"), "catan:players=3,board=random");
        assert_eq!(super::shell_word("it's"), r"'it'\''s'");
        assert_eq!(super::shell_word(""), "''");
        assert_eq!(super::shell_word("a b"), "'a b'");
    }
}
