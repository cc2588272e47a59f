//! The policy-value network: a residual convolutional tower for board planes, or an MLP trunk
//! for flat observations, with a policy head (one logit per action id: dense, or read off
//! convolution planes where actions are placements on the board) and a value head (each seat's
//! expected return, mover first, in [0, 1]).

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, Linear, LinearConfig, PaddingConfig2d};
use burn::tensor::activation::{relu, sigmoid};
use burn::tensor::{Device, Int, Tensor, TensorData};
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
    /// The policy head (dense where the sidecar predates the choice).
    #[serde(default)]
    pub head: Head,
    /// An ownership head (a tower only): a 1x1 convolution from the tower to one plane, tanh,
    /// trained to say who holds each cell at the end of the game (KataGo's auxiliary target:
    /// a hundred targets a position where the value has one). Training reads it; play does
    /// not compute it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ownership: bool,
    /// A score-margin head (any trunk): one more output off the value head's hidden layer, tanh,
    /// trained toward the game's final score margin from the mover's view (KataGo's auxiliary
    /// score target: by how much a game was won, where the value learns only who won). Training
    /// reads it; play does not compute it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub score: bool,
    /// Planes of the dense policy head's 1x1 convolution (a tower; AlphaGo Zero's 2).
    #[serde(default = "policy_filters_default", skip_serializing_if = "is_policy_filters_default")]
    pub policy_filters: usize,
    /// Planes of the value head's 1x1 convolution (a tower; AlphaGo Zero's 1), all read by its
    /// hidden layer: on a small board one plane is few numbers to judge a position by.
    #[serde(default = "value_filters_default", skip_serializing_if = "is_value_filters_default")]
    pub value_filters: usize,
}

fn policy_filters_default() -> usize {
    2
}

fn is_policy_filters_default(n: &usize) -> bool {
    *n == policy_filters_default()
}

fn value_filters_default() -> usize {
    1
}

fn is_value_filters_default(n: &usize) -> bool {
    *n == value_filters_default()
}

/// The policy head of a network.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Head {
    /// A 1x1 convolution to 2 planes (a tower), then a dense layer with one logit per action id:
    /// AlphaGo Zero's head.
    #[default]
    Dense,
    /// For actions that are placements on the board (a tower only): a 1x1 convolution block,
    /// then a 3x3 convolution to `planes` planes; action `a`'s logit is cell `index[a]` of them
    /// (`plane * rows * cols + row * cols + col`). A few thousand weights where the dense head
    /// has one row per action, and the same pattern scores the same placement anywhere.
    Planes {
        planes: usize,
        #[serde(with = "compact")]
        index: Vec<u32>,
    },
}

/// The plane index as one line of numbers, so the sidecar stays readable.
mod compact {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<S: Serializer>(index: &[u32], s: S) -> Result<S::Ok, S::Error> {
        let text: Vec<String> = index.iter().map(u32::to_string).collect();
        s.serialize_str(&text.join(" "))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u32>, D::Error> {
        let text = String::deserialize(d)?;
        text.split_whitespace()
            .map(|n| n.parse().map_err(|_| D::Error::custom(format!("'{n}' in the plane index is not a cell number"))))
            .collect()
    }
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
    /// A residual MLP (the Catan self-play study's Catan network): one layer to `width` with ReLU, then
    /// `blocks` blocks of two `width` x `width` layers (ReLU between) whose input is added back
    /// before the last ReLU.
    Resmlp { blocks: usize, width: usize },
}

/// Most residual blocks, channels, layers and width a spec may ask for: far beyond what a CPU
/// trains in hours, low enough that a typo does not try to allocate the machine.
const MAX_BLOCKS: usize = 40;
const MAX_CHANNELS: usize = 512;
const MAX_WIDTH: usize = 8192;
const MAX_PLANES: usize = 4096;

impl NetConfig {
    /// The default network for an observation shape: a residual tower of 4 blocks x 32
    /// channels for board planes, a 2 x 256 MLP otherwise (both with the dense head).
    pub fn default_for(
        input: &[usize],
        actions: usize,
        seats: usize,
        planes: Option<(usize, &[u32])>,
    ) -> Result<Self, NnError> {
        Self::from_spec(if input.len() == 3 { "resnet" } else { "mlp" }, input, actions, seats, planes)
    }

    /// Reads a network spec (`resnet:blocks=6,channels=64`, `mlp:layers=3,width=512`, or just
    /// `resnet` / `mlp` for the defaults; a tower takes `head=dense|planes`) for this game's
    /// shapes. `planes` is where the game's actions sit on its board (`(planes, index)`, see
    /// [`Head::Planes`]), if they do; `head=planes` needs it. The dense head is the default
    /// everywhere: on Cathedral, 40 minutes of self-play gave the plane head no edge.
    pub fn from_spec(
        spec: &str,
        input: &[usize],
        actions: usize,
        seats: usize,
        planes: Option<(usize, &[u32])>,
    ) -> Result<Self, NnError> {
        let bad = |why: String| NnError::Spec(format!("net '{spec}': {why}"));
        let (name, rest) = spec.trim().split_once(':').unwrap_or((spec.trim(), ""));
        let mut options = Vec::new();
        let mut head = None;
        let mut ownership = false;
        let mut score = false;
        for part in rest.split(',').filter(|p| !p.trim().is_empty()) {
            let (k, v) = part.split_once('=').ok_or_else(|| bad(format!("option '{part}' is not key=value")))?;
            if k.trim() == "head" {
                head = match v.trim() {
                    "dense" => Some(false),
                    "planes" => Some(true),
                    other => return Err(bad(format!("head '{other}': the head is dense or planes"))),
                };
                continue;
            }
            if k.trim() == "ownership" || k.trim() == "score" {
                let on = match v.trim() {
                    "true" => true,
                    "false" => false,
                    other => return Err(bad(format!("{} '{other}': give true or false", k.trim()))),
                };
                *(if k.trim() == "score" { &mut score } else { &mut ownership }) = on;
                continue;
            }
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
            "resnet" => &["blocks", "channels", "head", "ownership", "score", "policy_filters", "value_filters"],
            "mlp" => &["layers", "width", "head", "ownership", "score"],
            "resmlp" => &["blocks", "width", "head", "ownership", "score"],
            _ => return Err(bad("the trunk is resnet, mlp or resmlp".into())),
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
            "resmlp" => Trunk::Resmlp { blocks: get("blocks", 4, MAX_BLOCKS)?, width: get("width", 256, MAX_WIDTH)? },
            _ => Trunk::Mlp { layers: get("layers", 2, MAX_BLOCKS)?, width: get("width", 256, MAX_WIDTH)? },
        };
        let head = match (head, planes) {
            (Some(true), _) if name != "resnet" => return Err(bad("head=planes needs the residual tower".into())),
            (Some(true), None) => {
                return Err(bad(
                    "head=planes needs a game whose actions are placements on its board (use head=dense)".into()
                ));
            }
            (Some(false) | None, _) => Head::Dense,
            (Some(true), Some((n, index))) => {
                let cells = n * input[1] * input[2];
                if !(1..=MAX_PLANES).contains(&n) {
                    return Err(bad(format!("{n} action planes is outside 1..={MAX_PLANES}")));
                }
                if index.len() != actions {
                    return Err(bad(format!("the plane index places {} actions, the game has {actions}", index.len())));
                }
                let mut seen = vec![false; cells];
                for (a, &i) in index.iter().enumerate() {
                    let taken = seen.get_mut(i as usize).ok_or_else(|| {
                        bad(format!("action {a} is at cell {i}, beyond {n} planes of {}x{}", input[1], input[2]))
                    })?;
                    if std::mem::replace(taken, true) {
                        return Err(bad(format!("action {a} shares cell {i} with another action")));
                    }
                }
                Head::Planes { planes: n, index: index.to_vec() }
            }
        };
        if ownership && name != "resnet" {
            return Err(bad("ownership=true needs the residual tower (it predicts a board plane)".into()));
        }
        let policy_filters = get("policy_filters", policy_filters_default(), MAX_CHANNELS)?;
        let value_filters = get("value_filters", value_filters_default(), MAX_CHANNELS)?;
        if policy_filters != policy_filters_default() && head != Head::Dense {
            return Err(bad("policy_filters sets the dense head (head=planes has its own block)".into()));
        }
        Ok(NetConfig {
            trunk,
            input: input.to_vec(),
            actions,
            seats,
            head,
            ownership,
            score,
            policy_filters,
            value_filters,
        })
    }

    /// Where the plane head places the actions (`None` for a dense head), as `from_spec` takes it.
    pub fn planes(&self) -> Option<(usize, &[u32])> {
        match &self.head {
            Head::Dense => None,
            Head::Planes { planes, index } => Some((*planes, index)),
        }
    }

    /// The network as a spec string.
    pub fn spec(&self) -> String {
        let mut extra = String::new();
        if matches!(self.trunk, Trunk::Resnet { .. }) {
            if !is_policy_filters_default(&self.policy_filters) {
                extra += &format!(",policy_filters={}", self.policy_filters);
            }
            if !is_value_filters_default(&self.value_filters) {
                extra += &format!(",value_filters={}", self.value_filters);
            }
        }
        if self.ownership {
            extra += ",ownership=true";
        }
        if self.score {
            extra += ",score=true";
        }
        let trunk = match (self.trunk, &self.head) {
            (Trunk::Resnet { blocks, channels }, Head::Dense) => format!("resnet:blocks={blocks},channels={channels}"),
            (Trunk::Resnet { blocks, channels }, Head::Planes { .. }) => {
                format!("resnet:blocks={blocks},channels={channels},head=planes")
            }
            (Trunk::Mlp { layers, width }, _) => format!("mlp:layers={layers},width={width}"),
            (Trunk::Resmlp { blocks, width }, _) => format!("resmlp:blocks={blocks},width={width}"),
        };
        trunk + &extra
    }

    /// Cells of the board an ownership head predicts (0 without one).
    pub fn ownership_cells(&self) -> usize {
        if self.ownership { self.input[1] * self.input[2] } else { 0 }
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
                let (pf, vf) = (self.policy_filters as u64, self.value_filters as u64);
                let value = cells * c * vf + vf * cells * 64 + 64 * s;
                let policy = match &self.head {
                    Head::Dense => cells * c * pf + pf * cells * a,
                    Head::Planes { planes, .. } => cells * c * c + 9 * c * *planes as u64 * cells,
                };
                tower + value + policy
            }
            Trunk::Mlp { layers, width } => {
                let w = width as u64;
                n * w + (layers as u64 - 1) * w * w + w * a + w * 64 + 64 * s
            }
            Trunk::Resmlp { blocks, width } => {
                let w = width as u64;
                n * w + 2 * blocks as u64 * w * w + w * a + w * 64 + 64 * s
            }
        }
    }

    pub(crate) fn build(&self, device: &Device) -> PolicyValueNet {
        match self.trunk {
            Trunk::Resnet { blocks, channels } => {
                let (planes, cells) = (self.input[0], self.input[1] * self.input[2]);
                let (policy_conv, policy_fc, policy_planes) = match &self.head {
                    Head::Dense => (
                        ConvBn::new(channels, self.policy_filters, 1, device),
                        Some(LinearConfig::new(self.policy_filters * cells, self.actions).init(device)),
                        None,
                    ),
                    Head::Planes { planes, .. } => (
                        ConvBn::new(channels, channels, 1, device),
                        None,
                        Some(
                            Conv2dConfig::new([channels, *planes], [3, 3])
                                .with_padding(PaddingConfig2d::Same)
                                .init(device),
                        ),
                    ),
                };
                PolicyValueNet {
                    stem: Some(ConvBn::new(planes, channels, 3, device)),
                    blocks: (0..blocks).map(|_| ResBlock::new(channels, device)).collect(),
                    mlp: Vec::new(),
                    policy_conv: Some(policy_conv),
                    value_conv: Some(ConvBn::new(channels, self.value_filters, 1, device)),
                    policy_fc,
                    policy_planes,
                    value_fc: LinearConfig::new(self.value_filters * cells, 64).init(device),
                    value_out: LinearConfig::new(64, self.seats).init(device),
                    ownership: self.ownership.then(|| Conv2dConfig::new([channels, 1], [1, 1]).init(device)),
                    score: self.score.then(|| LinearConfig::new(64, 1).init(device)),
                }
            }
            Trunk::Mlp { .. } | Trunk::Resmlp { .. } => {
                let (width, rest) = match self.trunk {
                    Trunk::Mlp { layers, width } => (width, layers - 1),
                    Trunk::Resmlp { blocks, width } => (width, 2 * blocks),
                    Trunk::Resnet { .. } => unreachable!("a tower has no dense trunk"),
                };
                let mut mlp = vec![LinearConfig::new(self.input_len(), width).init(device)];
                mlp.extend((0..rest).map(|_| LinearConfig::new(width, width).init(device)));
                PolicyValueNet {
                    stem: None,
                    blocks: Vec::new(),
                    mlp,
                    policy_conv: None,
                    value_conv: None,
                    policy_fc: Some(LinearConfig::new(width, self.actions).init(device)),
                    policy_planes: None,
                    value_fc: LinearConfig::new(width, 64).init(device),
                    value_out: LinearConfig::new(64, self.seats).init(device),
                    ownership: None,
                    score: self.score.then(|| LinearConfig::new(64, 1).init(device)),
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
    /// The dense policy layer; absent with the plane head.
    pub(crate) policy_fc: Option<Linear>,
    /// The plane head's last convolution; absent with the dense head.
    pub(crate) policy_planes: Option<Conv2d>,
    pub(crate) value_fc: Linear,
    pub(crate) value_out: Linear,
    /// The ownership head's convolution (to one plane, with a bias); absent unless asked for.
    pub(crate) ownership: Option<Conv2d>,
    /// The score-margin head's layer (the value head's hidden layer to one output); absent
    /// unless asked for.
    pub(crate) score: Option<Linear>,
}

impl PolicyValueNet {
    /// Logits `[batch, actions]` and values `[batch, seats]` (sigmoid, mover first) for a batch
    /// of observations: `[batch, planes, rows, cols]` for a tower, `[batch, n]` for an MLP.
    pub(crate) fn forward(&self, input: Tensor<2>, config: &NetConfig) -> (Tensor<2>, Tensor<2>) {
        let out = self.forward_all(input, config);
        (out.logits, out.values)
    }

    /// [`PolicyValueNet::forward`] and the auxiliary heads the network has.
    pub(crate) fn forward_all(&self, input: Tensor<2>, config: &NetConfig) -> Outputs {
        let batch = input.dims()[0];
        let mut ownership = None;
        let (logits, value) = match &self.stem {
            Some(stem) => {
                let [planes, rows, cols] = [config.input[0], config.input[1], config.input[2]];
                let mut x = relu(stem.forward(input.reshape([batch, planes, rows, cols])));
                for block in &self.blocks {
                    x = block.forward(x);
                }
                ownership = self.ownership.as_ref().map(|c| c.forward(x.clone()).tanh().reshape([batch, rows * cols]));
                let p = relu(self.policy_conv.as_ref().expect("tower heads").forward(x.clone()));
                let v = relu(self.value_conv.as_ref().expect("tower heads").forward(x));
                let logits = match (&self.policy_planes, &config.head) {
                    (Some(conv), Head::Planes { planes, index }) => {
                        let cells = conv.forward(p).reshape([batch, planes * rows * cols]);
                        let index: Vec<i64> = index.iter().map(|&i| i as i64).collect();
                        let n = index.len();
                        cells.select(1, Tensor::<1, Int>::from_data(TensorData::new(index, [n]), &v.device()))
                    }
                    _ => self
                        .policy_fc
                        .as_ref()
                        .expect("a dense head")
                        .forward(p.reshape([batch, config.policy_filters * rows * cols])),
                };
                (logits, v.reshape([batch, config.value_filters * rows * cols]))
            }
            None if matches!(config.trunk, Trunk::Resmlp { .. }) => {
                let mut x = relu(self.mlp[0].forward(input));
                for pair in self.mlp[1..].chunks_exact(2) {
                    let y = pair[1].forward(relu(pair[0].forward(x.clone())));
                    x = relu(x + y);
                }
                (self.policy_fc.as_ref().expect("a dense head").forward(x.clone()), x)
            }
            None => {
                let mut x = input;
                for layer in &self.mlp {
                    x = relu(layer.forward(x));
                }
                (self.policy_fc.as_ref().expect("a dense head").forward(x.clone()), x)
            }
        };
        let hidden = relu(self.value_fc.forward(value));
        let score = self.score.as_ref().map(|l| l.forward(hidden.clone()).tanh());
        let values = sigmoid(self.value_out.forward(hidden));
        Outputs { logits, values, ownership, score }
    }
}

/// Everything a forward pass computes.
pub(crate) struct Outputs {
    /// `[batch, actions]`.
    pub(crate) logits: Tensor<2>,
    /// `[batch, seats]`, sigmoid, mover first.
    pub(crate) values: Tensor<2>,
    /// The ownership head's `[batch, cells]` (tanh), where the network has one. (Training
    /// computes the heads by hand; the gradient check reads these.)
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) ownership: Option<Tensor<2>>,
    /// The score-margin head's `[batch, 1]` (tanh), where the network has one.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) score: Option<Tensor<2>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_are_read_and_checked() {
        let c = NetConfig::from_spec("resnet:blocks=2,channels=16", &[3, 6, 7], 7, 2, None).unwrap();
        assert_eq!(c.trunk, Trunk::Resnet { blocks: 2, channels: 16 });
        assert_eq!(c.spec(), "resnet:blocks=2,channels=16");
        assert_eq!(
            NetConfig::from_spec("mlp", &[100], 10, 3, None).unwrap().trunk,
            Trunk::Mlp { layers: 2, width: 256 }
        );
        for (bad, why) in [
            ("resnet:blocks=0", "outside 1..=40"),
            ("resnet:channels=100000", "outside 1..=512"),
            ("resnet:width=3", "unknown option 'width'"),
            ("transformer", "resnet, mlp or resmlp"),
            ("resnet:blocks=x", "not a whole number"),
        ] {
            let err = NetConfig::from_spec(bad, &[3, 6, 7], 7, 2, None).unwrap_err().to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
        let err = NetConfig::from_spec("resnet", &[100], 10, 2, None).unwrap_err().to_string();
        assert!(err.contains("use mlp"), "{err}");
        let own = NetConfig::from_spec("resnet:ownership=true", &[3, 6, 7], 7, 2, None).unwrap();
        assert!(own.ownership && own.ownership_cells() == 42);
        assert_eq!(own.spec(), "resnet:blocks=4,channels=32,ownership=true");
        assert_eq!(NetConfig::from_spec(&own.spec(), &[3, 6, 7], 7, 2, None).unwrap(), own);
        assert!(!NetConfig::from_spec("resnet:ownership=false", &[3, 6, 7], 7, 2, None).unwrap().ownership);
        let wide = NetConfig::from_spec("resnet:value_filters=4,policy_filters=8", &[3, 6, 7], 7, 2, None).unwrap();
        assert_eq!((wide.policy_filters, wide.value_filters), (8, 4));
        assert_eq!(wide.spec(), "resnet:blocks=4,channels=32,policy_filters=8,value_filters=4");
        assert_eq!(NetConfig::from_spec(&wide.spec(), &[3, 6, 7], 7, 2, None).unwrap(), wide);
        let plain = NetConfig::from_spec("resnet", &[3, 6, 7], 7, 2, None).unwrap();
        assert_eq!(plain.macs() + 6 * 42 * 32 + 6 * 42 * 7 + 3 * 42 * 32 + 3 * 42 * 64, wide.macs());
        let scored = NetConfig::from_spec("mlp:width=16,score=true", &[10], 7, 3, None).unwrap();
        assert!(scored.score && !scored.ownership);
        assert_eq!(scored.spec(), "mlp:layers=2,width=16,score=true");
        assert_eq!(NetConfig::from_spec(&scored.spec(), &[10], 7, 3, None).unwrap(), scored);
        assert!(serde_json::to_string(&scored).unwrap().contains(r#""score":true"#));
        assert!(!serde_json::to_string(&own).unwrap().contains("score"));
        for (bad, why) in [
            ("resnet:ownership=yes", "give true or false"),
            ("resnet:score=1", "score '1': give true or false"),
            ("mlp:ownership=true", "residual tower"),
            ("resnet:value_filters=0", "outside 1..=512"),
            ("mlp:value_filters=2", "unknown option 'value_filters'"),
        ] {
            let err = NetConfig::from_spec(bad, &[3, 6, 7], 7, 2, None).unwrap_err().to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
        // A sidecar without the field is a network without the head; one without it says nothing.
        let json = serde_json::to_string(&c).unwrap();
        assert!(!json.contains("ownership"), "{json}");
        assert!(serde_json::to_string(&own).unwrap().contains(r#""ownership":true"#));
    }

    #[test]
    fn the_plane_head_is_asked_for_and_checked() {
        // 3 actions on 2 planes of a 2x2 board.
        let index = [0, 5, 7];
        let planes = Some((2, &index[..]));
        let c = NetConfig::from_spec("resnet:head=planes", &[3, 2, 2], 3, 2, planes).unwrap();
        assert_eq!(c.head, Head::Planes { planes: 2, index: index.to_vec() });
        assert_eq!(c.spec(), "resnet:blocks=4,channels=32,head=planes");
        assert_eq!(c.planes(), planes);
        for spec in ["resnet", "resnet:head=dense"] {
            let dense = NetConfig::from_spec(spec, &[3, 2, 2], 3, 2, planes).unwrap();
            assert_eq!((&dense.head, dense.planes()), (&Head::Dense, None));
        }
        assert_eq!(NetConfig::from_spec("mlp", &[12], 3, 2, planes).unwrap().head, Head::Dense);
        for (spec, planes, why) in [
            ("resnet:head=planes", None, "use head=dense"),
            ("resnet:head=sparse", planes, "dense or planes"),
            ("mlp:head=planes", planes, "residual tower"),
            ("resnet:head=planes", Some((2, &[0, 5, 8][..])), "beyond 2 planes of 2x2"),
            ("resnet:head=planes", Some((2, &[0, 5, 5][..])), "action 2 shares cell 5"),
            ("resnet:head=planes", Some((2, &[0, 5][..])), "places 2 actions, the game has 3"),
            ("resnet:head=planes", Some((0, &[][..])), "outside 1..=4096"),
        ] {
            let err = NetConfig::from_spec(spec, &[3, 2, 2], 3, 2, planes).unwrap_err().to_string();
            assert!(err.contains(why), "{spec}: {err}");
        }
        // The sidecar keeps the index on one line and reads it back.
        let json = serde_json::to_string(&c).unwrap();
        assert!(json.contains(r#""head":{"kind":"planes","planes":2,"index":"0 5 7"}"#), "{json}");
        assert_eq!(serde_json::from_str::<NetConfig>(&json).unwrap(), c);
        let old = json.replace(r#","head":{"kind":"planes","planes":2,"index":"0 5 7"}"#, "");
        assert_eq!(serde_json::from_str::<NetConfig>(&old).unwrap().head, Head::Dense);
        assert!(serde_json::from_str::<NetConfig>(&json.replace("0 5 7", "0 x 7")).is_err());
    }
}
