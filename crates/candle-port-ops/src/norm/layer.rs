//! `LayerNorm`: candle-nn's layer (same constructors, accessors and `LayerNormConfig`), whose
//! forward always takes the differentiable path.

use candle_core::{Module, Result, Tensor};
use candle_nn::{Init, LayerNormConfig, VarBuilder};

use super::ops::normalize;

/// Layer normalization over the last dimension, as `candle_nn::LayerNorm`, but differentiable
/// for every input: `(x - mean) / sqrt(var + eps) * weight + bias` (without the mean removal for
/// [`LayerNorm::rms_norm`], without the bias when there is none).
///
/// ```
/// use candle_core::{DType, Device, Module, Tensor, Var};
/// use candle_port_ops::norm::LayerNorm;
/// let w = Var::ones(3, DType::F32, &Device::Cpu)?;
/// let b = Var::zeros(3, DType::F32, &Device::Cpu)?;
/// let layer = LayerNorm::new(w.as_tensor().clone(), b.as_tensor().clone(), 1e-5);
/// let x = Tensor::new(&[[1f32, 2., 3.], [9., 8., 7.]], &Device::Cpu)?;
/// let y = layer.forward(&x)?;
/// let grads = (y * Tensor::new(&[[1f32, 0., 2.], [0., 1., 0.]], &Device::Cpu)?)?
///     .sum_all()?
///     .backward()?;
/// assert!(grads.get(&w).is_some() && grads.get(&b).is_some()); // candle-nn's: None, None
/// # Ok::<(), candle_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct LayerNorm {
    weight: Tensor,
    bias: Option<Tensor>,
    remove_mean: bool,
    eps: f64,
}

impl LayerNorm {
    /// A layer with a weight and a bias, as `candle_nn::LayerNorm::new`.
    ///
    /// ```
    /// use candle_core::{DType, Device, Tensor};
    /// use candle_port_ops::norm::LayerNorm;
    /// let w = Tensor::ones(4, DType::F32, &Device::Cpu)?;
    /// let layer = LayerNorm::new(w.clone(), w.zeros_like()?, 1e-5);
    /// assert!(layer.bias().is_some() && layer.remove_mean());
    /// # Ok::<(), candle_core::Error>(())
    /// ```
    pub fn new(weight: Tensor, bias: Tensor, eps: f64) -> Self {
        Self {
            weight,
            bias: Some(bias),
            remove_mean: true,
            eps,
        }
    }

    /// A layer without a bias, as `candle_nn::LayerNorm::new_no_bias`.
    ///
    /// ```
    /// use candle_core::{DType, Device, Tensor};
    /// use candle_port_ops::norm::LayerNorm;
    /// let layer = LayerNorm::new_no_bias(Tensor::ones(4, DType::F32, &Device::Cpu)?, 1e-5);
    /// assert!(layer.bias().is_none() && layer.remove_mean());
    /// # Ok::<(), candle_core::Error>(())
    /// ```
    pub fn new_no_bias(weight: Tensor, eps: f64) -> Self {
        Self {
            weight,
            bias: None,
            remove_mean: true,
            eps,
        }
    }

    /// An RMS norm (no mean removal, no bias), as `candle_nn::LayerNorm::rms_norm`.
    ///
    /// ```
    /// use candle_core::{DType, Device, Tensor};
    /// use candle_port_ops::norm::LayerNorm;
    /// let layer = LayerNorm::rms_norm(Tensor::ones(4, DType::F32, &Device::Cpu)?, 1e-6);
    /// assert!(!layer.remove_mean() && layer.eps() == 1e-6);
    /// # Ok::<(), candle_core::Error>(())
    /// ```
    pub fn rms_norm(weight: Tensor, eps: f64) -> Self {
        Self {
            weight,
            bias: None,
            remove_mean: false,
            eps,
        }
    }

    /// The scale (`gamma`), of the normalized dimension's length.
    ///
    /// ```
    /// use candle_core::{DType, Device, Tensor};
    /// use candle_port_ops::norm::LayerNorm;
    /// let layer = LayerNorm::new_no_bias(Tensor::ones(4, DType::F32, &Device::Cpu)?, 1e-5);
    /// assert_eq!(layer.weight().dims(), &[4]);
    /// # Ok::<(), candle_core::Error>(())
    /// ```
    pub fn weight(&self) -> &Tensor {
        &self.weight
    }

    /// The shift (`beta`), if the layer has one.
    ///
    /// ```
    /// use candle_core::{DType, Device, Tensor};
    /// use candle_port_ops::norm::LayerNorm;
    /// let w = Tensor::ones(4, DType::F32, &Device::Cpu)?;
    /// assert!(LayerNorm::new(w.clone(), w.zeros_like()?, 1e-5).bias().is_some());
    /// # Ok::<(), candle_core::Error>(())
    /// ```
    pub fn bias(&self) -> Option<&Tensor> {
        self.bias.as_ref()
    }

    /// The constant added to the variance, kept in f64.
    ///
    /// ```
    /// use candle_core::{DType, Device, Tensor};
    /// use candle_port_ops::norm::LayerNorm;
    /// let layer = LayerNorm::new_no_bias(Tensor::ones(4, DType::F32, &Device::Cpu)?, 1e-12);
    /// assert_eq!(layer.eps(), 1e-12);
    /// # Ok::<(), candle_core::Error>(())
    /// ```
    pub fn eps(&self) -> f64 {
        self.eps
    }

    /// Whether the mean is subtracted (false for an RMS norm).
    ///
    /// ```
    /// use candle_core::{DType, Device, Tensor};
    /// use candle_port_ops::norm::LayerNorm;
    /// let w = Tensor::ones(4, DType::F32, &Device::Cpu)?;
    /// assert!(!LayerNorm::rms_norm(w, 1e-6).remove_mean());
    /// # Ok::<(), candle_core::Error>(())
    /// ```
    pub fn remove_mean(&self) -> bool {
        self.remove_mean
    }
}

impl Module for LayerNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        normalize(
            x,
            &self.weight,
            self.bias.as_ref(),
            self.remove_mean,
            self.eps,
        )
    }
}

/// A [`LayerNorm`] of `size` from `vb`, as `candle_nn::layer_norm`: the weight `weight`
/// (initialised to 1), the bias `bias` (initialised to 0) when `config.affine`, the mean removed
/// when `config.remove_mean`. `config` is a `LayerNormConfig` or just `eps` (an `f64`).
///
/// ```
/// use candle_core::{DType, Device, Module, Tensor};
/// use candle_nn::{VarBuilder, VarMap};
/// use candle_port_ops::norm::layer_norm;
/// let vars = VarMap::new();
/// let vb = VarBuilder::from_varmap(&vars, DType::F32, &Device::Cpu);
/// let ln = layer_norm(8, 1e-12, vb.pp("ln"))?;
/// let y = ln.forward(&Tensor::randn(0f32, 1., (2, 8), &Device::Cpu)?)?;
/// let grads = y.sqr()?.sum_all()?.backward()?;
/// assert!(vars.all_vars().iter().all(|v| grads.get(v).is_some())); // weight and bias train
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn layer_norm<C: Into<LayerNormConfig>>(
    size: usize,
    config: C,
    vb: VarBuilder,
) -> Result<LayerNorm> {
    let config = config.into();
    let weight = vb.get_with_hints(size, "weight", Init::Const(1.))?;
    let bias = if config.affine {
        Some(vb.get_with_hints(size, "bias", Init::Const(0.))?)
    } else {
        None
    };
    Ok(LayerNorm {
        weight,
        bias,
        remove_mean: config.remove_mean,
        eps: config.eps,
    })
}

/// A [`LayerNorm`] of `size` without a bias, as `candle_nn::layer_norm_no_bias`.
///
/// ```
/// use candle_core::{DType, Device};
/// use candle_nn::{VarBuilder, VarMap};
/// let vars = VarMap::new();
/// let vb = VarBuilder::from_varmap(&vars, DType::F32, &Device::Cpu);
/// let ln = candle_port_ops::norm::layer_norm_no_bias(8, 1e-5, vb)?;
/// assert!(ln.bias().is_none() && vars.all_vars().len() == 1);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn layer_norm_no_bias(size: usize, eps: f64, vb: VarBuilder) -> Result<LayerNorm> {
    let config = LayerNormConfig {
        eps,
        remove_mean: true,
        affine: false,
    };
    layer_norm(size, config, vb)
}
