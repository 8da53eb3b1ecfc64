//! What to resize to and how: [`Mode`], [`Target`], [`Interpolate`], and the rules of
//! `F.interpolate` that turn them into output sizes and the scales the kernels see.

use candle_core::{bail, Result, Tensor};

/// The resampling rule, one per `F.interpolate` `mode` string.
///
/// ```
/// use candle_port_ops::Mode;
/// assert_eq!(Mode::Bilinear.torch_name(), "bilinear");
/// assert_eq!(Mode::Bilinear.spatial_dims(), Some(2));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `"nearest"`: `src = floor(dst * scale)` (3-D to 5-D input).
    Nearest,
    /// `"nearest-exact"`: `src = floor((dst + 0.5) * scale)` (3-D to 5-D input).
    NearestExact,
    /// `"linear"`: two taps along L (3-D input only).
    Linear,
    /// `"bilinear"`: linear along H and W (4-D input only); antialias allowed.
    Bilinear,
    /// `"bicubic"`: Keys' cubic, `A = -0.75`, along H and W (4-D input only); antialias allowed.
    Bicubic,
    /// `"trilinear"`: linear along D, H and W (5-D input only).
    Trilinear,
    /// `"area"`: adaptive average pooling to the output size (3-D to 5-D input).
    Area,
}

impl Mode {
    /// The `mode=` string torch uses for this mode.
    ///
    /// ```
    /// assert_eq!(candle_port_ops::Mode::NearestExact.torch_name(), "nearest-exact");
    /// ```
    pub fn torch_name(self) -> &'static str {
        match self {
            Mode::Nearest => "nearest",
            Mode::NearestExact => "nearest-exact",
            Mode::Linear => "linear",
            Mode::Bilinear => "bilinear",
            Mode::Bicubic => "bicubic",
            Mode::Trilinear => "trilinear",
            Mode::Area => "area",
        }
    }

    /// The mode named by torch's `mode=` string, `None` for an unknown name.
    ///
    /// ```
    /// use candle_port_ops::Mode;
    /// assert_eq!(Mode::from_torch_name("area"), Some(Mode::Area));
    /// assert_eq!(Mode::from_torch_name("lanczos"), None);
    /// ```
    pub fn from_torch_name(name: &str) -> Option<Mode> {
        [
            Mode::Nearest,
            Mode::NearestExact,
            Mode::Linear,
            Mode::Bilinear,
            Mode::Bicubic,
            Mode::Trilinear,
            Mode::Area,
        ]
        .into_iter()
        .find(|m| m.torch_name() == name)
    }

    /// The only number of spatial dims the mode accepts, `None` when any of 1 to 3 is fine.
    ///
    /// ```
    /// use candle_port_ops::Mode;
    /// assert_eq!(Mode::Trilinear.spatial_dims(), Some(3));
    /// assert_eq!(Mode::Area.spatial_dims(), None);
    /// ```
    pub fn spatial_dims(self) -> Option<usize> {
        match self {
            Mode::Linear => Some(1),
            Mode::Bilinear | Mode::Bicubic => Some(2),
            Mode::Trilinear => Some(3),
            Mode::Nearest | Mode::NearestExact | Mode::Area => None,
        }
    }

    /// Whether `align_corners` may be given (torch refuses it for nearest, nearest-exact, area).
    fn interpolating(self) -> bool {
        self.spatial_dims().is_some()
    }
}

/// The output, as `F.interpolate`'s `size` or `scale_factor`: one entry per spatial dim, or a
/// single entry for all of them (torch's plain int or float).
///
/// ```
/// use candle_port_ops::Target;
/// let t = Target::Scale(vec![2.0]);
/// assert_ne!(t, Target::Size(vec![8]));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    /// Output sizes.
    Size(Vec<usize>),
    /// Scale factors: `out = floor(in * scale)`.
    Scale(Vec<f64>),
}

/// The arguments of `F.interpolate` after `input`; build with [`Interpolate::size`] or
/// [`Interpolate::scale`] and the setters, run with [`Interpolate::forward`].
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_ops::{Interpolate, Mode};
/// # fn main() -> candle_core::Result<()> {
/// let x = Tensor::arange(0f32, 12., &Device::Cpu)?.reshape((1, 1, 3, 4))?;
/// let y = Interpolate::scale(&[2.0], Mode::Bilinear).align_corners(true).forward(&x)?;
/// assert_eq!(y.dims(), &[1, 1, 6, 8]);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Interpolate {
    /// `size` or `scale_factor`.
    pub target: Target,
    /// `mode`.
    pub mode: Mode,
    /// `align_corners`; `None` is torch's default (`False` for the interpolating modes).
    pub align_corners: Option<bool>,
    /// `recompute_scale_factor`: with `Some(true)` the coordinates use `in / out` instead of
    /// `1 / scale_factor`.
    pub recompute_scale_factor: Option<bool>,
    /// `antialias` (bilinear and bicubic on 4-D input only).
    pub antialias: bool,
}

impl Interpolate {
    /// Resize to `size` (`F.interpolate(x, size=size, mode=mode)`).
    ///
    /// ```
    /// use candle_port_ops::{Interpolate, Mode, Target};
    /// assert_eq!(Interpolate::size(&[4, 6], Mode::Nearest).target, Target::Size(vec![4, 6]));
    /// ```
    pub fn size(size: &[usize], mode: Mode) -> Self {
        Self::new(Target::Size(size.to_vec()), mode)
    }

    /// Resize by `scale` (`F.interpolate(x, scale_factor=scale, mode=mode)`).
    ///
    /// ```
    /// use candle_port_ops::{Interpolate, Mode, Target};
    /// assert_eq!(Interpolate::scale(&[0.5], Mode::Area).target, Target::Scale(vec![0.5]));
    /// ```
    pub fn scale(scale: &[f64], mode: Mode) -> Self {
        Self::new(Target::Scale(scale.to_vec()), mode)
    }

    fn new(target: Target, mode: Mode) -> Self {
        Self {
            target,
            mode,
            align_corners: None,
            recompute_scale_factor: None,
            antialias: false,
        }
    }

    /// Set `align_corners` (only the interpolating modes accept it, as in torch).
    ///
    /// ```
    /// use candle_port_ops::{Interpolate, Mode};
    /// let o = Interpolate::size(&[5], Mode::Linear).align_corners(true);
    /// assert_eq!(o.align_corners, Some(true));
    /// ```
    pub fn align_corners(mut self, v: bool) -> Self {
        self.align_corners = Some(v);
        self
    }

    /// Set `recompute_scale_factor` (only meaningful with a scale factor, as in torch).
    ///
    /// ```
    /// use candle_port_ops::{Interpolate, Mode};
    /// let o = Interpolate::scale(&[1.7], Mode::Linear).recompute_scale_factor(true);
    /// assert_eq!(o.recompute_scale_factor, Some(true));
    /// ```
    pub fn recompute_scale_factor(mut self, v: bool) -> Self {
        self.recompute_scale_factor = Some(v);
        self
    }

    /// Set `antialias` (bilinear and bicubic on 4-D input).
    ///
    /// ```
    /// use candle_port_ops::{Interpolate, Mode};
    /// assert!(Interpolate::scale(&[0.5], Mode::Bicubic).antialias(true).antialias);
    /// ```
    pub fn antialias(mut self, v: bool) -> Self {
        self.antialias = v;
        self
    }

    /// `F.interpolate(x, ...)` with these arguments; see [`crate::interpolate()`].
    ///
    /// ```
    /// use candle_core::{Device, Tensor};
    /// use candle_port_ops::{Interpolate, Mode};
    /// # fn main() -> candle_core::Result<()> {
    /// let x = Tensor::ones((2, 3, 5), candle_core::DType::F64, &Device::Cpu)?;
    /// let y = Interpolate::size(&[9], Mode::Linear).forward(&x)?;
    /// assert_eq!(y.dims(), &[2, 3, 9]);
    /// # Ok(()) }
    /// ```
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        super::interpolate(x, self)
    }
}

/// The resolved call: per spatial axis the input and output size and the scale factor the
/// kernel sees (`None` when a size was given or the scale was recomputed).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Plan {
    pub inputs: Vec<usize>,
    pub outputs: Vec<usize>,
    pub scales: Vec<Option<f64>>,
    pub align_corners: bool,
}

/// Check `opts` against an input of `dims` as `F.interpolate` does and resolve the sizes:
/// `out = floor(in * scale)` for a scale factor; the scale is dropped (coordinates then use
/// `in / out`) when `recompute_scale_factor` is true or the mode is area.
pub(crate) fn plan(dims: &[usize], opts: &Interpolate) -> Result<Plan> {
    let mode = opts.mode;
    if opts.align_corners.is_some() && !mode.interpolating() {
        bail!(
            "interpolate: align_corners option can only be set with the interpolating modes: \
             linear | bilinear | bicubic | trilinear (got mode {:?})",
            mode.torch_name()
        );
    }
    let rank = dims.len();
    if !(3..=5).contains(&rank) {
        bail!(
            "interpolate: only 3D, 4D and 5D input tensors (N, C, *spatial) are supported \
             (got {rank}D, shape {dims:?}) for the modes: nearest | linear | bilinear | bicubic \
             | trilinear | area | nearest-exact (got {})",
            mode.torch_name()
        );
    }
    let spatial = rank - 2;
    if let Some(need) = mode.spatial_dims() {
        if need != spatial {
            bail!(
                "interpolate: got {rank}D input, but {} mode needs {}D input",
                mode.torch_name(),
                need + 2
            );
        }
    }
    if opts.antialias && !(matches!(mode, Mode::Bilinear | Mode::Bicubic) && rank == 4) {
        bail!(
            "interpolate: anti-alias option is restricted to bilinear and bicubic modes and \
             requires a 4-D tensor as input (got mode {:?}, {rank}D input)",
            mode.torch_name()
        );
    }
    let inputs = dims[2..].to_vec();
    let (outputs, scales) = match &opts.target {
        Target::Size(size) => {
            if opts.recompute_scale_factor == Some(true) {
                bail!(
                    "interpolate: recompute_scale_factor is not meaningful with an explicit size"
                );
            }
            (
                broadcast(size, spatial, "size", &inputs)?,
                vec![None; spatial],
            )
        }
        Target::Scale(scale) => {
            let scale = broadcast(scale, spatial, "scale_factor", &inputs)?;
            if let Some(bad) = scale.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
                bail!("interpolate: scale factors must be finite and positive, got {bad}");
            }
            let outputs = inputs
                .iter()
                .zip(&scale)
                .map(|(&i, &s)| (i as f64 * s).floor() as usize)
                .collect();
            let recompute = opts.recompute_scale_factor == Some(true) || mode == Mode::Area;
            let scales = if recompute {
                vec![None; spatial]
            } else {
                scale.into_iter().map(Some).collect()
            };
            (outputs, scales)
        }
    };
    if inputs.iter().chain(&outputs).any(|&s| s == 0) {
        bail!(
            "interpolate: input and output sizes should be greater than 0, but got input \
             (spatial) {inputs:?} and output {outputs:?}"
        );
    }
    Ok(Plan {
        inputs,
        outputs,
        scales,
        align_corners: opts.align_corners.unwrap_or(false),
    })
}

/// One entry per spatial dim; a single entry repeats (torch's int / float argument).
fn broadcast<T: Copy + std::fmt::Debug>(
    v: &[T],
    spatial: usize,
    what: &str,
    inputs: &[usize],
) -> Result<Vec<T>> {
    match v.len() {
        1 => Ok(vec![v[0]; spatial]),
        n if n == spatial => Ok(v.to_vec()),
        _ => bail!(
            "interpolate: input and output must have the same number of spatial dimensions, \
             but got input with spatial dimensions of {inputs:?} and {what} {v:?} (give one \
             entry, or one per spatial dim)"
        ),
    }
}
