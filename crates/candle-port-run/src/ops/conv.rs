//! `aten.convolution` (1-D and 2-D, groups, stride, padding, dilation, transposed 2-D):
//! `y = conv(x, w) + b`. Port mode runs candle-port-ops' twins where candle has no op or no
//! backward: 3-D convolutions, `conv_transpose1d`, grouped `conv_transpose2d` and
//! `output_padding >= stride`. candle's conv takes one padding/stride/dilation for all spatial dims,
//! so asymmetric padding is applied with `pad_with_zeros` first and asymmetric stride or dilation
//! is reported as an error rather than approximated.
//!
//! candle 0.11.0's `conv1d` backward returns a wrong weight gradient when batch > 1 and a group
//! has > 1 output channel (measured: measure.rs probes); port mode therefore runs candle-port-ops'
//! `conv1d`, a 2-D convolution over `(N, C, 1, L)` whose gradients equal torch's.

use candle_core::{bail, Result, Tensor};
use candle_port_ops::{conv1d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d, Conv};

use super::OpsMode;
use crate::value::{usizes, Args, Value};

/// Maps `convolution`; `None` for other ops.
pub fn run(name: &str, args: &Args, mode: OpsMode) -> Option<Result<Value>> {
    (name == "convolution").then(|| convolution(args, mode).map(Value::Tensor))
}

fn same(v: &[usize], what: &str) -> Result<usize> {
    match v.first() {
        Some(&first) if v.iter().all(|&x| x == first) => Ok(first),
        Some(_) => bail!("candle's conv takes one {what} for all dims, torch has {v:?}"),
        None => bail!("empty {what}"),
    }
}

fn convolution(a: &Args, mode: OpsMode) -> Result<Tensor> {
    let x = a.tensor(0, "input")?;
    let w = a.tensor(1, "weight")?;
    let b = a.opt_tensor(2, "bias")?;
    let stride = usizes(&a.ints_or(3, "stride", &[1])?)?;
    let mut padding = usizes(&a.ints_or(4, "padding", &[0])?)?;
    let dilation = usizes(&a.ints_or(5, "dilation", &[1])?)?;
    let transposed = a.bool_or(6, "transposed", false)?;
    let output_padding = usizes(&a.ints_or(7, "output_padding", &[0])?)?;
    let groups = a.int_or(8, "groups", 1)? as usize;
    let spatial = x.rank().saturating_sub(2);
    if mode == OpsMode::Port && needs_twin(spatial, transposed, groups, &output_padding, &stride) {
        let c = Conv::new()
            .stride(&stride)
            .padding(&padding)
            .output_padding(&output_padding)
            .dilation(&dilation)
            .groups(groups);
        let b = b.as_ref();
        return match (spatial, transposed) {
            (1, false) => conv1d(&x, &w, b, &c),
            (3, false) => conv3d(&x, &w, b, &c),
            (3, true) => conv_transpose3d(&x, &w, b, &c),
            (1, true) => conv_transpose1d(&x, &w, b, &c),
            _ => conv_transpose2d(&x, &w, b, &c),
        };
    }
    let mut x = x;
    if !transposed && padding.iter().any(|&p| p != padding[0]) {
        for (i, &p) in padding.iter().enumerate() {
            x = x.pad_with_zeros(2 + i, p, p)?;
        }
        padding = vec![0; padding.len()];
    }
    let (p, s, d) = (
        same(&padding, "padding")?,
        same(&stride, "stride")?,
        same(&dilation, "dilation")?,
    );
    let y = match (spatial, transposed) {
        (1, false) => x.conv1d(&w, p, s, d, groups)?, // native only: port runs the twin
        (2, false) => x.conv2d(&w, p, s, d, groups)?,
        (1, true) => x.conv_transpose1d(
            &w,
            p,
            same(&output_padding, "output_padding")?,
            s,
            d,
            groups,
        )?,
        (2, true) if groups == 1 => {
            x.conv_transpose2d(&w, p, same(&output_padding, "output_padding")?, s, d)?
        }
        (2, true) => bail!("candle's conv_transpose2d has no groups (groups={groups})"),
        _ => bail!("candle has no {spatial}-D convolution"),
    };
    match b {
        None => Ok(y),
        Some(b) => {
            let mut shape = vec![1, b.elem_count()];
            shape.extend(std::iter::repeat_n(1, spatial));
            y.broadcast_add(&b.reshape(shape)?)
        }
    }
}

/// `conv-transpose1d` for a 1-D transposed convolution in native mode, whose candle backward
/// bails with `backward is not supported for conv-transpose1d` (port mode runs the twin).
pub fn candle_op_used(name: &str, a: &Args, mode: OpsMode) -> Option<&'static str> {
    if mode != OpsMode::Native || !matches!(name, "convolution" | "_convolution") {
        return None;
    }
    let rank = a.tensor(0, "input").ok()?.rank();
    let transposed = a.bool_or(6, "transposed", false).ok()?;
    (transposed && rank == 3).then_some("conv-transpose1d")
}

/// Whether port mode runs the candle-port-ops twin: candle has no 3-D convolution, a wrong
/// conv1d weight gradient, no conv_transpose1d backward, and no conv_transpose2d groups or
/// output_padding >= stride.
fn needs_twin(
    spatial: usize,
    transposed: bool,
    groups: usize,
    output_padding: &[usize],
    stride: &[usize],
) -> bool {
    match (spatial, transposed) {
        (3, _) | (1, _) => true,
        (2, true) => groups != 1 || output_padding.iter().zip(stride).any(|(p, s)| p >= s),
        _ => false,
    }
}

/// `x * w` broadcast as a per-channel `(1, C, 1, ...)` tensor (shared by the norms).
pub fn per_channel(t: &Tensor, rank: usize) -> Result<Tensor> {
    let mut shape = vec![1, t.elem_count()];
    shape.extend(std::iter::repeat_n(1, rank.saturating_sub(2)));
    t.reshape(shape)
}
