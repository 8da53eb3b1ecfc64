//! `F.conv1d` as a 2-D convolution of height 1, whose weight gradient candle computes right.
//!
//! candle 0.11.0's CPU `conv1d` copies a non-contiguous kernel into a contiguous buffer and then
//! multiplies by the original storage (`cpu_backend/mod.rs`, `fn conv1d`, im2col branch; PR
//! #3836 is open). Its backward computes the weight gradient as a `conv1d` whose kernel is the
//! transposed output gradient, non-contiguous once the batch is above 1 and a group has more
//! than one output channel, so `Tensor::conv1d` trains the weight wrong there, silently. Its
//! `conv2d` multiplies by the copy: the same convolution run as `conv2d` on `(N, C, 1, L)` with a
//! `(C_out, C_in / groups, 1, K)` kernel gets torch's gradients.

use candle_core::{bail, Result, Tensor};

use crate::Conv;

/// `F.conv1d`: `out[n, o, i] = bias[o] + sum_c,k x[n, g*Cg + c, i*s - p + k*d] * w[o, c, k]`
/// (`g` the group of output channel `o`, zeros outside the input).
///
/// Input (N, C_in, L), weight (C_out, C_in / groups, K), bias (C_out), output (N, C_out, L_out)
/// with `L_out = (L + 2p - d(K - 1) - 1) / s + 1`. Runs as `conv2d` on the input zero-padded along
/// L (`pad_with_zeros`), cut to the last position a window reads (candle's conv2d backward needs
/// equal H/W residuals; H's is 0) and unsqueezed to height 1, with the weight unsqueezed the same
/// way. Differentiable w.r.t. input, weight and bias, equal to torch's gradients for any batch.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_ops::{conv1d, Conv};
/// let x = Tensor::new(&[[[1f32, 2., 3., 4.]]], &Device::Cpu)?;
/// let w = Tensor::new(&[[[1f32, 10.]]], &Device::Cpu)?;
/// let y = conv1d(&x, &w, None, &Conv::new().stride(&[2]).padding(&[1]))?;
/// assert_eq!(y.to_vec3::<f32>()?, vec![vec![vec![10., 32., 4.]]]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn conv1d(x: &Tensor, w: &Tensor, bias: Option<&Tensor>, c: &Conv) -> Result<Tensor> {
    let one = |v: &[usize], name: &str| match v {
        [a] => Ok(*a),
        _ => bail!("conv1d: {name} must have one entry, got {v:?}"),
    };
    let (s, p, d) = (
        one(&c.stride, "stride")?,
        one(&c.padding, "padding")?,
        one(&c.dilation, "dilation")?,
    );
    let (_, c_in, l) = x.dims3()?;
    let (c_out, c_in_g, k) = w.dims3()?;
    let g = c.groups;
    if s == 0 || d == 0 || g == 0 || c_in % g != 0 || c_out % g != 0 || c_in / g != c_in_g {
        bail!(
            "conv1d: input {:?}, weight {:?}, groups {g}, stride {s}, dilation {d}",
            x.dims(),
            w.dims()
        )
    }
    let span = d * (k - 1) + 1;
    if l + 2 * p < span {
        bail!(
            "conv1d: padded input length {} is shorter than the kernel's span {span}",
            l + 2 * p
        )
    }
    let unread = (l + 2 * p - span) % s;
    let x = x
        .pad_with_zeros(2, p, p)?
        .narrow(2, 0, l + 2 * p - unread)?;
    let y = x
        .unsqueeze(2)?
        .conv2d(&w.unsqueeze(2)?, 0, s, d, g)?
        .squeeze(2)?;
    match bias {
        None => Ok(y),
        Some(b) => y.broadcast_add(&b.reshape((1, c_out, 1))?),
    }
}
