//! `RmsNorm`: candle-nn's layer, whose forward always takes the differentiable path.

use candle_core::{Module, Result, Tensor};
use candle_nn::{LayerNormConfig, VarBuilder};

use super::layer::{layer_norm, LayerNorm};

/// Root-mean-square normalization over the last dimension, as `candle_nn::RmsNorm`, but
/// differentiable: `x / sqrt(mean(x^2) + eps) * weight` (torch's `nn.RMSNorm`).
///
/// ```
/// use candle_core::{DType, Device, Module, Tensor, Var};
/// use candle_port_ops::norm::RmsNorm;
/// let w = Var::ones(4, DType::F32, &Device::Cpu)?;
/// let norm = RmsNorm::new(w.as_tensor().clone(), 1e-6);
/// let y = norm.forward(&Tensor::new(&[[1f32, -2., 3., 0.5]], &Device::Cpu)?)?;
/// assert!(y.sum_all()?.backward()?.get(&w).is_some()); // candle-nn's: None
/// # Ok::<(), candle_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct RmsNorm(LayerNorm);

impl RmsNorm {
    /// A layer of the given weight, as `candle_nn::RmsNorm::new`.
    ///
    /// ```
    /// use candle_core::{DType, Device, Tensor};
    /// let w = Tensor::ones(4, DType::F32, &Device::Cpu)?;
    /// assert_eq!(candle_port_ops::norm::RmsNorm::new(w, 1e-6).eps(), 1e-6);
    /// # Ok::<(), candle_core::Error>(())
    /// ```
    pub fn new(weight: Tensor, eps: f64) -> Self {
        Self(LayerNorm::rms_norm(weight, eps))
    }

    /// The [`LayerNorm`] this is (no mean removal, no bias).
    ///
    /// ```
    /// use candle_core::{DType, Device, Tensor};
    /// let w = Tensor::ones(4, DType::F32, &Device::Cpu)?;
    /// let layer = candle_port_ops::norm::RmsNorm::new(w, 1e-6).into_inner();
    /// assert!(!layer.remove_mean() && layer.bias().is_none());
    /// # Ok::<(), candle_core::Error>(())
    /// ```
    pub fn into_inner(self) -> LayerNorm {
        self.0
    }

    /// The scale, of the normalized dimension's length.
    ///
    /// ```
    /// use candle_core::{DType, Device, Tensor};
    /// let w = Tensor::ones(4, DType::F32, &Device::Cpu)?;
    /// assert_eq!(candle_port_ops::norm::RmsNorm::new(w, 1e-6).weight().dims(), &[4]);
    /// # Ok::<(), candle_core::Error>(())
    /// ```
    pub fn weight(&self) -> &Tensor {
        self.0.weight()
    }

    /// The constant added to the mean square, kept in f64.
    ///
    /// ```
    /// use candle_core::{DType, Device, Tensor};
    /// let w = Tensor::ones(4, DType::F32, &Device::Cpu)?;
    /// assert_eq!(candle_port_ops::norm::RmsNorm::new(w, 1e-5).eps(), 1e-5);
    /// # Ok::<(), candle_core::Error>(())
    /// ```
    pub fn eps(&self) -> f64 {
        self.0.eps()
    }

    /// The same as [`Module::forward`], kept so that code calling candle-nn's `forward_diff`
    /// compiles unchanged.
    ///
    /// ```
    /// use candle_core::{DType, Device, Module, Tensor};
    /// let norm = candle_port_ops::norm::RmsNorm::new(Tensor::ones(2, DType::F32, &Device::Cpu)?, 0.);
    /// let x = Tensor::new(&[[3f32, 4.]], &Device::Cpu)?;
    /// assert_eq!(norm.forward_diff(&x)?.to_vec2::<f32>()?, norm.forward(&x)?.to_vec2::<f32>()?);
    /// # Ok::<(), candle_core::Error>(())
    /// ```
    pub fn forward_diff(&self, x: &Tensor) -> Result<Tensor> {
        self.0.forward(x)
    }
}

impl Module for RmsNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.0.forward(x)
    }
}

/// An [`RmsNorm`] of `size` from `vb`, as `candle_nn::rms_norm`: the weight `weight`,
/// initialised to 1.
///
/// ```
/// use candle_core::{DType, Device, Module, Tensor};
/// use candle_nn::{VarBuilder, VarMap};
/// let vars = VarMap::new();
/// let vb = VarBuilder::from_varmap(&vars, DType::F32, &Device::Cpu);
/// let norm = candle_port_ops::norm::rms_norm(8, 1e-6, vb)?;
/// let y = norm.forward(&Tensor::randn(0f32, 1., (2, 8), &Device::Cpu)?)?;
/// let grads = y.sqr()?.sum_all()?.backward()?;
/// assert!(grads.get(&vars.all_vars()[0]).is_some());
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn rms_norm(size: usize, eps: f64, vb: VarBuilder) -> Result<RmsNorm> {
    let config = LayerNormConfig {
        eps,
        remove_mean: false,
        affine: false,
    };
    Ok(RmsNorm(layer_norm(size, config, vb)?))
}
