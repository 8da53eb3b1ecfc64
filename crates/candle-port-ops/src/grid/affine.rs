//! `F.affine_grid` (2-D): a base grid of normalized pixel coordinates times theta.

use candle_core::{bail, DType, Result, Tensor};

/// torch's `linspace_from_neg_one`: `linspace(-1, 1, n)` (scaled by `(n - 1) / n` without
/// `align_corners`), or `[0]` for `n <= 1`.
fn linspace_from_neg_one(n: usize, align_corners: bool) -> Vec<f64> {
    if n <= 1 {
        return vec![0.0; n];
    }
    let step = 2.0 / (n - 1) as f64;
    let half = n / 2;
    (0..n)
        .map(|i| {
            // ATen's linspace: from the start below the middle, from the end above it.
            let v = if i < half {
                -1.0 + step * i as f64
            } else {
                1.0 - step * (n - 1 - i) as f64
            };
            if align_corners {
                v
            } else {
                v * (n - 1) as f64 / n as f64
            }
        })
        .collect()
}

/// `F.affine_grid` for 2-D: `grid[n, h, w] = theta[n] @ (x_w, y_h, 1)`, with `x_w` spanning
/// [-1, 1] over the W pixel centres (`align_corners`) or the pixel edges (otherwise), `y_h`
/// likewise over H.
///
/// `theta` is (N, 2, 3), `size` torch's `(N, C, H, W)`; the grid is (N, H, W, 2), for
/// [`grid_sample`](crate::grid_sample). Differentiable w.r.t. theta (one `matmul`).
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_ops::affine_grid;
/// let theta = Tensor::new(&[[[1f32, 0., 0.], [0., 1., 0.]]], &Device::Cpu)?;
/// let g = affine_grid(&theta, &[1, 3, 2, 2], true)?;
/// assert_eq!(g.flatten_all()?.to_vec1::<f32>()?, vec![-1., -1., 1., -1., -1., 1., 1., 1.]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn affine_grid(theta: &Tensor, size: &[usize], align_corners: bool) -> Result<Tensor> {
    let &[n, _, h, w] = size else {
        bail!("affine_grid: only 2-D sizes (N, C, H, W) are supported here, got {size:?}");
    };
    match theta.dtype() {
        DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {}
        other => bail!("affine_grid: expected a floating point theta, got {other:?}"),
    }
    if theta.dims() != [n, 2, 3] {
        bail!(
            "affine_grid: expected a thetas of shape [{n}, 2, 3] for size {size:?}, got {:?}",
            theta.dims()
        );
    }
    if n == 0 || h == 0 || w == 0 {
        return Tensor::zeros((n, h, w, 2), theta.dtype(), theta.device());
    }
    let (xs, ys) = (
        linspace_from_neg_one(w, align_corners),
        linspace_from_neg_one(h, align_corners),
    );
    let mut base = Vec::with_capacity(h * w * 3);
    for y in &ys {
        for x in &xs {
            base.extend_from_slice(&[*x, *y, 1.0]);
        }
    }
    let base = Tensor::from_vec(base, (h * w, 3), theta.device())?.to_dtype(theta.dtype())?;
    // (HW, 3) @ (3, 2N): plain 2-D matmul, then (N, H, W, 2).
    let grid = base.matmul(&theta.reshape((n * 2, 3))?.t()?)?;
    grid.reshape((h * w, n, 2))?
        .transpose(0, 1)?
        .contiguous()?
        .reshape((n, h, w, 2))
}
