//! `grid_sample` (2-D): source coordinates and their gradient factors on the host, taps read by
//! one `index_select`, weights as polynomials of the fractional parts.

use candle_core::{bail, DType, Result, Tensor};

use super::options::{GridMode, GridPadding, GridSample};

/// torch's bicubic convolution constant.
const A: f64 = -0.75;

/// One spatial axis of the sampled image.
#[derive(Clone, Copy)]
struct Axis {
    size: usize,
    align: bool,
    padding: GridPadding,
    /// Round host values to f32 after each step, as torch computes in the input's dtype.
    f32: bool,
}

impl Axis {
    fn round(&self, v: f64) -> f64 {
        if self.f32 {
            v as f32 as f64
        } else {
            v
        }
    }

    /// torch's unnormalize: `(g + 1) * (size - 1) / 2` with `align_corners`, else
    /// `(g + 1) * size / 2 - 0.5`; with its derivative.
    fn unnormalize(&self, g: f64) -> (f64, f64) {
        let n = self.size as f64;
        if self.align {
            let sf = self.round((n - 1.0) / 2.0);
            (self.round(self.round(g + 1.0) * sf), sf)
        } else {
            let sf = n / 2.0;
            (self.round(self.round(self.round(g + 1.0) * sf) - 0.5), sf)
        }
    }

    /// torch's `clip_coordinates` with its gradient factor: 1 strictly inside `(0, size - 1)`,
    /// 0 at and past the borders.
    fn clip(&self, c: f64) -> (f64, f64) {
        let max = (self.size - 1) as f64;
        if c <= 0.0 {
            (0.0, 0.0)
        } else if c >= max {
            (max, 0.0)
        } else {
            (c, 1.0)
        }
    }

    /// torch's `reflect_coordinates` between `twice_low / 2` and `twice_high / 2`, with its
    /// gradient factor (the sign of the reflection).
    fn reflect(&self, c: f64, twice_low: i64, twice_high: i64) -> (f64, f64) {
        if twice_low == twice_high {
            return (0.0, 0.0);
        }
        let min = twice_low as f64 / 2.0;
        let span = (twice_high - twice_low) as f64 / 2.0;
        let shifted = self.round(c - min);
        let sign = if shifted < 0.0 { -1.0 } else { 1.0 };
        let a = shifted.abs();
        let extra = a % span;
        let flips = (a / span).floor();
        if flips % 2.0 == 0.0 {
            (self.round(extra + min), sign)
        } else {
            (self.round(self.round(span - extra) + min), -sign)
        }
    }

    /// torch's `compute_coordinates`: the padding mode applied to a coordinate, with its
    /// gradient factor.
    fn pad(&self, c: f64) -> (f64, f64) {
        let n = self.size as i64;
        match self.padding {
            GridPadding::Zeros => (c, 1.0),
            GridPadding::Border => self.clip(c),
            GridPadding::Reflection => {
                let (r, m) = if self.align {
                    self.reflect(c, 0, 2 * (n - 1))
                } else {
                    self.reflect(c, -1, 2 * n - 1)
                };
                let (v, m2) = self.clip(r);
                (v, m * m2)
            }
        }
    }

    /// The integer position `q` as an in-bound index, if it is one.
    fn index(&self, q: f64) -> Option<usize> {
        (q.is_finite() && q >= 0.0 && q < self.size as f64).then_some(q as usize)
    }
}

/// `values` as a (len, 1) column of `dtype`.
fn column(values: Vec<f64>, like: &Tensor) -> Result<Tensor> {
    let n = values.len();
    Tensor::from_vec(values, (n, 1), like.device())?.to_dtype(like.dtype())
}

/// `(c - c.detach()) * factor + value`: `value` exactly, with gradient `factor` w.r.t. `c`.
fn straight_through(c: &Tensor, factor: Vec<f64>, value: Vec<f64>) -> Result<Tensor> {
    let zero = (c - c.detach())?;
    zero.broadcast_mul(&column(factor, c)?)?
        .broadcast_add(&column(value, c)?)
}

/// torch's cubic convolution weights of the 4 taps at `t - 1, t, t + 1, t + 2` (t in [0, 1)).
///
/// Each weight is its value at `t` (computed without gradient) plus `(t - t.detach())` times its
/// derivative, so the gradient w.r.t. `t` is one product with the derivative polynomial, as
/// torch's backward computes it (a chain of products would turn an infinite input value into
/// `inf * 0 = NaN` where torch's gradient is infinite).
fn cubic_coefficients(t: &Tensor) -> Result<[Tensor; 4]> {
    let td = t.detach();
    let delta = (t - &td)?;
    // ((A + 2) x - (A + 3)) x x + 1 for |x| <= 1; ((A x - 5A) x + 8A) x - 4A for 1 < |x| < 2.
    let near = |x: &Tensor| -> Result<Tensor> {
        (x.affine(A + 2.0, -(A + 3.0))? * x)?
            .mul(x)?
            .affine(1.0, 1.0)
    };
    let far = |x: &Tensor| -> Result<Tensor> {
        let y = (x.affine(A, -5.0 * A)? * x)?.affine(1.0, 8.0 * A)?;
        (y * x)?.affine(1.0, -4.0 * A)
    };
    // Their derivatives: 3(A + 2) x^2 - 2(A + 3) x and 3A x^2 - 10A x + 8A.
    let near_d =
        |x: &Tensor| -> Result<Tensor> { x.affine(3.0 * (A + 2.0), -2.0 * (A + 3.0))? * x };
    let far_d = |x: &Tensor| -> Result<Tensor> {
        (x.affine(3.0 * A, -10.0 * A)? * x)?.affine(1.0, 8.0 * A)
    };
    let (t1, u, u1) = (
        td.affine(1.0, 1.0)?,
        td.affine(-1.0, 1.0)?,
        td.affine(-1.0, 2.0)?,
    );
    let with_grad = |value: Tensor, slope: Tensor| -> Result<Tensor> { value + (&delta * slope)? };
    Ok([
        with_grad(far(&t1)?, far_d(&t1)?)?,
        with_grad(near(&td)?, near_d(&td)?)?,
        with_grad(near(&u)?, near_d(&u)?.neg()?)?,
        with_grad(far(&u1)?, far_d(&u1)?.neg()?)?,
    ])
}

/// `F.grid_sample` for 4-D input: `out[n, c, h, w]` = `input[n, c]` interpolated at the grid's
/// point `grid[n, h, w] = (x, y)`, x and y in [-1, 1] across the image's width and height.
///
/// Input (N, C, H_in, W_in), grid (N, H_out, W_out, 2) of the same float dtype, output (N, C,
/// H_out, W_out). Modes bilinear, nearest (ties to even) and bicubic (A = -0.75); padding
/// zeros, border and reflection; `align_corners` as torch's. Differentiable w.r.t. the input
/// and (bilinear, bicubic) the grid, with torch's gradients, the clip's and the reflection's
/// included; nearest gives the grid no gradient (torch's is zero).
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_ops::{grid_sample, GridSample};
/// let x = Tensor::new(&[[[[0f32, 1.], [2., 3.]]]], &Device::Cpu)?;
/// let grid = Tensor::new(&[[[[0f32, 0.], [1., -1.]]]], &Device::Cpu)?; // centre, top right
/// let y = grid_sample(&x, &grid, &GridSample::new().align_corners(true))?;
/// assert_eq!(y.flatten_all()?.to_vec1::<f32>()?, vec![1.5, 1.]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn grid_sample(x: &Tensor, grid: &Tensor, o: &GridSample) -> Result<Tensor> {
    let (n, c, h, w) = match x.dims() {
        &[n, c, h, w] => (n, c, h, w),
        d => bail!("grid_sample: expected a 4-D input (N, C, H, W) (5-D is not supported here), got shape {d:?}"),
    };
    let (ho, wo) = match grid.dims() {
        &[gn, ho, wo, 2] if gn == n => (ho, wo),
        d => bail!("grid_sample: expected a grid of shape [{n}, H_out, W_out, 2] for input {:?}, got {d:?}", x.dims()),
    };
    let f32 = match x.dtype() {
        DType::F64 => false,
        DType::F16 | DType::BF16 | DType::F32 => true,
        other => bail!("grid_sample: expected a floating point input, got {other:?}"),
    };
    if grid.dtype() != x.dtype() {
        bail!(
            "grid_sample: expected grid and input to have the same dtype, got {:?} and {:?}",
            grid.dtype(),
            x.dtype()
        );
    }
    if h == 0 || w == 0 {
        bail!(
            "grid_sample: expected input with non-empty spatial dims, got {:?}",
            x.dims()
        );
    }
    let np = n * ho * wo;
    if np == 0 || c == 0 {
        return Tensor::zeros((n, c, ho, wo), x.dtype(), x.device());
    }
    let plane = h * w;
    let zero_row = n * plane;
    if zero_row >= u32::MAX as usize {
        bail!("grid_sample: inputs of more than 2^32 pixels are not supported");
    }
    let axis = |size| Axis {
        size,
        align: o.align_corners,
        padding: o.padding_mode,
        f32,
    };
    let (ax, ay) = (axis(w), axis(h));
    let g = grid.reshape((np, 2))?;
    let (gx, gy) = (g.narrow(1, 0, 1)?, g.narrow(1, 1, 1)?);
    let host = |t: &Tensor| -> Result<Vec<f64>> {
        t.detach()
            .to_dtype(DType::F64)?
            .flatten_all()?
            .to_vec1::<f64>()
    };
    let (hx, hy) = (host(&gx)?, host(&gy)?);
    // Rows (N * H * W + 1, C): channel rows of every pixel, then a zero row.
    let rows = Tensor::cat(
        &[
            &x.permute((0, 2, 3, 1))?.reshape((zero_row, c))?,
            &Tensor::zeros((1, c), x.dtype(), x.device())?,
        ],
        0,
    )?;
    let batch = |p: usize| (p / (ho * wo)) * plane;
    // The flat row of (qx, qy) in point p's image, or the zero row.
    let tap = |p: usize, qx: f64, qy: f64| -> u32 {
        match (ax.index(qx), ay.index(qy)) {
            (Some(ix), Some(iy)) => (batch(p) + iy * w + ix) as u32,
            _ => zero_row as u32,
        }
    };
    let gather = |index: Vec<u32>, taps: usize| -> Result<Vec<Tensor>> {
        let len = index.len();
        let v = rows
            .index_select(&Tensor::from_vec(index, len, x.device())?, 0)?
            .reshape((taps, np, c))?;
        (0..taps).map(|t| v.get(t)).collect()
    };
    let out = match o.mode {
        GridMode::Nearest => {
            let mut index = Vec::with_capacity(np);
            for p in 0..np {
                let cx = ax.pad(ax.unnormalize(hx[p]).0).0;
                let cy = ay.pad(ay.unnormalize(hy[p]).0).0;
                index.push(tap(p, cx.round_ties_even(), cy.round_ties_even()));
            }
            gather(index, 1)?.remove(0)
        }
        GridMode::Bilinear => {
            // Coordinates after padding, their floors, fractional parts and gradient factors.
            let coords = |a: &Axis, hv: &[f64]| {
                let mut floor = Vec::with_capacity(np);
                let (mut frac, mut factor) = (Vec::with_capacity(np), Vec::with_capacity(np));
                for &gv in hv {
                    let (u, m1) = a.unnormalize(gv);
                    let (v, m2) = a.pad(u);
                    let f = v.floor();
                    floor.push(f);
                    frac.push(v - f);
                    factor.push(m1 * m2);
                }
                (floor, frac, factor)
            };
            let (x0, fx, mx) = coords(&ax, &hx);
            let (y0, fy, my) = coords(&ay, &hy);
            let mut index = Vec::with_capacity(4 * np);
            for (dx, dy) in [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0)] {
                index.extend((0..np).map(|p| tap(p, x0[p] + dx, y0[p] + dy)));
            }
            let v = gather(index, 4)?;
            // torch: w = x - x_w, e = 1 - w, n = y - y_n, s = 1 - n; nw = s e, ne = s w, ...
            let we = straight_through(&gx, mx, fx)?;
            let ns = straight_through(&gy, my, fy)?;
            let (e, s) = (we.affine(-1.0, 1.0)?, ns.affine(-1.0, 1.0)?);
            let weights = [(&s * &e)?, (&s * &we)?, (&ns * &e)?, (&ns * &we)?];
            let mut acc = v[0].broadcast_mul(&weights[0])?;
            for (val, wt) in v.iter().zip(&weights).skip(1) {
                acc = (acc + val.broadcast_mul(wt)?)?;
            }
            acc
        }
        GridMode::Bicubic => {
            // Unpadded coordinates; the padding applies to each integer tap.
            let coords = |a: &Axis, hv: &[f64]| {
                let mut floor = Vec::with_capacity(np);
                let (mut frac, mut factor) = (Vec::with_capacity(np), Vec::with_capacity(np));
                for &gv in hv {
                    let (u, m) = a.unnormalize(gv);
                    let f = u.floor();
                    floor.push(f);
                    frac.push(u - f);
                    factor.push(m);
                }
                (floor, frac, factor)
            };
            let (x0, fx, mx) = coords(&ax, &hx);
            let (y0, fy, my) = coords(&ay, &hy);
            let mut index = Vec::with_capacity(16 * np);
            for i in 0..4 {
                for j in 0..4 {
                    index.extend((0..np).map(|p| {
                        let qx = ax.pad(x0[p] - 1.0 + j as f64).0;
                        let qy = ay.pad(y0[p] - 1.0 + i as f64).0;
                        tap(p, qx, qy)
                    }));
                }
            }
            let v = gather(index, 16)?;
            let cx = cubic_coefficients(&straight_through(&gx, mx, fx)?)?;
            let cy = cubic_coefficients(&straight_through(&gy, my, fy)?)?;
            let mut acc: Option<Tensor> = None;
            for i in 0..4 {
                let mut row = v[4 * i].broadcast_mul(&cx[0])?;
                for j in 1..4 {
                    row = (row + v[4 * i + j].broadcast_mul(&cx[j])?)?;
                }
                let term = row.broadcast_mul(&cy[i])?;
                acc = Some(match acc {
                    Some(a) => (a + term)?,
                    None => term,
                });
            }
            match acc {
                Some(a) => a,
                None => bail!("grid_sample: no taps"),
            }
        }
    };
    out.reshape((n, ho, wo, c))?
        .permute((0, 3, 1, 2))?
        .contiguous()
}
