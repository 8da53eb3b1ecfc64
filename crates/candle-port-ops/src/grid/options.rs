//! `GridSample`: the arguments of `F.grid_sample`.

/// `F.grid_sample`'s `mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum GridMode {
    /// Bilinear interpolation of the 4 neighbours (torch's default).
    #[default]
    Bilinear,
    /// The nearest pixel (ties to even, as torch's `nearbyint`); no gradient to the grid.
    Nearest,
    /// Bicubic convolution (A = -0.75) over the 4 x 4 neighbours.
    Bicubic,
}

/// `F.grid_sample`'s `padding_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum GridPadding {
    /// Taps outside the image read 0 (torch's default).
    #[default]
    Zeros,
    /// Coordinates are clipped to the image.
    Border,
    /// Coordinates are reflected at the image's border (at the pixel centres of the outer
    /// pixels with `align_corners`, else at their outer edges), then clipped.
    Reflection,
}

/// The arguments of `F.grid_sample`, torch's defaults: bilinear, zeros, `align_corners = false`.
///
/// ```
/// use candle_port_ops::{GridMode, GridPadding, GridSample};
/// let o = GridSample::new().mode(GridMode::Bicubic).padding_mode(GridPadding::Border).align_corners(true);
/// assert_eq!(o.mode, GridMode::Bicubic);
/// assert!(o.align_corners);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct GridSample {
    pub mode: GridMode,
    pub padding_mode: GridPadding,
    /// -1 and 1 are the centres of the corner pixels (`true`) or their outer edges (`false`).
    pub align_corners: bool,
}

impl GridSample {
    /// torch's defaults.
    pub fn new() -> Self {
        GridSample::default()
    }

    /// Interpolation mode.
    pub fn mode(mut self, m: GridMode) -> Self {
        self.mode = m;
        self
    }

    /// What taps outside the image read.
    pub fn padding_mode(mut self, p: GridPadding) -> Self {
        self.padding_mode = p;
        self
    }

    /// Whether -1 and 1 are the corner pixels' centres.
    pub fn align_corners(mut self, v: bool) -> Self {
        self.align_corners = v;
        self
    }
}
