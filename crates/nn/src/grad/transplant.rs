//! Parameters read out of burn's modules into the flat vectors, and a trained network's
//! weights carried into a network for another game (its inputs and actions widened).

use super::*;

/// Reads parameters out of burn's modules into the flat vectors.
pub(super) struct Reader {
    pub(super) theta: Vec<f32>,
    pub(super) running: Vec<f32>,
    pub(super) tensors: Vec<Span>,
}

impl Reader {
    pub(super) fn push(&mut self, values: Vec<f32>) -> Span {
        let span = Span { at: self.theta.len(), len: values.len() };
        self.theta.extend(values);
        self.tensors.push(span);
        span
    }

    pub(super) fn conv(&mut self, conv: &Conv2d, norm: Option<&BatchNorm>) -> Conv {
        let [cout, cin, k, _] = conv.weight.dims();
        let w = values(conv.weight.val());
        let mut mine = vec![0.0; w.len()];
        for o in 0..cout {
            for i in 0..cin {
                for y in 0..k {
                    for x in 0..k {
                        mine[((y * k + x) * cin + i) * cout + o] = w[((o * cin + i) * k + y) * k + x];
                    }
                }
            }
        }
        let w = self.push(mine);
        let bias = conv.bias.as_ref().map(|b| self.push(values(b.val())));
        let norm = norm.map(|n| {
            let gamma = self.push(values(n.gamma.val()));
            let beta = self.push(values(n.beta.val()));
            let stats = self.running.len();
            self.running.extend(values(n.running_mean.value_sync()));
            self.running.extend(values(n.running_var.value_sync()));
            Norm { gamma, beta, stats, epsilon: n.epsilon as f32, momentum: n.momentum as f32 }
        });
        Conv { k, cin, cout, w, norm, bias }
    }

    pub(super) fn conv_bn(&mut self, c: &ConvBn) -> Conv {
        self.conv(&c.conv, Some(&c.norm))
    }

    pub(super) fn dense(&mut self, l: &Linear) -> Dense {
        let [inputs, outputs] = l.weight.dims();
        let w = self.push(values(l.weight.val()));
        let b = self.push(l.bias.as_ref().map(|b| values(b.val())).unwrap_or_else(|| vec![0.0; outputs]));
        Dense { inputs, outputs, w, b }
    }
}

/// Copies a network into one for a related game of the same trunk: every layer as it is,
/// except that the first takes more inputs (dense inputs, or a tower's planes; those the
/// narrow network lacks start at weight zero, so they change nothing until trained) and the
/// policy's last layer has a row per action of the new game, copied from the old action
/// `policy_rows[a]` names, zero where it names none. A plane head, an ownership or a score head
/// is copied where both networks have it with the same shape, and left as built otherwise.
pub(crate) fn transplant(
    narrow: &PolicyValueNet,
    into: &mut PolicyValueNet,
    policy_rows: &[Option<usize>],
    device: &Device,
) {
    // A dense layer with the first of its inputs and outputs copied (zeros elsewhere).
    let copy = |from: &Linear, to: &mut Linear| {
        let [fi, fo] = from.weight.dims();
        let [ti, tout] = to.weight.dims();
        let w = values(from.weight.val());
        let mut wide = vec![0.0; ti * tout];
        for i in 0..fi.min(ti) {
            let n = fo.min(tout);
            wide[i * tout..i * tout + n].copy_from_slice(&w[i * fo..i * fo + n]);
        }
        to.weight = Param::from_tensor(Tensor::from_data(TensorData::new(wide, [ti, tout]), device));
        let mut bias = vec![0.0; tout];
        if let Some(b) = &from.bias {
            let b = values(b.val());
            let n = b.len().min(tout);
            bias[..n].copy_from_slice(&b[..n]);
        }
        to.bias = Some(Param::from_tensor(tensor1(&bias, device)));
    };
    if let (Some(from), Some(to)) = (&narrow.stem, into.stem.as_mut()) {
        // [out, in, k, k]: each output's kernels for the old planes, zeros for the new.
        let [out, fi, k1, k2] = from.conv.weight.dims();
        let [_, ti, _, _] = to.conv.weight.dims();
        let (w, k) = (values(from.conv.weight.val()), k1 * k2);
        let mut wide = vec![0.0; out * ti * k];
        for o in 0..out {
            for c in 0..fi.min(ti) {
                wide[(o * ti + c) * k..(o * ti + c + 1) * k]
                    .copy_from_slice(&w[(o * fi + c) * k..(o * fi + c + 1) * k]);
            }
        }
        to.conv.weight = Param::from_tensor(Tensor::from_data(TensorData::new(wide, [out, ti, k1, k2]), device));
        to.conv.bias = from.conv.bias.clone();
        to.norm = from.norm.clone();
    }
    into.blocks = narrow.blocks.clone();
    for (from, to) in narrow.mlp.iter().zip(into.mlp.iter_mut()) {
        copy(from, to);
    }
    if let (Some(from), Some(to)) = (&narrow.policy_conv, into.policy_conv.as_mut()) {
        *to = from.clone();
    }
    if let (Some(from), Some(to)) = (&narrow.value_conv, into.value_conv.as_mut()) {
        *to = from.clone();
    }
    if let (Some(from), Some(to)) = (&narrow.policy_fc, into.policy_fc.as_mut()) {
        let [fi, fo] = from.weight.dims();
        let [ti, tout] = to.weight.dims();
        let (w, b) = (values(from.weight.val()), from.bias.as_ref().map(|b| values(b.val())));
        let (mut rows, mut bias) = (vec![0.0; ti * tout], vec![0.0; tout]);
        for (a, old) in policy_rows.iter().enumerate().take(tout) {
            let Some(old) = old.filter(|&o| o < fo) else { continue };
            for i in 0..fi.min(ti) {
                rows[i * tout + a] = w[i * fo + old];
            }
            bias[a] = b.as_ref().map_or(0.0, |b| b[old]);
        }
        to.weight = Param::from_tensor(Tensor::from_data(TensorData::new(rows, [ti, tout]), device));
        to.bias = Some(Param::from_tensor(tensor1(&bias, device)));
    }
    if let (Some(from), Some(to)) = (&narrow.policy_planes, into.policy_planes.as_mut())
        && from.weight.dims() == to.weight.dims()
    {
        *to = from.clone();
    }
    copy(&narrow.value_fc, &mut into.value_fc);
    copy(&narrow.value_out, &mut into.value_out);
    if let (Some(from), Some(to)) = (&narrow.ownership, into.ownership.as_mut()) {
        *to = from.clone();
    }
    if let (Some(from), Some(to)) = (&narrow.score, into.score.as_mut()) {
        copy(from, to);
    }
}
