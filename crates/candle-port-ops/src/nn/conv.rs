//! The convolutions as layers (`nn.Conv1d`, `nn.Conv3d`, `nn.ConvTranspose1d/2d/3d`): the weight
//! and optional bias plus the [`Conv`] arguments, and builders taking them from a
//! [`VarBuilder`] under torch's names, initialised as torch initialises them.

use candle_core::{bail, Result, Tensor};
use candle_nn::{Init, VarBuilder};

use crate::conv_transpose3d as ct3d_op;
use crate::convolution::Conv;
use crate::{conv1d as conv1d_op, conv3d as conv3d_op};
use crate::{conv_transpose1d as ct1d_op, conv_transpose2d as ct2d_op};

/// `kernel` as one entry per spatial dim (a single entry repeats, as torch's int form).
fn kernel_dims(kernel: &[usize], nd: usize) -> Result<Vec<usize>> {
    match kernel.len() {
        1 => Ok(vec![kernel[0]; nd]),
        n if n == nd => Ok(kernel.to_vec()),
        n => bail!("kernel_size: expected 1 or {nd} entries, got {n}"),
    }
}

/// The weight (and bias) of a layer from `vb`: shape `(lead, per_group, *kernel)`, torch's
/// default init (`kaiming_uniform_(a = sqrt(5))` and the bias alike: uniform in
/// `+-1 / sqrt(fan_in)`, `fan_in = per_group * prod(kernel)`).
fn weights(
    vb: &VarBuilder,
    lead: usize,
    per_group: usize,
    kernel: &[usize],
    bias: Option<usize>,
) -> Result<(Tensor, Option<Tensor>)> {
    let mut shape = vec![lead, per_group];
    shape.extend_from_slice(kernel);
    let fan_in = (per_group * kernel.iter().product::<usize>()).max(1);
    let bound = 1.0 / (fan_in as f64).sqrt();
    let init = Init::Uniform {
        lo: -bound,
        up: bound,
    };
    let weight = vb.get_with_hints(shape, "weight", init)?;
    let bias = match bias {
        Some(n) => Some(vb.get_with_hints(n, "bias", init)?),
        None => None,
    };
    Ok((weight, bias))
}

/// `in_channels` and `out_channels` must split into `groups`.
fn check_groups(op: &str, in_channels: usize, out_channels: usize, groups: usize) -> Result<()> {
    if groups == 0 || in_channels % groups != 0 || out_channels % groups != 0 {
        bail!("{op}: in_channels ({in_channels}) and out_channels ({out_channels}) must be divisible by groups ({groups})");
    }
    Ok(())
}

/// A convolution layer and its two builders (with and without bias).
macro_rules! conv_layer {
    (
        $name:ident, $op:ident = $public:literal, $build:ident, $build_no_bias:ident, $torch:literal,
        $nd:expr,
        transposed = $transposed:expr, $shape:expr, $out:expr
    ) => {
        #[doc = concat!("`nn.", $torch, "`: the weight, the optional bias and the [`Conv`] ",
            "arguments, applied by [`", $public, "`](crate::", $public, "()).")]
        ///
        #[doc = concat!("Build it from a `VarBuilder` with [`", stringify!($build), "`], or from ",
            "tensors with `new` (torch's layout: ", $torch, "'s `weight` and `bias`).")]
        ///
        /// ```
        /// use candle_core::{DType, Device, Module, Tensor};
        /// use candle_nn::{VarBuilder, VarMap};
        #[doc = concat!("use candle_port_ops::{nn::", stringify!($build), ", Conv};")]
        /// # fn main() -> candle_core::Result<()> {
        /// let map = VarMap::new();
        /// let vb = VarBuilder::from_varmap(&map, DType::F32, &Device::Cpu);
        #[doc = concat!("let layer = ", stringify!($build), "(4, 6, &[3], Conv::new().stride(&[2]), vb.pp(\"up\"))?;")]
        /// assert_eq!(map.all_vars().len(), 2); // "up.weight" and "up.bias"
        #[doc = concat!("let x = Tensor::ones(", stringify!($shape), ", DType::F32, &Device::Cpu)?;")]
        #[doc = concat!("assert_eq!(x.apply(&layer)?.dims(), &", stringify!($out), ");")]
        /// # Ok(()) }
        /// ```
        #[derive(Clone, Debug)]
        pub struct $name {
            weight: Tensor,
            bias: Option<Tensor>,
            cfg: Conv,
        }

        impl $name {
            /// The layer with these tensors (torch's shapes) and arguments.
            pub fn new(weight: Tensor, bias: Option<Tensor>, cfg: Conv) -> Self {
                Self { weight, bias, cfg }
            }

            /// The weight (torch's layout).
            pub fn weight(&self) -> &Tensor {
                &self.weight
            }

            /// The bias, if any.
            pub fn bias(&self) -> Option<&Tensor> {
                self.bias.as_ref()
            }

            /// The stride, padding, dilation and groups.
            pub fn config(&self) -> &Conv {
                &self.cfg
            }
        }

        impl candle_nn::Module for $name {
            fn forward(&self, xs: &Tensor) -> Result<Tensor> {
                $op(xs, &self.weight, self.bias.as_ref(), &self.cfg)
            }
        }

        #[doc = concat!("`nn.", $torch, "(in_channels, out_channels, kernel_size, ...)` with its ",
            "`weight` and `bias` from `vb` (torch's names and default init), as ",
            "`candle_nn::conv2d` builds a `Conv2d`; `kernel_size` has one entry or one per ",
            "spatial dim. See [`", stringify!($name), "`] for an example.")]
        pub fn $build(
            in_channels: usize,
            out_channels: usize,
            kernel_size: &[usize],
            cfg: Conv,
            vb: VarBuilder,
        ) -> Result<$name> {
            build(in_channels, out_channels, kernel_size, cfg, vb, true)
        }

        #[doc = concat!("[`", stringify!($build), "`] without a bias (torch's `bias=False`): ",
            "only `weight` is taken from `vb`.")]
        ///
        /// ```
        /// use candle_core::{DType, Device};
        /// use candle_nn::{VarBuilder, VarMap};
        #[doc = concat!("use candle_port_ops::{nn::", stringify!($build_no_bias), ", Conv};")]
        /// # fn main() -> candle_core::Result<()> {
        /// let map = VarMap::new();
        /// let vb = VarBuilder::from_varmap(&map, DType::F32, &Device::Cpu);
        #[doc = concat!("let layer = ", stringify!($build_no_bias), "(4, 6, &[3], Conv::new(), vb)?;")]
        /// assert!(layer.bias().is_none());
        /// # Ok(()) }
        /// ```
        pub fn $build_no_bias(
            in_channels: usize,
            out_channels: usize,
            kernel_size: &[usize],
            cfg: Conv,
            vb: VarBuilder,
        ) -> Result<$name> {
            build(in_channels, out_channels, kernel_size, cfg, vb, false)
        }

        fn build(
            in_channels: usize,
            out_channels: usize,
            kernel_size: &[usize],
            cfg: Conv,
            vb: VarBuilder,
            with_bias: bool,
        ) -> Result<$name> {
            check_groups($torch, in_channels, out_channels, cfg.groups)?;
            let kernel = kernel_dims(kernel_size, $nd)?;
            let bias = with_bias.then_some(out_channels);
            let (weight, bias) = if $transposed {
                weights(&vb, in_channels, out_channels / cfg.groups, &kernel, bias)?
            } else {
                weights(&vb, out_channels, in_channels / cfg.groups, &kernel, bias)?
            };
            Ok($name::new(weight, bias, cfg))
        }
    };
}

/// One module per layer, so that each has its own private `build`.
mod c1 {
    use super::*;
    conv_layer!(
        Conv1d,
        conv1d_op = "conv1d",
        conv1d,
        conv1d_no_bias,
        "Conv1d",
        1,
        transposed = false,
        (1, 4, 9),
        [1, 6, 4]
    );
}
mod c3 {
    use super::*;
    conv_layer!(
        Conv3d,
        conv3d_op = "conv3d",
        conv3d,
        conv3d_no_bias,
        "Conv3d",
        3,
        transposed = false,
        (1, 4, 5, 5, 7),
        [1, 6, 2, 2, 3]
    );
}
mod t1 {
    use super::*;
    conv_layer!(
        ConvTranspose1d,
        ct1d_op = "conv_transpose1d",
        conv_transpose1d,
        conv_transpose1d_no_bias,
        "ConvTranspose1d",
        1,
        transposed = true,
        (1, 4, 5),
        [1, 6, 11]
    );
}
mod t2 {
    use super::*;
    conv_layer!(
        ConvTranspose2d,
        ct2d_op = "conv_transpose2d",
        conv_transpose2d,
        conv_transpose2d_no_bias,
        "ConvTranspose2d",
        2,
        transposed = true,
        (1, 4, 5, 3),
        [1, 6, 11, 7]
    );
}
mod t3 {
    use super::*;
    conv_layer!(
        ConvTranspose3d,
        ct3d_op = "conv_transpose3d",
        conv_transpose3d,
        conv_transpose3d_no_bias,
        "ConvTranspose3d",
        3,
        transposed = true,
        (1, 4, 2, 5, 3),
        [1, 6, 5, 11, 7]
    );
}

pub use c1::{conv1d, conv1d_no_bias, Conv1d};
pub use c3::{conv3d, conv3d_no_bias, Conv3d};
pub use t1::{conv_transpose1d, conv_transpose1d_no_bias, ConvTranspose1d};
pub use t2::{conv_transpose2d, conv_transpose2d_no_bias, ConvTranspose2d};
pub use t3::{conv_transpose3d, conv_transpose3d_no_bias, ConvTranspose3d};
