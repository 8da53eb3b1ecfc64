//! Source coordinates along one axis, rounded as ATen's CPU kernels round them
//! (`aten/src/ATen/native/UpSample.h`), so that every floor picks torch's sample.
//!
//! ATen computes in the input's "opmath" type: f32 for f32 input, f64 for f64. Values here are
//! carried as f64 and rounded to f32 after every step when the precision is [`Precision::F32`].

/// The arithmetic type ATen's kernels use for an input dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Precision {
    F32,
    F64,
}

impl Precision {
    /// `v` rounded to this precision.
    pub fn round(self, v: f64) -> f64 {
        match self {
            Precision::F32 => v as f32 as f64,
            Precision::F64 => v,
        }
    }

    /// `a / b` in this precision (`a`, `b` already representable).
    pub fn div(self, a: f64, b: f64) -> f64 {
        match self {
            Precision::F32 => (a as f32 / b as f32) as f64,
            Precision::F64 => a / b,
        }
    }

    /// `a * b` in this precision (the f64 product of two f32 values is exact).
    pub fn mul(self, a: f64, b: f64) -> f64 {
        self.round(a * b)
    }

    /// `a * b + c` rounded once, as ATen's FMA-contracted kernels compute it. For f32 operands
    /// of modest size the f64 product and sum are exact, so one rounding to f32 is the fused one.
    pub fn fma(self, a: f64, b: f64, c: f64) -> f64 {
        match self {
            Precision::F32 => (a * b + c) as f32 as f64,
            Precision::F64 => a.mul_add(b, c),
        }
    }
}

/// `floorf(v)`: ATen floors source coordinates after rounding them to f32, even for f64 input.
pub(crate) fn floorf(v: f64) -> i64 {
    (v as f32).floor() as i64
}

/// ATen's `area_pixel_compute_scale`: the step between output samples in input coordinates.
///
/// `(in - 1) / (out - 1)` with `align_corners` (0 when `out == 1`), else `1 / scale_factor`
/// when a scale factor reaches the kernel, else `in / out`; in precision `p`.
pub(crate) fn axis_scale(
    input: usize,
    output: usize,
    align_corners: bool,
    scale_factor: Option<f64>,
    p: Precision,
) -> f64 {
    if align_corners {
        if output > 1 {
            p.div((input - 1) as f64, (output - 1) as f64)
        } else {
            0.0
        }
    } else {
        match scale_factor {
            Some(s) if s > 0.0 => p.round(1.0 / s),
            _ => p.div(input as f64, output as f64),
        }
    }
}

/// ATen's `area_pixel_compute_source_index`: `scale * dst` with `align_corners`, else
/// `scale * (dst + 0.5) - 0.5` (fused), clamped at 0 unless `cubic`.
pub(crate) fn source_index(
    scale: f64,
    dst: usize,
    align_corners: bool,
    cubic: bool,
    p: Precision,
) -> f64 {
    if align_corners {
        p.mul(scale, dst as f64)
    } else {
        let src = p.fma(scale, dst as f64 + 0.5, -0.5);
        if !cubic && src < 0.0 {
            0.0
        } else {
            src
        }
    }
}
