//! The policy-value network: a residual convolutional tower for board planes, or an MLP trunk
//! for flat observations, with a policy head (one logit per action id) and a value head (each
//! seat's expected return, mover first, in [0, 1]).

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, Linear, LinearConfig, PaddingConfig2d};
use burn::tensor::activation::{relu, sigmoid};
use burn::tensor::{Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::NnError;

/// The shape of a network, as a spec string gives it (`resnet:blocks=4,channels=32`,
/// `mlp:layers=2,width=256`) plus what the game decides (input shape, actions, seats).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetConfig {
    /// The trunk.
    pub trunk: Trunk,
    /// Observation shape: `[planes, rows, cols]` for the residual tower, anything for the MLP.
    pub input: Vec<usize>,
    /// Number of action ids (policy logits).
    pub actions: usize,
    /// Number of seats (value outputs).
    pub seats: usize,
}

/// The trunk of a network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Trunk {
    /// Residual tower: a 3x3 convolution to `channels`, then `blocks` residual blocks (two 3x3
    /// convolutions with BatchNorm and ReLU, and the skip).
    Resnet { blocks: usize, channels: usize },
    /// Fully connected: `layers` layers of `width` with ReLU.
    Mlp { layers: usize, width: usize },
}

/// Most residual blocks, channels, layers and width a spec may ask for: far beyond what a CPU
/// trains in hours, low enough that a typo does not try to allocate the machine.
const MAX_BLOCKS: usize = 40;
const MAX_CHANNELS: usize = 512;
const MAX_WIDTH: usize = 8192;

impl NetConfig {
    /// The default trunk for an observation shape: a residual tower of 4 blocks x 32 channels
    /// for board planes, a 2 x 256 MLP otherwise.
    pub fn default_for(input: &[usize], actions: usize, seats: usize) -> Self {
        let trunk = if input.len() == 3 {
            Trunk::Resnet { blocks: 4, channels: 32 }
        } else {
            Trunk::Mlp { layers: 2, width: 256 }
        };
        NetConfig { trunk, input: input.to_vec(), actions, seats }
    }

    /// Reads a trunk spec (`resnet:blocks=6,channels=64`, `mlp:layers=3,width=512`, or just
    /// `resnet` / `mlp` for the defaults) for this game's shapes.
    pub fn from_spec(spec: &str, input: &[usize], actions: usize, seats: usize) -> Result<Self, NnError> {
        let bad = |why: String| NnError::Spec(format!("net '{spec}': {why}"));
        let (name, rest) = spec.trim().split_once(':').unwrap_or((spec.trim(), ""));
        let mut options = Vec::new();
        for part in rest.split(',').filter(|p| !p.trim().is_empty()) {
            let (k, v) = part.split_once('=').ok_or_else(|| bad(format!("option '{part}' is not key=value")))?;
            let v: usize = v.trim().parse().map_err(|_| bad(format!("'{v}' for '{k}' is not a whole number")))?;
            options.push((k.trim().to_string(), v));
        }
        let get = |key: &str, default: usize, max: usize| -> Result<usize, NnError> {
            match options.iter().find(|(k, _)| k == key) {
                None => Ok(default),
                Some(&(_, v)) if (1..=max).contains(&v) => Ok(v),
                Some(&(_, v)) => Err(bad(format!("{key}={v} is outside 1..={max}"))),
            }
        };
        let known: &[&str] = match name {
            "resnet" => &["blocks", "channels"],
            "mlp" => &["layers", "width"],
            _ => return Err(bad("the trunk is resnet or mlp".into())),
        };
        if let Some((k, _)) = options.iter().find(|(k, _)| !known.contains(&k.as_str())) {
            return Err(bad(format!("unknown option '{k}'; {name} takes {}", known.join(" and "))));
        }
        let trunk = match name {
            "resnet" => {
                if input.len() != 3 {
                    return Err(bad(format!(
                        "a residual tower needs board planes [planes, rows, cols]; this game's observation is {input:?} \
                         (use mlp)"
                    )));
                }
                Trunk::Resnet { blocks: get("blocks", 4, MAX_BLOCKS)?, channels: get("channels", 32, MAX_CHANNELS)? }
            }
            _ => Trunk::Mlp { layers: get("layers", 2, MAX_BLOCKS)?, width: get("width", 256, MAX_WIDTH)? },
        };
        Ok(NetConfig { trunk, input: input.to_vec(), actions, seats })
    }

    /// The trunk as a spec string.
    pub fn spec(&self) -> String {
        match self.trunk {
            Trunk::Resnet { blocks, channels } => format!("resnet:blocks={blocks},channels={channels}"),
            Trunk::Mlp { layers, width } => format!("mlp:layers={layers},width={width}"),
        }
    }

    /// Values in one observation.
    pub fn input_len(&self) -> usize {
        self.input.iter().product()
    }

    /// Multiply-adds of one forward pass for one position (for GFLOP/s figures).
    pub fn macs(&self) -> u64 {
        let n = self.input_len() as u64;
        let (a, s) = (self.actions as u64, self.seats as u64);
        match self.trunk {
            Trunk::Resnet { blocks, channels } => {
                let (planes, cells) = (self.input[0] as u64, (self.input[1] * self.input[2]) as u64);
                let c = channels as u64;
                let tower = 9 * planes * c * cells + blocks as u64 * 2 * 9 * c * c * cells;
                let heads = cells * c * 3 + 2 * cells * a + cells * 64 + 64 * s;
                tower + heads
            }
            Trunk::Mlp { layers, width } => {
                let w = width as u64;
                n * w + (layers as u64 - 1) * w * w + w * a + w * 64 + 64 * s
            }
        }
    }

    pub(crate) fn build(&self, device: &Device) -> PolicyValueNet {
        match self.trunk {
            Trunk::Resnet { blocks, channels } => {
                let (planes, cells) = (self.input[0], self.input[1] * self.input[2]);
                PolicyValueNet {
                    stem: Some(ConvBn::new(planes, channels, 3, device)),
                    blocks: (0..blocks).map(|_| ResBlock::new(channels, device)).collect(),
                    mlp: Vec::new(),
                    policy_conv: Some(ConvBn::new(channels, 2, 1, device)),
                    value_conv: Some(ConvBn::new(channels, 1, 1, device)),
                    policy_fc: LinearConfig::new(2 * cells, self.actions).init(device),
                    value_fc: LinearConfig::new(cells, 64).init(device),
                    value_out: LinearConfig::new(64, self.seats).init(device),
                }
            }
            Trunk::Mlp { layers, width } => {
                let mut mlp = vec![LinearConfig::new(self.input_len(), width).init(device)];
                mlp.extend((1..layers).map(|_| LinearConfig::new(width, width).init(device)));
                PolicyValueNet {
                    stem: None,
                    blocks: Vec::new(),
                    mlp,
                    policy_conv: None,
                    value_conv: None,
                    policy_fc: LinearConfig::new(width, self.actions).init(device),
                    value_fc: LinearConfig::new(width, 64).init(device),
                    value_out: LinearConfig::new(64, self.seats).init(device),
                }
            }
        }
    }
}

/// A convolution (no bias: BatchNorm follows) with BatchNorm.
#[derive(Module, Debug)]
pub(crate) struct ConvBn {
    pub(crate) conv: Conv2d,
    pub(crate) norm: BatchNorm,
}

impl ConvBn {
    fn new(input: usize, output: usize, kernel: usize, device: &Device) -> Self {
        ConvBn {
            conv: Conv2dConfig::new([input, output], [kernel, kernel])
                .with_padding(PaddingConfig2d::Same)
                .with_bias(false)
                .init(device),
            norm: BatchNormConfig::new(output).init(device),
        }
    }

    fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        self.norm.forward(self.conv.forward(x))
    }
}

/// Two 3x3 convolutions with BatchNorm, ReLU between, the input added back before the last ReLU.
#[derive(Module, Debug)]
pub(crate) struct ResBlock {
    pub(crate) first: ConvBn,
    pub(crate) second: ConvBn,
}

impl ResBlock {
    fn new(channels: usize, device: &Device) -> Self {
        ResBlock {
            first: ConvBn::new(channels, channels, 3, device),
            second: ConvBn::new(channels, channels, 3, device),
        }
    }

    fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        let y = self.second.forward(relu(self.first.forward(x.clone())));
        relu(y + x)
    }
}

/// The network; convolutional parts are absent in an MLP and the MLP absent in a tower.
#[derive(Module, Debug)]
pub(crate) struct PolicyValueNet {
    pub(crate) stem: Option<ConvBn>,
    pub(crate) blocks: Vec<ResBlock>,
    pub(crate) mlp: Vec<Linear>,
    pub(crate) policy_conv: Option<ConvBn>,
    pub(crate) value_conv: Option<ConvBn>,
    pub(crate) policy_fc: Linear,
    pub(crate) value_fc: Linear,
    pub(crate) value_out: Linear,
}

impl PolicyValueNet {
    /// Logits `[batch, actions]` and values `[batch, seats]` (sigmoid, mover first) for a batch
    /// of observations: `[batch, planes, rows, cols]` for a tower, `[batch, n]` for an MLP.
    pub(crate) fn forward(&self, input: Tensor<2>, config: &NetConfig) -> (Tensor<2>, Tensor<2>) {
        let batch = input.dims()[0];
        let (policy, value) = match &self.stem {
            Some(stem) => {
                let [planes, rows, cols] = [config.input[0], config.input[1], config.input[2]];
                let mut x = relu(stem.forward(input.reshape([batch, planes, rows, cols])));
                for block in &self.blocks {
                    x = block.forward(x);
                }
                let p = relu(self.policy_conv.as_ref().expect("tower heads").forward(x.clone()));
                let v = relu(self.value_conv.as_ref().expect("tower heads").forward(x));
                (p.reshape([batch, 2 * rows * cols]), v.reshape([batch, rows * cols]))
            }
            None => {
                let mut x = input;
                for layer in &self.mlp {
                    x = relu(layer.forward(x));
                }
                (x.clone(), x)
            }
        };
        let logits = self.policy_fc.forward(policy);
        let values = sigmoid(self.value_out.forward(relu(self.value_fc.forward(value))));
        (logits, values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_are_read_and_checked() {
        let c = NetConfig::from_spec("resnet:blocks=2,channels=16", &[3, 6, 7], 7, 2).unwrap();
        assert_eq!(c.trunk, Trunk::Resnet { blocks: 2, channels: 16 });
        assert_eq!(c.spec(), "resnet:blocks=2,channels=16");
        assert_eq!(NetConfig::from_spec("mlp", &[100], 10, 3).unwrap().trunk, Trunk::Mlp { layers: 2, width: 256 });
        for (bad, why) in [
            ("resnet:blocks=0", "outside 1..=40"),
            ("resnet:channels=100000", "outside 1..=512"),
            ("resnet:width=3", "unknown option 'width'"),
            ("transformer", "resnet or mlp"),
            ("resnet:blocks=x", "not a whole number"),
        ] {
            let err = NetConfig::from_spec(bad, &[3, 6, 7], 7, 2).unwrap_err().to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
        let err = NetConfig::from_spec("resnet", &[100], 10, 2).unwrap_err().to_string();
        assert!(err.contains("use mlp"), "{err}");
    }
}
