//! The pools as layers: `nn.MaxPool2d(...)` is `MaxPool2d::new(Pool::new(&[k])...)`, the
//! adaptive ones take their output size. They hold no weights.

use candle_core::{Result, Tensor};

use crate::pooling::{
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d, adaptive_max_pool2d, avg_pool1d,
    avg_pool2d, max_pool1d, max_pool2d, Pool,
};
use crate::volumetric::{adaptive_avg_pool3d, adaptive_max_pool3d, avg_pool3d, max_pool3d};

/// A pool with a window: `new(Pool)` and a `Module` calling `$op`.
macro_rules! window_pool {
    ($name:ident, $op:ident, $torch:literal, $shape:expr, $out:expr) => {
        #[doc = concat!("`nn.", $torch, "`: [`", stringify!($op), "`](crate::", stringify!($op),
            ") with fixed arguments, as a [`candle_nn::Module`].")]
        ///
        /// ```
        /// use candle_core::{DType, Device, Module, Tensor};
        #[doc = concat!("use candle_port_ops::{nn::", stringify!($name), ", Pool};")]
        /// # fn main() -> candle_core::Result<()> {
        #[doc = concat!("let pool = ", stringify!($name), "::new(Pool::new(&[2]));")]
        #[doc = concat!("let x = Tensor::ones(", stringify!($shape), ", DType::F32, &Device::Cpu)?;")]
        #[doc = concat!("assert_eq!(x.apply(&pool)?.dims(), &", stringify!($out), ");")]
        /// # Ok(()) }
        /// ```
        #[derive(Clone, Debug, PartialEq)]
        pub struct $name {
            pool: Pool,
        }

        impl $name {
            /// The layer pooling with `pool`'s window, stride, padding and flags.
            pub fn new(pool: Pool) -> Self {
                Self { pool }
            }

            /// The pool's arguments.
            pub fn pool(&self) -> &Pool {
                &self.pool
            }
        }

        impl candle_nn::Module for $name {
            fn forward(&self, xs: &Tensor) -> Result<Tensor> {
                $op(xs, &self.pool)
            }
        }
    };
}

window_pool!(MaxPool1d, max_pool1d, "MaxPool1d", (1, 2, 8), [1, 2, 4]);
window_pool!(
    MaxPool2d,
    max_pool2d,
    "MaxPool2d",
    (1, 2, 8, 6),
    [1, 2, 4, 3]
);
window_pool!(
    MaxPool3d,
    max_pool3d,
    "MaxPool3d",
    (1, 2, 4, 8, 6),
    [1, 2, 2, 4, 3]
);
window_pool!(AvgPool1d, avg_pool1d, "AvgPool1d", (1, 2, 8), [1, 2, 4]);
window_pool!(
    AvgPool2d,
    avg_pool2d,
    "AvgPool2d",
    (1, 2, 8, 6),
    [1, 2, 4, 3]
);
window_pool!(
    AvgPool3d,
    avg_pool3d,
    "AvgPool3d",
    (1, 2, 4, 8, 6),
    [1, 2, 2, 4, 3]
);

/// An adaptive pool: `new(output_size)` and a `Module` calling `$op`.
macro_rules! adaptive_pool {
    ($name:ident, $op:ident, $torch:literal, $size:ty, $new:expr, $shape:expr, $out:expr) => {
        #[doc = concat!("`nn.", $torch, "`: [`", stringify!($op), "`](crate::", stringify!($op),
            ") to a fixed output size, as a [`candle_nn::Module`].")]
        ///
        /// ```
        /// use candle_core::{DType, Device, Module, Tensor};
        #[doc = concat!("use candle_port_ops::nn::", stringify!($name), ";")]
        /// # fn main() -> candle_core::Result<()> {
        #[doc = concat!("let pool = ", stringify!($name), "::new(", stringify!($new), ");")]
        #[doc = concat!("let x = Tensor::ones(", stringify!($shape), ", DType::F32, &Device::Cpu)?;")]
        #[doc = concat!("assert_eq!(x.apply(&pool)?.dims(), &", stringify!($out), ");")]
        /// # Ok(()) }
        /// ```
        #[derive(Clone, Debug, PartialEq)]
        pub struct $name {
            output_size: $size,
        }

        impl $name {
            /// The layer pooling to `output_size` (torch's `output_size`).
            pub fn new(output_size: $size) -> Self {
                Self { output_size }
            }

            /// The output size.
            pub fn output_size(&self) -> $size {
                self.output_size
            }
        }

        impl candle_nn::Module for $name {
            fn forward(&self, xs: &Tensor) -> Result<Tensor> {
                $op(xs, self.output_size)
            }
        }
    };
}

type Size2 = (usize, usize);
type Size3 = (usize, usize, usize);

adaptive_pool!(
    AdaptiveAvgPool1d,
    adaptive_avg_pool1d,
    "AdaptiveAvgPool1d",
    usize,
    3,
    (1, 2, 7),
    [1, 2, 3]
);
adaptive_pool!(
    AdaptiveAvgPool2d,
    adaptive_avg_pool2d,
    "AdaptiveAvgPool2d",
    Size2,
    (3, 1),
    (1, 2, 7, 5),
    [1, 2, 3, 1]
);
adaptive_pool!(
    AdaptiveAvgPool3d,
    adaptive_avg_pool3d,
    "AdaptiveAvgPool3d",
    Size3,
    (1, 3, 2),
    (1, 2, 4, 7, 5),
    [1, 2, 1, 3, 2]
);
adaptive_pool!(
    AdaptiveMaxPool1d,
    adaptive_max_pool1d,
    "AdaptiveMaxPool1d",
    usize,
    3,
    (1, 2, 7),
    [1, 2, 3]
);
adaptive_pool!(
    AdaptiveMaxPool2d,
    adaptive_max_pool2d,
    "AdaptiveMaxPool2d",
    Size2,
    (3, 1),
    (1, 2, 7, 5),
    [1, 2, 3, 1]
);
adaptive_pool!(
    AdaptiveMaxPool3d,
    adaptive_max_pool3d,
    "AdaptiveMaxPool3d",
    Size3,
    (1, 3, 2),
    (1, 2, 4, 7, 5),
    [1, 2, 1, 3, 2]
);
