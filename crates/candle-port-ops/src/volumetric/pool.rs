//! 3-D pooling: the compositions of the 2-D pools with a third axis.

use candle_core::{Result, Tensor};

use crate::pooling::adaptive::{adaptive_avg, adaptive_max};
use crate::pooling::avg::avg_pool;
use crate::pooling::max::max_pool;
use crate::Pool;

/// `F.max_pool3d`: the max over each `(k_d, k_h, k_w)` window (stride, padding, dilation,
/// ceil_mode per axis as [`max_pool1d`](crate::max_pool1d)); ties pick the first maximum in
/// row-major window order, NaN wins, the gradient goes to the chosen element only, as torch's.
///
/// Input (N, C, D, H, W), output (N, C, D_out, H_out, W_out).
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_ops::{max_pool3d, Pool};
/// let x = Tensor::arange(0f32, 64., &Device::Cpu)?.reshape((1, 1, 4, 4, 4))?;
/// let y = max_pool3d(&x, &Pool::new(&[2]))?;
/// assert_eq!(y.flatten_all()?.to_vec1::<f32>()?, vec![21., 23., 29., 31., 53., 55., 61., 63.]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn max_pool3d(x: &Tensor, p: &Pool) -> Result<Tensor> {
    Ok(max_pool(x, p, 3, "max_pool3d")?.values)
}

/// [`max_pool3d`] with torch's indices: `(d * H + h) * W + w` of each chosen element in its
/// volume, `i64`.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_ops::{max_pool3d_with_indices, Pool};
/// let x = Tensor::arange(0f32, 8., &Device::Cpu)?.reshape((1, 1, 2, 2, 2))?;
/// let (_, i) = max_pool3d_with_indices(&x, &Pool::new(&[2]))?;
/// assert_eq!(i.flatten_all()?.to_vec1::<i64>()?, vec![7]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn max_pool3d_with_indices(x: &Tensor, p: &Pool) -> Result<(Tensor, Tensor)> {
    max_pool(x, p, 3, "max_pool3d_with_indices")?.with_indices()
}

/// `F.avg_pool3d`: the mean over each window of the zero-padded input, torch's divisor
/// (`divisor_override`, else the product of the per-axis factors of
/// [`avg_pool1d`](crate::avg_pool1d) with `count_include_pad`), as one window matmul per axis.
///
/// ```
/// use candle_core::{DType, Device, Tensor};
/// use candle_port_ops::{avg_pool3d, Pool};
/// let x = Tensor::ones((1, 1, 3, 3, 3), DType::F64, &Device::Cpu)?;
/// let y = avg_pool3d(&x, &Pool::new(&[3]).stride(&[1]).padding(&[1]))?;
/// let corner = y.flatten_all()?.to_vec1::<f64>()?[0]; // 8 inputs, divisor 27
/// assert!((corner - 8. / 27.).abs() < 1e-15);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn avg_pool3d(x: &Tensor, p: &Pool) -> Result<Tensor> {
    avg_pool(x, p, 3, "avg_pool3d")
}

/// `F.adaptive_avg_pool3d`: the mean over ATen's adaptive windows
/// `[floor(i*n/out), ceil((i+1)*n/out))` on each of D, H and W.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_ops::adaptive_avg_pool3d;
/// let x = Tensor::arange(0f32, 8., &Device::Cpu)?.reshape((1, 1, 2, 2, 2))?;
/// let y = adaptive_avg_pool3d(&x, (1, 1, 1))?;
/// assert_eq!(y.flatten_all()?.to_vec1::<f32>()?, vec![3.5]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn adaptive_avg_pool3d(x: &Tensor, output_size: (usize, usize, usize)) -> Result<Tensor> {
    let (d, h, w) = output_size;
    adaptive_avg(x, &[d, h, w], "adaptive_avg_pool3d")
}

/// `F.adaptive_max_pool3d`: the max over ATen's adaptive windows on D, H and W; ties, NaN and
/// gradient as [`max_pool3d`].
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_ops::adaptive_max_pool3d;
/// let x = Tensor::arange(0f32, 8., &Device::Cpu)?.reshape((1, 1, 2, 2, 2))?;
/// let y = adaptive_max_pool3d(&x, (2, 1, 1))?;
/// assert_eq!(y.flatten_all()?.to_vec1::<f32>()?, vec![3., 7.]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn adaptive_max_pool3d(x: &Tensor, output_size: (usize, usize, usize)) -> Result<Tensor> {
    let (d, h, w) = output_size;
    Ok(adaptive_max(x, &[d, h, w], "adaptive_max_pool3d")?.values)
}

/// [`adaptive_max_pool3d`] with torch's indices (`(d * H + h) * W + w`, `i64`).
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_ops::adaptive_max_pool3d_with_indices;
/// let x = Tensor::arange(0f32, 8., &Device::Cpu)?.reshape((1, 1, 2, 2, 2))?;
/// let (_, i) = adaptive_max_pool3d_with_indices(&x, (2, 1, 1))?;
/// assert_eq!(i.flatten_all()?.to_vec1::<i64>()?, vec![3, 7]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn adaptive_max_pool3d_with_indices(
    x: &Tensor,
    output_size: (usize, usize, usize),
) -> Result<(Tensor, Tensor)> {
    let (d, h, w) = output_size;
    adaptive_max(x, &[d, h, w], "adaptive_max_pool3d_with_indices")?.with_indices()
}
