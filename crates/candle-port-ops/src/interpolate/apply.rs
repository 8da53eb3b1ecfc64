//! Applying one axis's resampling to a tensor, with candle ops that have a backward:
//! `index_select` (backward: `index_add`), `matmul` with a constant matrix, `broadcast_mul`.

use candle_core::{Result, Tensor};

use crate::taps::Taps;

/// `x` with dim `dim` replaced by `x.index_select(index, dim)` (candle's index_select
/// needs a contiguous source: a strided view is copied first).
pub(crate) fn select(x: &Tensor, dim: usize, index: &[u32]) -> Result<Tensor> {
    let index = Tensor::from_slice(index, index.len(), x.device())?;
    x.contiguous()?.index_select(&index, dim)
}

/// Input length per tap up to which one dense matmul beats the taps. Each tap costs an
/// `index_select`, a multiply and an add over the whole output, and its backward an
/// `index_add`, which candle 0.11 runs far slower than a matmul: measured (benches/interpolate.rs,
/// bilinear float32 forward+backward) dense was 2-5x faster up to 256 inputs and 1.3x slower
/// at 512.
const DENSE_INPUTS_PER_TAP: usize = 128;

/// Resample dim `dim` of `x`: `y[.., j, ..] = sum_t weight[t][j] * x[.., index[t][j], ..]`.
///
/// Short axes (and many taps, as in downscaling) use one matmul with the dense `(out, in)`
/// matrix; long axes with few taps sum `index_select`s scaled by the weights. The dense path
/// multiplies every input by a weight, mostly 0: a non-finite input would make its whole output
/// line NaN (0 * inf), where torch's taps spread it only to the outputs that read it, so an input
/// that is not `finite` always takes the taps, every one torch reads.
pub(crate) fn resample(x: &Tensor, dim: usize, taps: &Taps, finite: bool) -> Result<Tensor> {
    if !finite {
        taps.apply(x, dim, false)
    } else if taps.input <= DENSE_INPUTS_PER_TAP * taps.index.len() {
        dense(x, dim, taps)
    } else {
        taps.apply(x, dim, true)
    }
}

/// `matmul` with the dense matrix: `x` seen as `(before, in, after)`.
fn dense(x: &Tensor, dim: usize, taps: &Taps) -> Result<Tensor> {
    let dims = x.dims().to_vec();
    let before: usize = dims[..dim].iter().product();
    let after: usize = dims[dim + 1..].iter().product();
    let (input, output) = (taps.input, taps.output);
    let m = Tensor::from_vec(taps.matrix(), (output, input), x.device())?.to_dtype(x.dtype())?;
    let x = x.contiguous()?;
    let y = if after == 1 {
        // (before, in) @ (in, out)
        x.reshape((before, input))?.matmul(&m.t()?.contiguous()?)?
    } else if before == 1 {
        // (out, in) @ (in, after)
        m.matmul(&x.reshape((input, after))?)?
    } else if before * output * input <= before * after * (input + output) {
        // candle 0.11's CPU batched matmul mishandles a zero-stride (broadcast) operand:
        // give every batch its own copy of the matrix (cheaper than moving the data here).
        let m = m.broadcast_as((before, output, input))?.contiguous()?;
        m.matmul(&x.reshape((before, input, after))?)?
    } else {
        // A long axis over short rows: move the axis last, one 2-D matmul, move it back.
        let moved = x
            .reshape((before, input, after))?
            .transpose(1, 2)?
            .contiguous()?;
        let y = moved
            .reshape((before * after, input))?
            .matmul(&m.t()?.contiguous()?)?;
        y.reshape((before, after, output))?
            .transpose(1, 2)?
            .contiguous()?
    };
    let mut out_dims = dims;
    out_dims[dim] = output;
    y.reshape(out_dims)
}
