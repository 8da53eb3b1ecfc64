//! Input checks shared by every pool: batched layout, non-empty spatial dims, float dtype.

use candle_core::{bail, DType, Result, Tensor};

/// The spatial dims' names, for messages.
fn layout(nd: usize) -> &'static str {
    match nd {
        1 => "(N, C, L)",
        2 => "(N, C, H, W)",
        _ => "(N, C, D, H, W)",
    }
}

/// `(n, c, spatial sizes)` of a batched `nd`-D pooling input, or torch-like errors.
pub(crate) fn batched(x: &Tensor, nd: usize, op: &str) -> Result<(usize, usize, Vec<usize>)> {
    let dims = x.dims();
    if dims.len() != nd + 2 {
        bail!(
            "{op}: expected a {}-D {} input, got shape {dims:?} (torch also takes an unbatched {}-D input: unsqueeze(0) it first)",
            nd + 2,
            layout(nd),
            nd + 1
        );
    }
    if dims[2..].contains(&0) {
        bail!(
            "{op}: expected input with non-zero spatial dims {}, got shape {dims:?}",
            layout(nd)
        );
    }
    match x.dtype() {
        DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {}
        other => {
            bail!("{op}: expected a floating point input (f16, bf16, f32 or f64), got {other:?}")
        }
    }
    Ok((dims[0], dims[1], dims[2..].to_vec()))
}

/// `(n, c, *spatial)` as a shape vector.
pub(crate) fn shape(n: usize, c: usize, spatial: &[usize]) -> Vec<usize> {
    let mut s = vec![n, c];
    s.extend_from_slice(spatial);
    s
}
