//! `Conv`: the arguments of torch's (transposed) convolutions, and their two compositions.
//! A convolution is an im2col: a gather of each output position's input taps (`index_select` of
//! whole rows of a plane-major copy, one appended zero row standing for the padding) and one plain
//! 2-D `matmul` per group. A transposed convolution is a col2im: one `matmul` per group from
//! each input position to its output taps, then an `index_add` of the taps into the output
//! positions they reach. All of these have a backward in candle, so the input, the weight and the
//! bias all get torch's gradients.

use candle_core::{bail, DType, Device, Result, Tensor};

/// The arguments of `F.conv3d` / `F.conv_transpose{1,2,3}d`, one entry per spatial dim or a
/// single entry that broadcasts to every spatial dim (torch's int form).
///
/// Defaults as torch: `stride = 1`, `padding = 0`, `output_padding = 0` (transposed only),
/// `dilation = 1`, `groups = 1`.
///
/// ```
/// use candle_port_ops::Conv;
/// let c = Conv::new().stride(&[2]).padding(&[1]).output_padding(&[1]).groups(2);
/// assert_eq!(c.stride, vec![2]);
/// assert_eq!(c.groups, 2);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Conv {
    pub stride: Vec<usize>,
    pub padding: Vec<usize>,
    pub output_padding: Vec<usize>,
    pub dilation: Vec<usize>,
    pub groups: usize,
}

impl Default for Conv {
    fn default() -> Self {
        Conv::new()
    }
}

impl Conv {
    /// torch's defaults: stride 1, no padding, dilation 1, one group.
    pub fn new() -> Self {
        Conv {
            stride: vec![1],
            padding: vec![0],
            output_padding: vec![0],
            dilation: vec![1],
            groups: 1,
        }
    }

    /// Step between windows (convolution) or between input elements in the output (transposed).
    pub fn stride(mut self, s: &[usize]) -> Self {
        self.stride = s.to_vec();
        self
    }

    /// Zero padding on both sides (convolution), or the amount cropped from both sides of the
    /// full output (transposed convolution), as torch's `padding`.
    pub fn padding(mut self, p: &[usize]) -> Self {
        self.padding = p.to_vec();
        self
    }

    /// Transposed convolution only: extra size added to one side of the output (torch requires
    /// it smaller than the stride or the dilation).
    pub fn output_padding(mut self, p: &[usize]) -> Self {
        self.output_padding = p.to_vec();
        self
    }

    /// Spacing between kernel elements.
    pub fn dilation(mut self, d: &[usize]) -> Self {
        self.dilation = d.to_vec();
        self
    }

    /// Number of channel groups (input and output channels both divisible by it).
    pub fn groups(mut self, g: usize) -> Self {
        self.groups = g;
        self
    }
}

/// Whether the op is a convolution or a transposed convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Forward,
    Transposed,
}

/// One spatial axis, resolved.
struct Axis {
    input: usize,
    kernel: usize,
    stride: usize,
    padding: usize,
    dilation: usize,
    output: usize,
}

impl Axis {
    /// The input position that kernel tap `k` of output position `o` of a convolution reads,
    /// if any (none in the zero padding).
    fn source(&self, o: usize, k: usize) -> Option<usize> {
        let i = (o * self.stride + k * self.dilation) as i64 - self.padding as i64;
        (0..self.input as i64).contains(&i).then_some(i as usize)
    }
}

/// `values` as `nd` entries: one entry broadcasts, `nd` entries are taken as they are.
fn per_axis(op: &str, name: &str, values: &[usize], nd: usize) -> Result<Vec<usize>> {
    match values.len() {
        1 => Ok(vec![values[0]; nd]),
        n if n == nd => Ok(values.to_vec()),
        _ => bail!("{op}: {name} must be a single int or {nd} ints, got {values:?}"),
    }
}

fn float_dtype(op: &str, t: &Tensor, what: &str) -> Result<()> {
    match t.dtype() {
        DType::F16 | DType::BF16 | DType::F32 | DType::F64 => Ok(()),
        other => bail!("{op}: expected a floating point {what}, got {other:?}"),
    }
}

/// Checks the shapes and arguments as torch does and resolves each spatial axis.
fn axes(op: &str, kind: Kind, x: &Tensor, w: &Tensor, c: &Conv, nd: usize) -> Result<Vec<Axis>> {
    let (xd, wd) = (x.dims(), w.dims());
    if xd.len() != nd + 2 {
        bail!(
            "{op}: expected a batched {}-D input (N, C, *{nd} spatial dims), got shape {xd:?} (unsqueeze(0) an unbatched input first)",
            nd + 2
        );
    }
    if wd.len() != nd + 2 {
        bail!("{op}: expected a {}-D weight, got shape {wd:?}", nd + 2);
    }
    float_dtype(op, x, "input")?;
    if x.dtype() != w.dtype() {
        bail!(
            "{op}: input ({:?}) and weight ({:?}) dtypes differ",
            x.dtype(),
            w.dtype()
        );
    }
    let g = c.groups;
    if g == 0 {
        bail!("{op}: non-positive groups is not supported");
    }
    let cin = xd[1];
    match kind {
        Kind::Forward => {
            if wd[0] % g != 0 {
                bail!(
                    "{op}: out_channels {} must be divisible by groups {g}",
                    wd[0]
                );
            }
            if wd[1] * g != cin {
                bail!(
                    "{op}: expected weight {wd:?} with groups={g} to take {cin} input channels ({} per group), got {}",
                    cin / g.max(1),
                    wd[1] * g
                );
            }
        }
        Kind::Transposed => {
            if wd[0] != cin || cin % g != 0 {
                bail!("{op}: expected weight {wd:?} with groups={g} to have {cin} in_channels (divisible by groups) as its first dim");
            }
        }
    }
    let stride = per_axis(op, "stride", &c.stride, nd)?;
    let padding = per_axis(op, "padding", &c.padding, nd)?;
    let dilation = per_axis(op, "dilation", &c.dilation, nd)?;
    let output_padding = per_axis(op, "output_padding", &c.output_padding, nd)?;
    if stride.contains(&0) || dilation.contains(&0) {
        bail!("{op}: stride {stride:?} and dilation {dilation:?} must be positive");
    }
    if kind == Kind::Forward && output_padding.iter().any(|&p| p != 0) {
        bail!("{op}: output_padding is for transposed convolutions only");
    }
    let mut out = Vec::with_capacity(nd);
    for a in 0..nd {
        let (n, k, s, p, d, op_) = (
            xd[2 + a] as i64,
            wd[2 + a] as i64,
            stride[a] as i64,
            padding[a] as i64,
            dilation[a] as i64,
            output_padding[a] as i64,
        );
        if kind == Kind::Transposed && op_ >= s && op_ >= d {
            bail!("{op}: output padding must be smaller than either stride or dilation, but got output_padding={output_padding:?}, stride={stride:?}, dilation={dilation:?}");
        }
        let size = match kind {
            Kind::Forward => {
                let span = n + 2 * p - d * (k - 1) - 1;
                if span < 0 {
                    bail!("{op}: kernel size {:?} (dilated) can't be greater than the padded input size {xd:?}", &wd[2..]);
                }
                span / s + 1
            }
            Kind::Transposed => (n - 1) * s - 2 * p + d * (k - 1) + op_ + 1,
        };
        if size < 1 || n < 1 || k < 1 {
            bail!("{op}: input {xd:?} and weight {wd:?} give an empty output (size {size} on axis {a})");
        }
        out.push(Axis {
            input: n as usize,
            kernel: k as usize,
            stride: s as usize,
            padding: p as usize,
            dilation: d as usize,
            output: size as usize,
        });
    }
    Ok(out)
}

/// The cartesian product over the axes of `per_axis[a][position][tap]` (positions row-major,
/// then taps row-major): the flat index `sum_a value_a * stride_a` (strides of a row-major
/// array of `sizes`), or `none` where any axis has no value.
fn product_table(
    per_axis: &[Vec<Vec<Option<usize>>>],
    sizes: &[usize],
    none: usize,
    device: &Device,
) -> Result<Tensor> {
    let mut strides = vec![1usize; sizes.len()];
    for a in (0..sizes.len().saturating_sub(1)).rev() {
        strides[a] = strides[a + 1] * sizes[a + 1];
    }
    // (position, Some(flat) or None) lists, one axis at a time.
    let mut rows: Vec<Vec<Option<usize>>> = vec![vec![Some(0)]];
    for (a, table) in per_axis.iter().enumerate() {
        let mut next = Vec::with_capacity(rows.len() * table.len());
        for prefix in &rows {
            for taps in table {
                let mut row = Vec::with_capacity(prefix.len() * taps.len());
                for &p in prefix {
                    for &t in taps {
                        row.push(match (p, t) {
                            (Some(p), Some(t)) => Some(p + t * strides[a]),
                            _ => None,
                        });
                    }
                }
                next.push(row);
            }
        }
        rows = next;
    }
    if none > u32::MAX as usize {
        bail!("convolution: inputs and outputs of more than 2^32 positions are not supported");
    }
    let flat: Vec<u32> = rows
        .iter()
        .flatten()
        .map(|q| q.unwrap_or(none) as u32)
        .collect();
    let len = flat.len();
    Tensor::from_vec(flat, len, device)
}

/// For each output position and kernel tap, the flat input position it reads, or `zero` (the
/// appended zero row) where it reads padding.
fn tap_table(axes: &[Axis], zero: usize, device: &Device) -> Result<Tensor> {
    let per_axis: Vec<Vec<Vec<Option<usize>>>> = axes
        .iter()
        .map(|a| {
            (0..a.output)
                .map(|o| (0..a.kernel).map(|k| a.source(o, k)).collect())
                .collect()
        })
        .collect();
    let sizes: Vec<usize> = axes.iter().map(|a| a.input).collect();
    product_table(&per_axis, &sizes, zero, device)
}

/// For each input position and kernel tap of a transposed convolution, the flat output position
/// it adds to (`o = i*s - p + k*d`), or `dump` (a discarded row) where it falls in the cropped
/// padding.
fn target_table(axes: &[Axis], dump: usize, device: &Device) -> Result<Tensor> {
    let per_axis: Vec<Vec<Vec<Option<usize>>>> = axes
        .iter()
        .map(|a| {
            (0..a.input)
                .map(|i| {
                    (0..a.kernel)
                        .map(|k| {
                            let o = (i * a.stride + k * a.dilation) as i64 - a.padding as i64;
                            (0..a.output as i64).contains(&o).then_some(o as usize)
                        })
                        .collect()
                })
                .collect()
        })
        .collect();
    let sizes: Vec<usize> = axes.iter().map(|a| a.output).collect();
    product_table(&per_axis, &sizes, dump, device)
}

/// A convolution's weight (O, Cg, *k) as one (Cg * K, Og) matrix per group.
fn weight_matrices(w: &Tensor, groups: usize) -> Result<Vec<Tensor>> {
    let wd = w.dims();
    let k: usize = wd[2..].iter().product();
    let og = wd[0] / groups;
    (0..groups)
        .map(|g| w.narrow(0, g * og, og)?.reshape((og, wd[1] * k))?.t())
        .collect()
}

/// The convolution (or transposed convolution) of `x` (N, C, *spatial) with `w`, plus `bias`.
///
/// Convolution (im2col): `cols[n, o, (c, k)] = x[n, c, source(o, k)]` (0 where no source), then
/// per group `out[n, o, og] = cols_g @ W_g`. Backward: `index_select`'s is an `index_add` of the
/// column gradients into the input positions, `matmul`'s gives the weight gradient. Transposed
/// convolution: [`scatter_transposed`] (col2im).
pub(crate) fn convolve(
    op: &str,
    kind: Kind,
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    c: &Conv,
    nd: usize,
) -> Result<Tensor> {
    let axes = axes(op, kind, x, w, c, nd)?;
    let (n, cin) = (x.dim(0)?, x.dim(1)?);
    let g = c.groups;
    let cg = cin / g;
    let og = match kind {
        Kind::Forward => w.dim(0)? / g,
        Kind::Transposed => w.dim(1)?,
    };
    let cout = og * g;
    let k: usize = w.dims()[2..].iter().product();
    let out: Vec<usize> = axes.iter().map(|a| a.output).collect();
    let pout: usize = out.iter().product();
    let mut out_shape = vec![n, cout];
    out_shape.extend_from_slice(&out);
    if let Some(b) = bias {
        if b.dims() != [cout] {
            bail!("{op}: expected bias of shape [{cout}], got {:?}", b.dims());
        }
    }
    if n == 0 || cout == 0 {
        return Tensor::zeros(out_shape, x.dtype(), x.device());
    }
    let plane: usize = x.dims()[2..].iter().product();
    if kind == Kind::Transposed {
        return scatter_transposed(x, w, bias, &axes, g, out_shape);
    }
    let table = tap_table(&axes, plane, x.device())?;
    // Plane-major (plane + 1, N * C) so that index_select copies whole rows.
    let xt = x.reshape((n * cin, plane))?.t()?;
    let zero = Tensor::zeros((1, n * cin), x.dtype(), x.device())?;
    let xt = Tensor::cat(&[&xt, &zero], 0)?;
    let taps = xt.index_select(&table, 0)?.reshape((pout, k, n, cin))?;
    let mats = weight_matrices(w, g)?;
    let mut parts = Vec::with_capacity(g);
    for (gi, m) in mats.iter().enumerate() {
        let cols = taps
            .narrow(3, gi * cg, cg)?
            .permute((2, 0, 3, 1))?
            .contiguous()?
            .reshape((n * pout, cg * k))?;
        parts.push(cols.matmul(m)?);
    }
    let y = if parts.len() == 1 {
        parts.remove(0)
    } else {
        Tensor::cat(&parts, 1)?
    };
    let y = y.reshape((n, pout, cout))?.transpose(1, 2)?;
    let y = match bias {
        Some(b) => y.broadcast_add(&b.reshape((1, cout, 1))?)?,
        None => y,
    };
    y.contiguous()?.reshape(out_shape)
}

/// A transposed convolution as torch's col2im: per group `cols = x_g^T @ W_g` (one row per input
/// position, one column per output channel and kernel tap), then every row added at the output
/// position its tap reaches (`index_add`, whose backward is an `index_select`). No zeros are
/// multiplied: the work is that of the input, not of the stride-dilated output.
fn scatter_transposed(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    axes: &[Axis],
    g: usize,
    out_shape: Vec<usize>,
) -> Result<Tensor> {
    let (n, cin) = (x.dim(0)?, x.dim(1)?);
    let (cg, og) = (cin / g, w.dim(1)?);
    let k: usize = w.dims()[2..].iter().product();
    let pin: usize = x.dims()[2..].iter().product();
    let pout: usize = axes.iter().map(|a| a.output).product();
    let table = target_table(axes, pout, x.device())?;
    let x = x.reshape((n, cin, pin))?;
    let mut parts = Vec::with_capacity(g);
    for gi in 0..g {
        let xg = x
            .narrow(1, gi * cg, cg)?
            .transpose(1, 2)?
            .contiguous()?
            .reshape((n * pin, cg))?;
        let wg = w.narrow(0, gi * cg, cg)?.reshape((cg, og * k))?;
        let cols = xg
            .matmul(&wg)?
            .reshape((n, pin, og, k))?
            .permute((1, 3, 0, 2))?
            .contiguous()?
            .reshape((pin * k, n * og))?;
        let sums = Tensor::zeros((pout + 1, n * og), x.dtype(), x.device())?
            .index_add(&table, &cols, 0)?
            .narrow(0, 0, pout)?;
        parts.push(sums.reshape((pout, n, og))?.permute((1, 2, 0))?);
    }
    let y = if parts.len() == 1 {
        parts.remove(0)
    } else {
        Tensor::cat(&parts, 1)?
    };
    let cout = og * g;
    let y = match bias {
        Some(b) => y.broadcast_add(&b.reshape((1, cout, 1))?)?,
        None => y,
    };
    y.contiguous()?.reshape(out_shape)
}
