//! Transposed convolutions: `F.conv_transpose1d` and `F.conv_transpose2d` with groups,
//! output_padding and dilation, equal to torch's in forward and in the input, weight and bias
//! gradients.
//!
//! candle's own `conv_transpose1d` has no backward ("backward is not supported for
//! conv-transpose1d"), its `conv_transpose2d` has no groups and its backward fails once
//! `output_padding >= stride`. Here, as torch's CPU col2im, one `matmul` per group takes each
//! input position to its (output channel, kernel tap) contributions and an `index_add` adds
//! them at the output positions they reach (those in the cropped padding are dropped): ops
//! candle differentiates, so the backward is candle's `index_select` and `matmul`, and no zeros
//! between the strided inputs are multiplied.
//!
//! Inputs are batched, (N, C_in, L) or (N, C_in, H, W); the weight is torch's
//! (C_in, C_out / groups, *kernel); the bias (C_out).

use candle_core::{Result, Tensor};

use crate::convolution::{convolve, Kind};
use crate::Conv;

/// `F.conv_transpose1d`: `out[n, g*Og + o, i*s - p + k*d] += x[n, g*Cg + c, i] * w[g*Cg + c, o, k]`,
/// plus `bias[o]`.
///
/// Input (N, C_in, L), weight (C_in, C_out / groups, K), output (N, C_out, L_out) with
/// `L_out = (L - 1)*s - 2p + d(K - 1) + output_padding + 1`. Errors as torch's for
/// `output_padding` not smaller than the stride or the dilation and for channel counts that the
/// groups do not divide. Differentiable w.r.t. input, weight and bias.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_ops::{conv_transpose1d, Conv};
/// let x = Tensor::new(&[[[1f32, 2., 3.]]], &Device::Cpu)?;
/// let w = Tensor::new(&[[[1f32, 10.]]], &Device::Cpu)?;
/// let y = conv_transpose1d(&x, &w, None, &Conv::new().stride(&[2]))?;
/// assert_eq!(y.to_vec3::<f32>()?, vec![vec![vec![1., 10., 2., 20., 3., 30.]]]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn conv_transpose1d(x: &Tensor, w: &Tensor, bias: Option<&Tensor>, c: &Conv) -> Result<Tensor> {
    convolve("conv_transpose1d", Kind::Transposed, x, w, bias, c, 1)
}

/// `F.conv_transpose2d` with torch's groups, output_padding, dilation, and per-axis stride and
/// padding: each axis as in [`conv_transpose1d`].
///
/// Input (N, C_in, H, W), weight (C_in, C_out / groups, K_h, K_w), output (N, C_out, H_out,
/// W_out). Differentiable w.r.t. input, weight and bias.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_ops::{conv_transpose2d, Conv};
/// let x = Tensor::ones((1, 4, 3, 3), candle_core::DType::F32, &Device::Cpu)?;
/// let w = Tensor::ones((4, 3, 3, 3), candle_core::DType::F32, &Device::Cpu)?;
/// let c = Conv::new().stride(&[2]).padding(&[1]).output_padding(&[1]).groups(2);
/// let y = conv_transpose2d(&x, &w, None, &c)?;
/// assert_eq!(y.dims(), &[1, 6, 6, 6]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn conv_transpose2d(x: &Tensor, w: &Tensor, bias: Option<&Tensor>, c: &Conv) -> Result<Tensor> {
    convolve("conv_transpose2d", Kind::Transposed, x, w, bias, c, 2)
}
