//! AdamW over the flat vector of every parameter, and its state on disk.

/// AdamW's state: the moments of every parameter and the step count.
pub(crate) struct AdamW {
    pub(super) m: Vec<f32>,
    pub(super) v: Vec<f32>,
    pub(super) t: i32,
}

/// AdamW's constants, burn's defaults.
pub(super) const BETA1: f32 = 0.9;
pub(super) const BETA2: f32 = 0.999;
pub(super) const EPSILON: f32 = 1e-5;

/// The first bytes of a saved optimiser state.
pub(super) const ADAMW_MAGIC: &[u8; 12] = b"meeple-adamw";

impl AdamW {
    pub(crate) fn new(len: usize) -> Self {
        AdamW { m: vec![0.0; len], v: vec![0.0; len], t: 0 }
    }

    /// The state as bytes: a magic, the trainer's `step` (checked against the weights' on
    /// resume), AdamW's step count and length, then both moments, little-endian.
    pub(crate) fn to_bytes(&self, step: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(32 + 8 * self.m.len());
        out.extend_from_slice(ADAMW_MAGIC);
        out.extend_from_slice(&step.to_le_bytes());
        out.extend_from_slice(&(self.t as u32).to_le_bytes());
        out.extend_from_slice(&(self.m.len() as u64).to_le_bytes());
        for x in self.m.iter().chain(&self.v) {
            out.extend_from_slice(&x.to_le_bytes());
        }
        out
    }

    /// Reads [`AdamW::to_bytes`] for `len` parameters and the trainer's `step`; why not where
    /// it does not fit.
    pub(crate) fn from_bytes(bytes: &[u8], len: usize, step: u64) -> Result<Self, String> {
        let header = 12 + 8 + 4 + 8;
        if bytes.len() < header || &bytes[..12] != ADAMW_MAGIC {
            return Err("not a meeple optimiser state".into());
        }
        let saved_step = u64::from_le_bytes(bytes[12..20].try_into().expect("8 bytes"));
        if saved_step != step {
            return Err(format!("an optimiser state from step {saved_step}, beside weights from step {step}"));
        }
        let t = u32::from_le_bytes(bytes[20..24].try_into().expect("4 bytes"));
        let stored = u64::from_le_bytes(bytes[24..32].try_into().expect("8 bytes"));
        if stored != len as u64 || bytes.len() != header + 8 * len {
            return Err(format!("an optimiser state for {stored} parameters, not this network's {len}"));
        }
        let floats: Vec<f32> =
            bytes[header..].chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes"))).collect();
        if floats.iter().any(|x| !x.is_finite()) || t > i32::MAX as u32 {
            return Err("an optimiser state with values that are not finite".into());
        }
        let (m, v) = floats.split_at(len);
        Ok(AdamW { m: m.to_vec(), v: v.to_vec(), t: t as i32 })
    }

    /// One step: the gradient scaled down to norm `clip` if above it (each parameter tensor's
    /// own, or with `global` all of them as one vector), the moments updated, decoupled weight
    /// decay, the bias-corrected update.
    pub(crate) fn step(
        &mut self,
        theta: &mut [f32],
        grad: &mut [f32],
        tensors: &[usize],
        lr: f32,
        decay: f32,
        (clip, global): (f32, bool),
    ) {
        let scale = |g: &mut [f32]| {
            let norm = g.iter().map(|v| (*v as f64) * (*v as f64)).sum::<f64>().sqrt() as f32;
            let coef = (clip / (norm + f32::MIN_POSITIVE)).min(1.0);
            if coef < 1.0 {
                g.iter_mut().for_each(|v| *v *= coef);
            }
        };
        if global {
            scale(grad);
        } else {
            let mut at = 0;
            for &len in tensors {
                scale(&mut grad[at..at + len]);
                at += len;
            }
        }
        self.t += 1;
        let (c1, c2) = (1.0 - BETA1.powi(self.t), 1.0 - BETA2.powi(self.t));
        let shrink = 1.0 - lr * decay;
        for (((p, g), m), v) in theta.iter_mut().zip(grad.iter()).zip(self.m.iter_mut()).zip(self.v.iter_mut()) {
            *m = BETA1 * *m + (1.0 - BETA1) * g;
            *v = BETA2 * *v + (1.0 - BETA2) * g * g;
            let update = (*m / c1) / ((*v / c2).sqrt() + EPSILON);
            *p = *p * shrink - lr * update;
        }
    }
}
