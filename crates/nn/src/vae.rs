//! A variational autoencoder over game observations (Defradas et al.'s representation learner,
//! Kingma and Welling 2014): an encoder `obs -> hidden (ReLU) -> (mean, log-variance)` of a
//! `latent`-sized Gaussian, a decoder `latent -> hidden (ReLU) -> obs` whose outputs are the
//! logits of each input being on (observations are 0/1 planes, or values in 0..1), trained on the
//! evidence lower bound: the inputs' binary cross-entropy plus the KL divergence of the
//! posterior from a standard normal. Its encoder's mean is a compact representation that the
//! model-free learners can read instead of the raw observation.
//!
//! Trained with the same dense kernels and AdamW as the policy-value networks (hand-written
//! gradients, checked here against finite differences); saved as safetensors with a JSON
//! sidecar like every meeple checkpoint.

use crate::gemm::mat;
use crate::grad::{AdamW, column_sums, product, product_tn, relu_mask, tensor1, values};
use crate::{NnError, sidecar_path};
use burn::module::{Module, Param};
use burn::nn::{Linear, LinearConfig};
use burn::store::{ModuleSnapshot, SafetensorsStore};
use burn::tensor::{Device, Tensor, TensorData};
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The autoencoder's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VaeConfig {
    /// Observation length.
    pub input: usize,
    /// Width of the encoder's and the decoder's hidden layer.
    pub hidden: usize,
    /// Size of the latent code (Defradas et al.: 32).
    pub latent: usize,
}

impl VaeConfig {
    /// Checks the sizes (each 1..=8192, the input up to 1 << 20).
    pub fn check(&self) -> Result<(), NnError> {
        if !(1..=1 << 20).contains(&self.input)
            || !(1..=8192).contains(&self.hidden)
            || !(1..=8192).contains(&self.latent)
        {
            return Err(NnError::Spec(format!(
                "VAE of input {}, hidden {}, latent {}: hidden and latent must be 1..=8192",
                self.input, self.hidden, self.latent
            )));
        }
        Ok(())
    }
}

/// What a VAE checkpoint's sidecar says.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VaeSidecar {
    pub format: u32,
    /// Marks the file as an autoencoder (not a policy-value network).
    pub kind: String,
    pub vae: VaeConfig,
    /// The canonical spec of the game whose observations it encodes.
    pub game: String,
    pub step: u64,
    /// The run that made it, free-form.
    #[serde(default)]
    pub run: serde_json::Value,
    /// The command lines that made it (see [`crate::Sidecar::commands`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
}

const KIND: &str = "vae";

/// The layers as burn stores them (in this order in the flat weights).
#[derive(Module, Debug)]
struct VaeNet {
    enc: Linear,
    mean: Linear,
    logvar: Linear,
    dec: Linear,
    out: Linear,
}

/// One dense layer's place in the flat weights: `[inputs, outputs]` weights, then the bias.
#[derive(Clone, Copy, Debug)]
struct Layer {
    at: usize,
    inputs: usize,
    outputs: usize,
}

impl Layer {
    fn weights(self) -> std::ops::Range<usize> {
        self.at..self.at + self.inputs * self.outputs
    }

    fn bias(self) -> std::ops::Range<usize> {
        let w = self.at + self.inputs * self.outputs;
        w..w + self.outputs
    }

    fn len(self) -> usize {
        (self.inputs + 1) * self.outputs
    }
}

const ENC: usize = 0;
const MEAN: usize = 1;
const LOGVAR: usize = 2;
const DEC: usize = 3;
const OUT: usize = 4;

/// The losses of one batch, per sample.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VaeLosses {
    /// Summed binary cross-entropy of the inputs.
    pub reconstruction: f64,
    /// KL divergence of the posterior from the prior.
    pub kl: f64,
}

/// How well the decoder gives back its inputs from the encoder's mean.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Reconstruction {
    /// Inputs whose rounded reconstruction equals the rounded input.
    pub accuracy: f64,
    /// The same among the inputs that are on (most planes are mostly off).
    pub on_accuracy: f64,
}

/// Buffers of one pass.
#[derive(Default)]
struct Pass {
    h: Vec<f32>,
    mean: Vec<f32>,
    logvar: Vec<f32>,
    eps: Vec<f32>,
    z: Vec<f32>,
    g: Vec<f32>,
    logits: Vec<f32>,
}

/// A variational autoencoder with its optimiser.
pub struct Vae {
    config: VaeConfig,
    theta: Vec<f32>,
    layers: [Layer; 5],
    adam: AdamW,
    /// The encoder's own optimiser when a learner fine-tunes it (its two layers lead the
    /// weights).
    encoder_adam: Option<AdamW>,
    step: u64,
    rng: rand::rngs::Xoshiro256PlusPlus,
    pass: Pass,
    grad: Vec<f32>,
}

fn layout(c: &VaeConfig) -> [Layer; 5] {
    let shapes =
        [(c.input, c.hidden), (c.hidden, c.latent), (c.hidden, c.latent), (c.latent, c.hidden), (c.hidden, c.input)];
    let mut at = 0;
    shapes.map(|(inputs, outputs)| {
        let l = Layer { at, inputs, outputs };
        at += l.len();
        l
    })
}

impl Vae {
    /// A fresh autoencoder: weights uniform in ±1/sqrt(inputs) (PyTorch's default), biases 0;
    /// the same seed gives the same weights and the same noise.
    pub fn new(config: VaeConfig, seed: u64) -> Result<Self, NnError> {
        config.check()?;
        let layers = layout(&config);
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut theta = vec![0.0f32; layers.iter().map(|l| l.len()).sum()];
        for l in layers {
            let bound = 1.0 / (l.inputs as f32).sqrt();
            for w in &mut theta[l.weights()] {
                *w = rng.random_range(-bound..bound);
            }
        }
        Ok(Self::from_parts(config, theta, 0, rng))
    }

    fn from_parts(config: VaeConfig, theta: Vec<f32>, step: u64, rng: rand::rngs::Xoshiro256PlusPlus) -> Self {
        let layers = layout(&config);
        Vae {
            adam: AdamW::new(theta.len()),
            encoder_adam: None,
            grad: vec![0.0; theta.len()],
            config,
            theta,
            layers,
            step,
            rng,
            pass: Pass::default(),
        }
    }

    pub fn config(&self) -> &VaeConfig {
        &self.config
    }

    /// Optimiser steps taken.
    pub fn step(&self) -> u64 {
        self.step
    }

    /// `out = input . W + b` for `rows` rows, through a ReLU where `relu`.
    fn dense(&self, l: Layer, input: &[f32], rows: usize, relu: bool, out: &mut Vec<f32>) {
        out.clear();
        out.resize(rows * l.outputs, 0.0);
        product(input, rows, l.inputs, mat(&self.theta[l.weights()], l.inputs, l.outputs), out);
        let bias = &self.theta[l.bias()];
        for row in out.chunks_exact_mut(l.outputs) {
            for (o, b) in row.iter_mut().zip(bias) {
                *o += b;
                if relu {
                    *o = o.max(0.0);
                }
            }
        }
    }

    /// The encoder's mean for `rows` observations into `out` (`rows * latent`): the
    /// representation the learners read.
    pub fn encode(&self, obs: &[f32], rows: usize, out: &mut Vec<f32>) {
        let mut h = Vec::new();
        self.dense(self.layers[ENC], &obs[..rows * self.config.input], rows, true, &mut h);
        self.dense(self.layers[MEAN], &h, rows, false, out);
    }

    /// Fine-tuning: one AdamW step of the encoder's two layers (hidden and mean) on a learner's
    /// gradient `dmean` at the means of `rows` observations (AdamW at `lr`, gradients clipped to
    /// norm 1 per tensor). The decoder and the variance layer stay as they are.
    pub fn encoder_step(&mut self, obs: &[f32], rows: usize, dmean: &[f32], lr: f32) {
        let (enc, mean) = (self.layers[ENC], self.layers[MEAN]);
        let prefix = enc.len() + mean.len();
        let mut h = Vec::new();
        self.dense(enc, &obs[..rows * self.config.input], rows, true, &mut h);
        let mut grad = std::mem::take(&mut self.grad);
        grad[..prefix].fill(0.0);
        let mut dh = Vec::new();
        self.backward(mean, &h, rows, &dmean[..rows * self.config.latent], &mut grad, Some(&mut dh));
        relu_mask(&mut dh, &h);
        self.backward(enc, obs, rows, &dh, &mut grad, None);
        let adam = self.encoder_adam.get_or_insert_with(|| AdamW::new(prefix));
        let tensors = [enc.inputs * enc.outputs, enc.outputs, mean.inputs * mean.outputs, mean.outputs];
        adam.step(&mut self.theta[..prefix], &mut grad[..prefix], &tensors, lr, 0.0, (1.0, false));
        self.grad = grad;
    }

    /// The decoder's logits for latent codes.
    fn decode(&self, z: &[f32], rows: usize, g: &mut Vec<f32>, logits: &mut Vec<f32>) {
        self.dense(self.layers[DEC], z, rows, true, g);
        self.dense(self.layers[OUT], g, rows, false, logits);
    }

    /// The loss of a batch and its gradient in `self.grad` (mean over the samples), with the
    /// latent noise `pass.eps` already drawn.
    fn loss_and_gradient(&mut self, obs: &[f32], rows: usize) -> VaeLosses {
        let (n, z_len) = (self.config.input, self.config.latent);
        let mut p = std::mem::take(&mut self.pass);
        self.dense(self.layers[ENC], obs, rows, true, &mut p.h);
        self.dense(self.layers[MEAN], &p.h, rows, false, &mut p.mean);
        self.dense(self.layers[LOGVAR], &p.h, rows, false, &mut p.logvar);
        // Bounded so exp never overflows on a bad step.
        p.logvar.iter_mut().for_each(|v| *v = v.clamp(-20.0, 20.0));
        p.z.clear();
        p.z.extend(p.mean.iter().zip(&p.logvar).zip(&p.eps).map(|((m, lv), e)| m + (0.5 * lv).exp() * e));
        self.decode(&p.z, rows, &mut p.g, &mut p.logits);
        let scale = 1.0 / rows as f32;
        let mut losses = VaeLosses::default();
        // d loss / d logits = sigmoid(logit) - x; the loss is softplus(l) - x l.
        let mut dlogits = std::mem::take(&mut p.logits);
        for (l, &x) in dlogits.iter_mut().zip(&obs[..rows * n]) {
            let softplus = if *l > 0.0 { *l + (-*l).exp().ln_1p() } else { l.exp().ln_1p() };
            losses.reconstruction += (softplus - x * *l) as f64;
            *l = (1.0 / (1.0 + (-*l).exp()) - x) * scale;
        }
        for (m, lv) in p.mean.iter().zip(&p.logvar) {
            losses.kl += (0.5 * (m * m + lv.exp() - 1.0 - lv)) as f64;
        }
        losses.reconstruction /= rows as f64;
        losses.kl /= rows as f64;
        let mut grad = std::mem::take(&mut self.grad);
        grad.fill(0.0);
        let mut dg = Vec::new();
        self.backward(self.layers[OUT], &p.g, rows, &dlogits, &mut grad, Some(&mut dg));
        relu_mask(&mut dg, &p.g);
        let mut dz = Vec::new();
        self.backward(self.layers[DEC], &p.z, rows, &dg, &mut grad, Some(&mut dz));
        // z = mean + exp(lv / 2) eps, and the KL term: d/dmean = mean, d/dlv = (exp(lv) - 1) / 2.
        let mut dmean = vec![0.0f32; rows * z_len];
        let mut dlogvar = vec![0.0f32; rows * z_len];
        for i in 0..rows * z_len {
            let (m, lv, e) = (p.mean[i], p.logvar[i], p.eps[i]);
            dmean[i] = dz[i] + m * scale;
            dlogvar[i] = dz[i] * 0.5 * (0.5 * lv).exp() * e + 0.5 * (lv.exp() - 1.0) * scale;
        }
        let (mut dh, mut dh2) = (Vec::new(), Vec::new());
        self.backward(self.layers[MEAN], &p.h, rows, &dmean, &mut grad, Some(&mut dh));
        self.backward(self.layers[LOGVAR], &p.h, rows, &dlogvar, &mut grad, Some(&mut dh2));
        for (a, b) in dh.iter_mut().zip(&dh2) {
            *a += b;
        }
        relu_mask(&mut dh, &p.h);
        self.backward(self.layers[ENC], obs, rows, &dh, &mut grad, None);
        p.logits = dlogits;
        self.pass = p;
        self.grad = grad;
        losses
    }

    /// The layer's parameter gradients from `dout` (at its output, before any activation),
    /// added into `grad`; its input's gradient into `dinput` where asked.
    fn backward(
        &self,
        l: Layer,
        input: &[f32],
        rows: usize,
        dout: &[f32],
        grad: &mut [f32],
        dinput: Option<&mut Vec<f32>>,
    ) {
        column_sums(dout, l.outputs, &mut grad[l.bias()]);
        product_tn(input, dout, rows, l.inputs, l.outputs, &mut grad[l.weights()]);
        if let Some(d) = dinput {
            d.clear();
            d.resize(rows * l.inputs, 0.0);
            let wt = mat(&self.theta[l.weights()], l.inputs, l.outputs).transpose();
            product(dout, rows, l.outputs, wt, d);
        }
    }

    /// One AdamW step on a batch of `rows` observations at learning rate `lr` (gradients
    /// clipped to norm 1 per tensor); gives the batch's losses.
    pub fn train_step(&mut self, obs: &[f32], rows: usize, lr: f32) -> Result<VaeLosses, NnError> {
        if rows == 0 || obs.len() < rows * self.config.input {
            return Err(NnError::Shape(format!(
                "{} numbers for {rows} observations of {}",
                obs.len(),
                self.config.input
            )));
        }
        let rng = &mut self.rng;
        self.pass.eps.clear();
        self.pass.eps.extend((0..rows * self.config.latent).map(|_| -> f32 { StandardNormal.sample(rng) }));
        let losses = self.loss_and_gradient(obs, rows);
        let tensors: Vec<usize> = self.layers.iter().flat_map(|l| [l.inputs * l.outputs, l.outputs]).collect();
        self.adam.step(&mut self.theta, &mut self.grad, &tensors, lr, 0.0, (1.0, false));
        self.step += 1;
        Ok(losses)
    }

    /// The reconstruction from the encoder's mean, its entries rounded, against the inputs
    /// rounded (at 0.5).
    pub fn reconstruction(&self, obs: &[f32], rows: usize) -> Reconstruction {
        let n = self.config.input;
        let (mut mean, mut g, mut logits) = (Vec::new(), Vec::new(), Vec::new());
        let (mut right, mut on, mut on_right) = (0u64, 0u64, 0u64);
        for start in (0..rows).step_by(256) {
            let r = (rows - start).min(256);
            let x = &obs[start * n..(start + r) * n];
            self.encode(x, r, &mut mean);
            self.decode(&mean, r, &mut g, &mut logits);
            for (&l, &x) in logits.iter().zip(x) {
                let (guess, truth) = (l > 0.0, x > 0.5);
                right += u64::from(guess == truth);
                on += u64::from(truth);
                on_right += u64::from(truth && guess);
            }
        }
        let total = (rows * n).max(1) as f64;
        Reconstruction { accuracy: right as f64 / total, on_accuracy: on_right as f64 / on.max(1) as f64 }
    }

    /// The weights as burn layers.
    fn to_burn(&self, device: &Device) -> VaeNet {
        let linear = |l: Layer| {
            let mut layer = LinearConfig::new(l.inputs, l.outputs).init(device);
            layer.weight = Param::from_tensor(Tensor::from_data(
                TensorData::new(self.theta[l.weights()].to_vec(), [l.inputs, l.outputs]),
                device,
            ));
            layer.bias = Some(Param::from_tensor(tensor1(&self.theta[l.bias()], device)));
            layer
        };
        let [enc, mean, logvar, dec, out] = self.layers.map(linear);
        VaeNet { enc, mean, logvar, dec, out }
    }

    /// Saves the weights (safetensors) and the sidecar beside them, each written whole.
    pub fn save(&self, path: &Path, game: &str, run: serde_json::Value) -> Result<(), NnError> {
        let mut sidecar = VaeSidecar {
            format: crate::SIDECAR_FORMAT,
            kind: KIND.into(),
            vae: self.config,
            game: game.into(),
            step: self.step,
            run,
            commands: Vec::new(),
        };
        crate::with_command(&mut sidecar.commands);
        let model = self.to_burn(&Device::flex());
        crate::write_checkpoint(path, &serde_json::to_string_pretty(&sidecar).expect("sidecars serialise"), |store| {
            model.save_into(store).map_err(|e| e.to_string())
        })
    }

    /// Loads an autoencoder saved by [`Vae::save`]; `game`, if given, must be the one it encodes.
    pub fn load(path: &Path, game: Option<&str>) -> Result<(Self, VaeSidecar), NnError> {
        let bad = |why: String| NnError::Checkpoint { path: path.display().to_string(), reason: why };
        let text = std::fs::read_to_string(sidecar_path(path))
            .map_err(|e| bad(format!("cannot read its sidecar {}: {e}", sidecar_path(path).display())))?;
        let sidecar: VaeSidecar =
            serde_json::from_str(&text).map_err(|e| bad(format!("its sidecar is not an autoencoder's: {e}")))?;
        if sidecar.kind != KIND || sidecar.format != crate::SIDECAR_FORMAT {
            return Err(bad(format!(
                "a '{}' checkpoint of format {}, not an autoencoder",
                sidecar.kind, sidecar.format
            )));
        }
        sidecar.vae.check()?;
        if let Some(g) = game
            && g != sidecar.game
        {
            return Err(bad(format!("an autoencoder for {}, not {g}", sidecar.game)));
        }
        let device = Device::flex();
        let blank = Vae::from_parts(
            sidecar.vae,
            vec![0.0; layout(&sidecar.vae).iter().map(|l| l.len()).sum()],
            0,
            rand::rngs::Xoshiro256PlusPlus::seed_from_u64(0),
        );
        let mut model = blank.to_burn(&device);
        let mut store = SafetensorsStore::from_file(path);
        let applied = model
            .load_from(&mut store)
            .map_err(|e| bad(format!("unreadable weights ({})", e.to_string().lines().next().unwrap_or_default())))?;
        if !applied.errors.is_empty() || !applied.missing.is_empty() || !applied.unused.is_empty() {
            return Err(bad("the weights do not fit the autoencoder in the sidecar".into()));
        }
        let mut theta = Vec::with_capacity(blank.theta.len());
        for l in [&model.enc, &model.mean, &model.logvar, &model.dec, &model.out] {
            theta.extend(values(l.weight.val()));
            theta.extend(values(l.bias.as_ref().expect("layers with biases").val()));
        }
        if theta.len() != blank.theta.len() || theta.iter().any(|x| !x.is_finite()) {
            return Err(bad("the weights do not fit the autoencoder in the sidecar".into()));
        }
        let step = sidecar.step;
        Ok((Vae::from_parts(sidecar.vae, theta, step, rand::rngs::Xoshiro256PlusPlus::seed_from_u64(step)), sidecar))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(rows: usize, n: usize, seed: u64) -> Vec<f32> {
        // Inputs built from two hidden bits: a structure a small code can hold.
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut out = Vec::with_capacity(rows * n);
        for _ in 0..rows {
            let (a, b) = (rng.random_bool(0.5), rng.random_bool(0.5));
            for i in 0..n {
                let on = if i % 3 == 0 {
                    a
                } else if i % 3 == 1 {
                    b
                } else {
                    a != b
                };
                out.push(f32::from(u8::from(on)));
            }
        }
        out
    }

    /// The hand-written gradient equals finite differences of the loss at the same noise.
    #[test]
    fn gradients_match_finite_differences() {
        let mut vae = Vae::new(VaeConfig { input: 7, hidden: 5, latent: 3 }, 2).unwrap();
        let obs = data(4, 7, 1);
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(5);
        vae.pass.eps = (0..4 * 3).map(|_| -> f32 { StandardNormal.sample(&mut rng) }).collect();
        let eps = vae.pass.eps.clone();
        vae.loss_and_gradient(&obs, 4);
        let grad = vae.grad.clone();
        let total = |vae: &mut Vae| {
            vae.pass.eps = eps.clone();
            let l = vae.loss_and_gradient(&obs, 4);
            l.reconstruction + l.kl
        };
        let base = total(&mut vae);
        let (mut worst, mut kinks) = (0.0f64, 0);
        for (k, analytic) in grad.iter().enumerate() {
            let keep = vae.theta[k];
            let h = 1e-3;
            vae.theta[k] = keep + h;
            let up = total(&mut vae);
            vae.theta[k] = keep - h;
            let down = total(&mut vae);
            vae.theta[k] = keep;
            let (forward, backward) = ((up - base) / h as f64, (base - down) / h as f64);
            // A step that moves a hidden unit across its ReLU's kink gives one-sided slopes that
            // disagree: no derivative to compare there.
            if (forward - backward).abs() > 0.1 * (forward.abs() + backward.abs()) + 2e-3 {
                kinks += 1;
                continue;
            }
            let numeric = (forward + backward) / 2.0;
            worst = worst.max((numeric - *analytic as f64).abs() / (1.0 + numeric.abs()));
        }
        assert!(kinks * 10 < vae.theta.len(), "{kinks} of {} parameters at a kink", vae.theta.len());
        assert!(worst < 5e-3, "worst relative difference {worst}");
    }

    /// A learner's gradient at the means moves the encoder: minimising the means' squared size
    /// shrinks them; the decoder does not move.
    #[test]
    fn the_encoder_learns_from_a_gradient_at_its_means() {
        let mut vae = Vae::new(VaeConfig { input: 12, hidden: 16, latent: 4 }, 6).unwrap();
        let obs = data(32, 12, 2);
        let size = |vae: &Vae| {
            let mut m = Vec::new();
            vae.encode(&obs, 32, &mut m);
            m.iter().map(|x| (x * x) as f64).sum::<f64>()
        };
        let (start, decoder) = (size(&vae), vae.theta[vae.layers[DEC].at..].to_vec());
        for _ in 0..50 {
            let mut m = Vec::new();
            vae.encode(&obs, 32, &mut m);
            let d: Vec<f32> = m.iter().map(|x| 2.0 * x / 32.0).collect();
            vae.encoder_step(&obs, 32, &d, 1e-2);
        }
        assert!(size(&vae) < 0.1 * start, "{start} -> {}", size(&vae));
        assert_eq!(vae.theta[vae.layers[DEC].at..], decoder[..]);
    }

    /// On inputs made of two hidden bits, a 2-number code learns to give them back; saved and
    /// loaded, it encodes the same.
    #[test]
    fn learns_a_structured_input_and_round_trips() {
        let mut vae = Vae::new(VaeConfig { input: 24, hidden: 32, latent: 2 }, 3).unwrap();
        let train = data(512, 24, 4);
        let before = vae.reconstruction(&train, 512);
        for _ in 0..60 {
            for chunk in train.chunks(64 * 24) {
                vae.train_step(chunk, chunk.len() / 24, 3e-3).unwrap();
            }
        }
        let held_out = data(256, 24, 9);
        let after = vae.reconstruction(&held_out, 256);
        assert!(after.accuracy > 0.99 && after.accuracy > before.accuracy, "{before:?} -> {after:?}");
        let dir = std::env::temp_dir().join(format!("meeple-vae-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("vae.safetensors");
        vae.save(&path, "tictactoe", serde_json::json!({"test": true})).unwrap();
        let (back, sidecar) = Vae::load(&path, Some("tictactoe")).unwrap();
        assert_eq!((sidecar.vae, sidecar.step), (*vae.config(), vae.step()));
        let (mut a, mut b) = (Vec::new(), Vec::new());
        vae.encode(&held_out, 256, &mut a);
        back.encode(&held_out, 256, &mut b);
        assert_eq!(a, b);
        let err = Vae::load(&path, Some("connect4")).err().unwrap().to_string();
        assert!(err.contains("not connect4"), "{err}");
        std::fs::write(&path, b"not weights").unwrap();
        assert!(Vae::load(&path, None).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
