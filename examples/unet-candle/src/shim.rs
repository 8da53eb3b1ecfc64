//! A private stand-in for the two `candle-port-ops` functions the U-Net needs, written to the
//! crate's API contract (same names, same types) while the crate's op modules are being written.
//!
//! Once `candle-port-ops` has `interpolate` and `max_pool2d`, delete this file and the `mod shim;`
//! line in main.rs, and change the one `use crate::shim as ops;` line in model.rs to
//! `use candle_port_ops as ops;`.
//!
//! Only what the U-Net uses is here: bilinear resizing with `align_corners=false` (by scale or by
//! size) and max pooling with kernel == stride, no padding, no dilation, floor mode. Both are
//! composed of candle ops that have a backward (matmul; gather of argmax), unlike candle's own
//! `upsample_bilinear2d` (no backward) and `max_pool2d` (gradient scaled by 1/(kh*kw)).

use candle_core::{bail, Result, Tensor};

/// The interpolation mode (only bilinear in this stand-in).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Bilinear,
}

/// The output of a resize: a size or a scale factor per spatial dimension (one entry broadcasts).
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    Size(Vec<usize>),
    Scale(Vec<f64>),
}

/// `F.interpolate`'s options, as in the contract (only the fields this model uses).
#[derive(Clone, Debug, PartialEq)]
pub struct Interpolate {
    pub target: Target,
    pub mode: Mode,
    pub align_corners: Option<bool>,
}

impl Interpolate {
    /// Resize to `size` (`F.interpolate(x, size=...)`).
    pub fn size(size: &[usize], mode: Mode) -> Self {
        Self {
            target: Target::Size(size.to_vec()),
            mode,
            align_corners: None,
        }
    }

    /// Resize by `scale` (`F.interpolate(x, scale_factor=...)`, recompute_scale_factor=None).
    pub fn scale(scale: &[f64], mode: Mode) -> Self {
        Self {
            target: Target::Scale(scale.to_vec()),
            mode,
            align_corners: None,
        }
    }

    /// torch's `align_corners` (only `false` is supported here).
    pub fn align_corners(self, v: bool) -> Self {
        Self {
            align_corners: Some(v),
            ..self
        }
    }
}

/// Pooling options, as in the contract (only the kernel size is used here).
#[derive(Clone, Debug, PartialEq)]
pub struct Pool {
    pub kernel_size: Vec<usize>,
}

impl Pool {
    /// A pool with stride == kernel size; one entry broadcasts to both spatial dims.
    pub fn new(kernel_size: &[usize]) -> Self {
        Self {
            kernel_size: kernel_size.to_vec(),
        }
    }
}

fn per_dim<T: Copy>(values: &[T], what: &str) -> Result<(T, T)> {
    match values {
        [v] => Ok((*v, *v)),
        [h, w] => Ok((*h, *w)),
        _ => bail!(
            "{what}: expected 1 or 2 entries for a 4-D input, got {}",
            values.len()
        ),
    }
}

/// Bilinear resize of an NCHW tensor, equal to
/// `F.interpolate(x, size|scale_factor, mode="bilinear", align_corners=False)`.
///
/// Per axis, output index `o` reads source `s = max((o + 0.5) * r - 0.5, 0)` with
/// `r = in / out` for a size and `r = 1 / scale` for a scale factor (torch's rule), mixing
/// `x[floor(s)]` and `x[min(floor(s) + 1, in - 1)]` with weights `1 - l` and `l`, `l = s - floor(s)`.
/// As matrices: `y = A_h x A_w^T`, done as two plain 2-D matmuls (no broadcast matmul).
pub fn interpolate(x: &Tensor, opts: &Interpolate) -> Result<Tensor> {
    if opts.mode != Mode::Bilinear || opts.align_corners == Some(true) {
        bail!("the U-Net's stand-in handles only bilinear with align_corners=false: use candle-port-ops")
    }
    let (n, c, h, w) = match x.dims() {
        [n, c, h, w] => (*n, *c, *h, *w),
        dims => bail!("bilinear interpolate needs an NCHW input, got shape {dims:?}"),
    };
    let ((out_h, ratio_h), (out_w, ratio_w)) = match &opts.target {
        Target::Size(size) => {
            let (oh, ow) = per_dim(size, "size")?;
            ((oh, h as f64 / oh as f64), (ow, w as f64 / ow as f64))
        }
        Target::Scale(scale) => {
            let (sh, sw) = per_dim(scale, "scale_factor")?;
            let out = |len: usize, s: f64| (len as f64 * s).floor() as usize;
            ((out(h, sh), 1.0 / sh), (out(w, sw), 1.0 / sw))
        }
    };
    if out_h == 0 || out_w == 0 {
        bail!("bilinear interpolate: output size ({out_h}, {out_w}) must be positive")
    }
    let a_w_t = axis_weights(w, out_w, ratio_w, x)?.t()?.contiguous()?; // (w, out_w)
    let a_h_t = axis_weights(h, out_h, ratio_h, x)?.t()?.contiguous()?; // (h, out_h)
    let y = x.contiguous()?.reshape((n * c * h, w))?.matmul(&a_w_t)?; // (n c h, out_w)
    let y = y.reshape((n, c, h, out_w))?.transpose(2, 3)?.contiguous()?;
    let y = y.reshape((n * c * out_w, h))?.matmul(&a_h_t)?; // (n c out_w, out_h)
    y.reshape((n, c, out_w, out_h))?
        .transpose(2, 3)?
        .contiguous()
}

/// The (out, len) linear-interpolation matrix of one axis, in `like`'s dtype and device.
fn axis_weights(len: usize, out: usize, ratio: f64, like: &Tensor) -> Result<Tensor> {
    let mut a = vec![0f64; out * len];
    for o in 0..out {
        let src = ((o as f64 + 0.5) * ratio - 0.5).max(0.0);
        let i0 = (src.floor() as usize).min(len - 1);
        let i1 = (i0 + 1).min(len - 1);
        let l = src - i0 as f64;
        a[o * len + i0] += 1.0 - l;
        a[o * len + i1] += l;
    }
    Tensor::from_vec(a, (out, len), like.device())?.to_dtype(like.dtype())
}

/// Max pooling of an NCHW tensor with kernel == stride, equal to `F.max_pool2d(x, k)` (floor
/// mode: trailing rows/columns that do not fill a window are dropped).
///
/// `y[n,c,i,j] = max over the k_h x k_w window at (i k_h, j k_w)`, taken as a gather of the
/// window's argmax, so the whole gradient goes to the (first) maximum, as in torch.
pub fn max_pool2d(x: &Tensor, p: &Pool) -> Result<Tensor> {
    let (kh, kw) = per_dim(&p.kernel_size, "kernel_size")?;
    let (n, c, h, w) = match x.dims() {
        [n, c, h, w] => (*n, *c, *h, *w),
        dims => bail!("max_pool2d needs an NCHW input, got shape {dims:?}"),
    };
    if kh == 0 || kw == 0 || h < kh || w < kw {
        bail!("max_pool2d: kernel ({kh}, {kw}) must be positive and fit the input ({h}, {w})")
    }
    let (oh, ow) = (h / kh, w / kw);
    let windows = x
        .narrow(2, 0, oh * kh)?
        .narrow(3, 0, ow * kw)?
        .reshape((n, c, oh, kh, ow, kw))?
        .permute((0, 1, 2, 4, 3, 5))?
        .contiguous()?
        .reshape((n, c, oh, ow, kh * kw))?;
    let argmax = windows.argmax_keepdim(4)?;
    windows.gather(&argmax, 4)?.squeeze(4)
}
