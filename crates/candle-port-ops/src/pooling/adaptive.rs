//! Adaptive pooling: ATen's windows `[floor(i*n/out), ceil((i+1)*n/out))` with the max and
//! average compositions of the fixed-window pools.

use candle_core::{Result, Tensor};

use super::avg::mean_by_matrices;
use super::input::batched;
use super::max::{max_by_table, MaxPooled};
use super::windows::{adaptive_bounds, adaptive_max_rows, WindowTable};

pub(crate) fn adaptive_avg(x: &Tensor, out: &[usize], op: &str) -> Result<Tensor> {
    let (_, _, sizes) = batched(x, out.len(), op)?;
    let bounds: Vec<_> = sizes
        .iter()
        .zip(out)
        .map(|(&n, &o)| adaptive_bounds(n, o))
        .collect();
    let counts: Vec<Vec<usize>> = bounds
        .iter()
        .map(|b| b.iter().map(|(s, e)| e - s).collect())
        .collect();
    mean_by_matrices(x, &bounds, &counts, None)
}

pub(crate) fn adaptive_max(x: &Tensor, out: &[usize], op: &str) -> Result<MaxPooled> {
    let (_, _, sizes) = batched(x, out.len(), op)?;
    let rows: Vec<_> = sizes
        .iter()
        .zip(out)
        .map(|(&n, &o)| adaptive_max_rows(n, o))
        .collect();
    let table = WindowTable::new(&rows, &sizes, x.device())?;
    max_by_table(x, &table, out)
}

/// `F.adaptive_avg_pool1d`: `out[n, c, i]` = mean of `x[n, c, floor(i*L/out) .. ceil((i+1)*L/out)]`.
///
/// Input (N, C, L), output (N, C, output_size); `output_size` may exceed L (windows then
/// repeat inputs) and may be 0 (an empty output, as torch).
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_ops::adaptive_avg_pool1d;
/// let x = Tensor::new(&[[[1f32, 2., 3., 4., 5.]]], &Device::Cpu)?;
/// let y = adaptive_avg_pool1d(&x, 2)?; // windows [0, 3) and [2, 5)
/// assert_eq!(y.to_vec3::<f32>()?, vec![vec![vec![2., 4.]]]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn adaptive_avg_pool1d(x: &Tensor, output_size: usize) -> Result<Tensor> {
    adaptive_avg(x, &[output_size], "adaptive_avg_pool1d")
}

/// `F.adaptive_avg_pool2d`: the mean over rows `[floor(i*H/H_out), ceil((i+1)*H/H_out))` and
/// columns likewise, as `M_h^T x M_w` with window matrices weighted by 1 / window length.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_ops::adaptive_avg_pool2d;
/// let x = Tensor::arange(0f32, 16., &Device::Cpu)?.reshape((1, 1, 4, 4))?;
/// let y = adaptive_avg_pool2d(&x, (1, 1))?;
/// assert_eq!(y.flatten_all()?.to_vec1::<f32>()?, vec![7.5]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn adaptive_avg_pool2d(x: &Tensor, output_size: (usize, usize)) -> Result<Tensor> {
    adaptive_avg(x, &[output_size.0, output_size.1], "adaptive_avg_pool2d")
}

/// `F.adaptive_max_pool1d`: `out[n, c, i]` = max of `x[n, c, floor(i*L/out) .. ceil((i+1)*L/out)]`;
/// ties, NaN and gradient as [`max_pool1d`](crate::max_pool1d).
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_ops::adaptive_max_pool1d;
/// let x = Tensor::new(&[[[1f32, 5., 3., 4., 2.]]], &Device::Cpu)?;
/// assert_eq!(adaptive_max_pool1d(&x, 2)?.to_vec3::<f32>()?, vec![vec![vec![5., 4.]]]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn adaptive_max_pool1d(x: &Tensor, output_size: usize) -> Result<Tensor> {
    Ok(adaptive_max(x, &[output_size], "adaptive_max_pool1d")?.values)
}

/// `F.adaptive_max_pool2d`: the max over ATen's adaptive rows and columns; ties, NaN and gradient
/// as [`max_pool2d`](crate::max_pool2d).
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_ops::adaptive_max_pool2d;
/// let x = Tensor::arange(0f32, 16., &Device::Cpu)?.reshape((1, 1, 4, 4))?;
/// let y = adaptive_max_pool2d(&x, (2, 1))?;
/// assert_eq!(y.flatten_all()?.to_vec1::<f32>()?, vec![7., 15.]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn adaptive_max_pool2d(x: &Tensor, output_size: (usize, usize)) -> Result<Tensor> {
    Ok(adaptive_max(x, &[output_size.0, output_size.1], "adaptive_max_pool2d")?.values)
}

/// [`adaptive_max_pool1d`] with torch's indices (position in L, `i64`).
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_ops::adaptive_max_pool1d_with_indices;
/// let x = Tensor::new(&[[[1f32, 5., 3., 4., 2.]]], &Device::Cpu)?;
/// let (_, i) = adaptive_max_pool1d_with_indices(&x, 2)?;
/// assert_eq!(i.to_vec3::<i64>()?, vec![vec![vec![1, 3]]]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn adaptive_max_pool1d_with_indices(
    x: &Tensor,
    output_size: usize,
) -> Result<(Tensor, Tensor)> {
    adaptive_max(x, &[output_size], "adaptive_max_pool1d_with_indices")?.with_indices()
}

/// [`adaptive_max_pool2d`] with torch's indices (`h * W + w` in the plane, `i64`).
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_ops::adaptive_max_pool2d_with_indices;
/// let x = Tensor::arange(0f32, 16., &Device::Cpu)?.reshape((1, 1, 4, 4))?;
/// let (_, i) = adaptive_max_pool2d_with_indices(&x, (2, 1))?;
/// assert_eq!(i.flatten_all()?.to_vec1::<i64>()?, vec![7, 15]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn adaptive_max_pool2d_with_indices(
    x: &Tensor,
    output_size: (usize, usize),
) -> Result<(Tensor, Tensor)> {
    adaptive_max(
        x,
        &[output_size.0, output_size.1],
        "adaptive_max_pool2d_with_indices",
    )?
    .with_indices()
}
