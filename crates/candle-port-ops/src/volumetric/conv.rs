//! `conv3d` and `conv_transpose3d`.

use candle_core::{Result, Tensor};

use crate::convolution::{convolve, Kind};
use crate::Conv;

/// `F.conv3d`: `out[n, o, z, y, x] = bias[o] + sum_{c, a, b, e} x[n, g*Cg + c, z*s_d - p_d + a*d_d,
/// y*s_h - p_h + b*d_h, x*s_w - p_w + e*d_w] * w[o, c, a, b, e]` (zero padding), `g` the group
/// of `o`.
///
/// Input (N, C_in, D, H, W), weight (C_out, C_in / groups, K_d, K_h, K_w), output (N, C_out,
/// D_out, H_out, W_out) with `floor((n + 2p - d(k - 1) - 1) / s) + 1` per axis. Differentiable
/// w.r.t. input, weight and bias.
///
/// ```
/// use candle_core::{DType, Device, Tensor};
/// use candle_port_ops::{conv3d, Conv};
/// let x = Tensor::ones((1, 2, 4, 4, 4), DType::F32, &Device::Cpu)?;
/// let w = Tensor::ones((3, 2, 3, 3, 3), DType::F32, &Device::Cpu)?;
/// let y = conv3d(&x, &w, None, &Conv::new().padding(&[1]))?;
/// assert_eq!(y.dims(), &[1, 3, 4, 4, 4]);
/// let centre = y.flatten_all()?.to_vec1::<f32>()?[21]; // (1, 1, 1): all 27 taps inside
/// assert_eq!(centre, 54.);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn conv3d(x: &Tensor, w: &Tensor, bias: Option<&Tensor>, c: &Conv) -> Result<Tensor> {
    convolve("conv3d", Kind::Forward, x, w, bias, c, 3)
}

/// `F.conv_transpose3d`: [`conv_transpose1d`](crate::conv_transpose1d) on each of D, H and W,
/// with groups, output_padding and dilation.
///
/// Input (N, C_in, D, H, W), weight (C_in, C_out / groups, K_d, K_h, K_w), output (N, C_out,
/// D_out, H_out, W_out) with `(n - 1)*s - 2p + d(k - 1) + output_padding + 1` per axis.
/// Differentiable w.r.t. input, weight and bias.
///
/// ```
/// use candle_core::{DType, Device, Tensor};
/// use candle_port_ops::{conv_transpose3d, Conv};
/// let x = Tensor::ones((1, 2, 2, 3, 4), DType::F32, &Device::Cpu)?;
/// let w = Tensor::ones((2, 1, 2, 2, 2), DType::F32, &Device::Cpu)?;
/// let y = conv_transpose3d(&x, &w, None, &Conv::new().stride(&[2]))?;
/// assert_eq!(y.dims(), &[1, 1, 4, 6, 8]);
/// assert_eq!(y.flatten_all()?.to_vec1::<f32>()?[0], 2.);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn conv_transpose3d(x: &Tensor, w: &Tensor, bias: Option<&Tensor>, c: &Conv) -> Result<Tensor> {
    convolve("conv_transpose3d", Kind::Transposed, x, w, bias, c, 3)
}
