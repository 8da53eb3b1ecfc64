//! The check a candle user can run with no torch at all, on their training loop's first step:
//! which Vars of a `VarMap` got no gradient from `backward()`.

use crate::explain::explain_missing;
use candle_core::backprop::GradStore;
use candle_core::{Error, Result, Var};
use candle_nn::VarMap;
use std::cmp::Ordering;

/// Which Vars got a gradient, by name, in natural order (`blocks.2` before `blocks.10`).
#[derive(Debug, Clone)]
pub struct GradientReport {
    /// Vars that got a gradient.
    pub with_gradient: Vec<String>,
    /// Vars that got none: their layers do not train.
    pub without_gradient: Vec<String>,
    /// Why, where it can be told.
    pub hint: Option<String>,
}

impl GradientReport {
    /// `Ok` when every Var got a gradient, else an error naming those without one.
    ///
    /// ```
    /// use candle_core::{DType, Device, Module};
    /// use candle_nn::{VarBuilder, VarMap};
    /// let varmap = VarMap::new();
    /// let vb = VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
    /// let layer = candle_nn::linear(4, 2, vb.pp("fc"))?;
    /// let xs = candle_core::Tensor::ones((3, 4), DType::F32, &Device::Cpu)?;
    /// let grads = layer.forward(&xs)?.sqr()?.sum_all()?.backward()?;
    /// candle_port_parity::check_gradients(&varmap, &grads)?.ensure_complete()?;
    /// # Ok::<(), candle_core::Error>(())
    /// ```
    pub fn ensure_complete(&self) -> Result<()> {
        if self.without_gradient.is_empty() {
            return Ok(());
        }
        Err(Error::Msg(format!(
            "{} of {} Vars got no gradient: {}{}",
            self.without_gradient.len(),
            self.without_gradient.len() + self.with_gradient.len(),
            self.without_gradient.join(", "),
            self.hint
                .as_ref()
                .map(|h| format!("\n{h}"))
                .unwrap_or_default()
        )))
    }
}

/// Splits the Vars of `varmap` by whether `grads` (from `loss.backward()`) holds a gradient for
/// them. Run it once after the first backward of a training loop: candle's fused ops cut the
/// gradient without an error, and a Var without a gradient simply never trains.
///
/// ```
/// use candle_core::{DType, Device, Module, Tensor};
/// use candle_nn::{VarBuilder, VarMap};
/// let varmap = VarMap::new();
/// let vb = VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
/// let norm = candle_nn::layer_norm(4, 1e-5, vb.pp("norm"))?;
/// let head = candle_nn::linear(4, 2, vb.pp("head"))?;
/// let xs = Tensor::ones((3, 4), DType::F32, &Device::Cpu)?;
/// let loss = head.forward(&norm.forward(&xs)?)?.sqr()?.sum_all()?;
/// let report = candle_port_parity::check_gradients(&varmap, &loss.backward()?)?;
/// // candle-nn's LayerNorm takes the fused path, which records no graph:
/// assert_eq!(report.without_gradient, ["norm.bias", "norm.weight"]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn check_gradients(varmap: &VarMap, grads: &GradStore) -> Result<GradientReport> {
    let data = varmap
        .data()
        .lock()
        .map_err(|_| Error::Msg("the VarMap's lock is poisoned".into()))?;
    let mut vars: Vec<(String, Var)> = data.iter().map(|(n, v)| (n.clone(), v.clone())).collect();
    drop(data);
    vars.sort_by(|a, b| natural_order(&a.0, &b.0));
    let (mut with_gradient, mut without_gradient) = (Vec::new(), Vec::new());
    for (name, var) in &vars {
        if grads.get(var.as_tensor()).is_some() {
            with_gradient.push(name.clone());
        } else {
            without_gradient.push(name.clone());
        }
    }
    let hint = explain_missing(&without_gradient, &vars);
    Ok(GradientReport {
        with_gradient,
        without_gradient,
        hint,
    })
}

/// Dotted names compared segment by segment, numbers as numbers.
fn natural_order(a: &str, b: &str) -> Ordering {
    let key = |s: &str| -> Vec<(u64, String)> {
        s.split('.')
            .map(|seg| match seg.parse::<u64>() {
                Ok(n) => (n, String::new()),
                Err(_) => (u64::MAX, seg.to_string()),
            })
            .collect()
    };
    key(a).cmp(&key(b))
}

#[cfg(test)]
mod tests {
    use super::natural_order;
    use std::cmp::Ordering;

    #[test]
    fn numbers_sort_as_numbers() {
        assert_eq!(natural_order("blocks.2.w", "blocks.10.w"), Ordering::Less);
        assert_eq!(natural_order("a.w", "a.b"), Ordering::Greater);
    }
}
