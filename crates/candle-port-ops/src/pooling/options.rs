//! `Pool`: the arguments of torch's max / average pooling, and their checks and output sizes.

use candle_core::{bail, Result};

/// The arguments of `F.max_pool{1,2}d` / `F.avg_pool{1,2}d`, one entry per spatial dim or a
/// single entry that broadcasts to every spatial dim (torch's int form).
///
/// Defaults as torch: `stride = kernel_size` (`None`), `padding = 0`, `dilation = 1`,
/// `ceil_mode = false`, `count_include_pad = true`, no `divisor_override`.
/// `dilation` is for max pooling only; `count_include_pad` and `divisor_override` for average
/// pooling only (`divisor_override` for 2-D, as torch's `avg_pool1d` has none).
///
/// ```
/// use candle_port_ops::Pool;
/// let p = Pool::new(&[3]).stride(&[2]).padding(&[1]).ceil_mode(true);
/// assert_eq!(p.kernel_size, vec![3]);
/// assert_eq!(p.stride, Some(vec![2]));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Pool {
    pub kernel_size: Vec<usize>,
    /// `None` (or an empty list, as torch's `stride=[]`) means `kernel_size`.
    pub stride: Option<Vec<usize>>,
    pub padding: Vec<usize>,
    pub dilation: Vec<usize>,
    pub ceil_mode: bool,
    pub count_include_pad: bool,
    pub divisor_override: Option<usize>,
}

impl Pool {
    /// A window of `kernel_size` with torch's defaults for everything else.
    pub fn new(kernel_size: &[usize]) -> Self {
        Pool {
            kernel_size: kernel_size.to_vec(),
            stride: None,
            padding: vec![0],
            dilation: vec![1],
            ceil_mode: false,
            count_include_pad: true,
            divisor_override: None,
        }
    }

    /// Step between windows.
    pub fn stride(mut self, s: &[usize]) -> Self {
        self.stride = Some(s.to_vec());
        self
    }

    /// Implicit padding on both sides (-inf for max pooling, zeros for average pooling); at
    /// most half the kernel size, as torch requires.
    pub fn padding(mut self, p: &[usize]) -> Self {
        self.padding = p.to_vec();
        self
    }

    /// Spacing between window elements (max pooling only).
    pub fn dilation(mut self, d: &[usize]) -> Self {
        self.dilation = d.to_vec();
        self
    }

    /// Round the output size up instead of down (the last window must still start inside the
    /// input or the left padding, as torch's).
    pub fn ceil_mode(mut self, v: bool) -> Self {
        self.ceil_mode = v;
        self
    }

    /// Average pooling: count the zero padding in the divisor (torch's default `true`).
    pub fn count_include_pad(mut self, v: bool) -> Self {
        self.count_include_pad = v;
        self
    }

    /// Average pooling (2-D): divide every window sum by `d` instead.
    pub fn divisor_override(mut self, d: usize) -> Self {
        self.divisor_override = Some(d);
        self
    }
}

/// Which family checks the arguments: max pooling has dilation, average pooling a divisor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Max,
    Avg,
}

/// The resolved arguments of one spatial axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Axis {
    pub input: usize,
    pub kernel: usize,
    pub stride: usize,
    pub padding: usize,
    pub dilation: usize,
    pub output: usize,
}

impl Axis {
    /// First input position of window `o` (negative in the left padding).
    pub fn start(&self, o: usize) -> i64 {
        (o * self.stride) as i64 - self.padding as i64
    }
}

/// `values` as `nd` entries: one entry broadcasts, `nd` entries are taken as they are.
fn per_axis(op: &str, name: &str, values: &[usize], nd: usize) -> Result<Vec<usize>> {
    match values.len() {
        1 => Ok(vec![values[0]; nd]),
        n if n == nd => Ok(values.to_vec()),
        _ if nd == 1 => bail!("{op}: {name} must be a single int, got {values:?}"),
        _ => bail!(
            "{op}: {name} must either be a single int, or a tuple of {nd} ints, got {values:?}"
        ),
    }
}

/// torch's `pooling_output_shape`: `floor((n + 2p - d(k-1) - 1 + (ceil ? s-1 : 0)) / s) + 1`,
/// less one in ceil mode when the last window would start past the input and left padding.
fn output_size(n: usize, k: usize, s: usize, p: usize, d: usize, ceil: bool) -> i64 {
    let (n, k, s, p, d) = (n as i64, k as i64, s as i64, p as i64, d as i64);
    let num = n + 2 * p - d * (k - 1) - 1 + if ceil { s - 1 } else { 0 };
    let mut out = num.div_euclid(s) + 1;
    if ceil && (out - 1) * s >= n + p {
        out -= 1;
    }
    out
}

impl Pool {
    /// Checks the arguments as torch does for `op` on spatial sizes `input` and resolves them
    /// per axis (with the output size).
    pub(crate) fn axes(&self, op: &str, kind: Kind, input: &[usize]) -> Result<Vec<Axis>> {
        let nd = input.len();
        let kernel = per_axis(op, "kernel_size", &self.kernel_size, nd)?;
        let stride = match &self.stride {
            Some(s) if !s.is_empty() => per_axis(op, "stride", s, nd)?,
            _ => kernel.clone(),
        };
        let padding = per_axis(op, "padding", &self.padding, nd)?;
        let dilation = per_axis(op, "dilation", &self.dilation, nd)?;
        if kernel.contains(&0) {
            bail!("{op}: kernel size should be greater than zero, but got kernel_size={kernel:?}");
        }
        if stride.contains(&0) {
            bail!("{op}: stride should not be zero, got stride={stride:?}");
        }
        if dilation.contains(&0) {
            bail!("{op}: dilation should be greater than zero, but got dilation={dilation:?}");
        }
        if kind == Kind::Avg && dilation.iter().any(|&d| d != 1) {
            bail!("{op}: average pooling has no dilation (torch's avg_pool takes none), got dilation={dilation:?}");
        }
        if kind == Kind::Avg && self.divisor_override == Some(0) {
            bail!("{op}: divisor must be not zero (divisor_override=0)");
        }
        for (&k, &p) in kernel.iter().zip(&padding) {
            if p > k / 2 {
                bail!(
                    "{op}: pad should be smaller than or equal to half of kernel size, but got padding={padding:?} and kernel_size={kernel:?}"
                );
            }
        }
        let mut axes = Vec::with_capacity(nd);
        let mut outputs = Vec::with_capacity(nd);
        for i in 0..nd {
            let out = output_size(
                input[i],
                kernel[i],
                stride[i],
                padding[i],
                dilation[i],
                self.ceil_mode,
            );
            outputs.push(out);
            axes.push(Axis {
                input: input[i],
                kernel: kernel[i],
                stride: stride[i],
                padding: padding[i],
                dilation: dilation[i],
                output: out.max(0) as usize,
            });
        }
        if outputs.iter().any(|&o| o < 1) {
            bail!("{op}: given input size {input:?}, calculated output size {outputs:?}: output size is too small");
        }
        Ok(axes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceil_mode_drops_a_window_starting_in_the_right_padding() {
        // torch: max_pool1d(len 5, k=2, s=2, p=1, ceil) has 3 windows, not 4.
        assert_eq!(output_size(5, 2, 2, 1, 1, true), 3);
        assert_eq!(output_size(5, 2, 2, 1, 1, false), 3);
        assert_eq!(output_size(6, 3, 2, 0, 1, true), 3);
        assert_eq!(output_size(6, 3, 2, 0, 1, false), 2);
    }
}
