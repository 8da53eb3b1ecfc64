//! [`Parity`]: the candle side of a parity check, read from and written to a parity directory.

use crate::backend::{Request, Shared, TorchWeights};
use crate::explain::{backward_hint, explain_missing};
use crate::manifest::{Manifest, Steps};
use crate::recorder::recording;
use crate::renames::Renames;
use candle_core::{DType, Device, Error, Result, Tensor, Var};
use candle_nn::{AdamW, Optimizer, ParamsAdamW, VarBuilder, SGD};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a port's forward returns, as the list of outputs compared with torch's, in order.
pub trait Outputs {
    /// The outputs, in the order torch's flattened outputs have.
    fn into_outputs(self) -> Vec<Tensor>;
}

impl Outputs for Tensor {
    fn into_outputs(self) -> Vec<Tensor> {
        vec![self]
    }
}

impl Outputs for Vec<Tensor> {
    fn into_outputs(self) -> Vec<Tensor> {
        self
    }
}

impl Outputs for (Tensor, Tensor) {
    fn into_outputs(self) -> Vec<Tensor> {
        vec![self.0, self.1]
    }
}

/// What the check found on the candle side; `candle-port compare DIR` judges it against torch.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// The port's error while building from torch's weights ([`Parity::build`]).
    pub build_error: Option<String>,
    /// The forward's error, when it failed.
    pub forward_error: Option<String>,
    /// The backward's error, when it failed, with what to do about it where that is known.
    pub backward_error: Option<String>,
    /// Trainable Vars (by torch name) that got no gradient although the backward ran.
    pub without_gradient: Vec<String>,
    /// Why they may have none, where it can be told.
    pub hint: Option<String>,
    /// The loss of each optimizer step (`--steps N` on the torch side).
    pub losses: Vec<f64>,
    /// Every name the port asked its VarBuilder for.
    pub requests: Vec<Request>,
}

impl Summary {
    /// `Ok` when forward and backward ran and every Var got a gradient; otherwise an error that
    /// says what went wrong (for a port's own test: `parity.check(..)?.ensure_trains()?`).
    ///
    /// ```no_run
    /// # fn main() -> candle_core::Result<()> {
    /// # let parity = candle_port_parity::Parity::open("parity/model")?;
    /// # let forward = |xs: &[candle_core::Tensor]| xs[0].exp();
    /// parity.check(forward)?.ensure_trains()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn ensure_trains(&self) -> Result<()> {
        if let Some(e) = &self.build_error {
            return Err(Error::Msg(format!("the port did not build: {e}")));
        }
        if let Some(e) = &self.forward_error {
            return Err(Error::Msg(format!("forward failed: {e}")));
        }
        if let Some(e) = &self.backward_error {
            return Err(Error::Msg(format!("backward failed: {e}")));
        }
        if !self.without_gradient.is_empty() {
            let hint = self.hint.as_deref().unwrap_or("");
            return Err(Error::Msg(format!(
                "{} Vars got no gradient: {}{}",
                self.without_gradient.len(),
                self.without_gradient.join(", "),
                if hint.is_empty() {
                    String::new()
                } else {
                    format!("\n{hint}")
                }
            )));
        }
        Ok(())
    }
}

#[derive(Serialize)]
struct CandleSide<'a> {
    format: &'a str,
    dtype: String,
    outputs: Vec<String>,
    recorded: Vec<String>,
    gradients: Vec<String>,
    #[serde(flatten)]
    summary: &'a Summary,
}

/// A parity directory written by `candle-port reference`, opened for the port's side.
///
/// ```no_run
/// use candle_port_parity::Parity;
/// # fn main() -> candle_core::Result<()> {
/// let parity = Parity::open("parity/vit")?;
/// // build the port from torch's weights, under torch's names:
/// let model = candle_nn::linear(4, 2, parity.var_builder().pp("head"))?;
/// // forward on torch's inputs, backward of sum(output * upstream), every gradient written:
/// let summary = parity.check(|xs| candle_core::Module::forward(&model, &xs[0]))?;
/// println!("{} Vars without a gradient", summary.without_gradient.len());
/// # Ok(())
/// # }
/// ```
pub struct Parity {
    dir: PathBuf,
    manifest: Manifest,
    dtype: DType,
    device: Device,
    weights: Arc<TorchWeights>,
    inputs: Vec<Tensor>,
    upstream: Vec<Tensor>,
}

impl Parity {
    /// Opens `dir` on the CPU.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self> {
        Self::open_on(dir, &Device::Cpu)
    }

    /// Opens `dir`, placing torch's tensors on `device`.
    pub fn open_on(dir: impl AsRef<Path>, device: &Device) -> Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        let manifest = Manifest::read(&dir)?;
        let dtype = manifest.dtype()?;
        let load = |file: &str| {
            let path = dir.join(file);
            candle_core::safetensors::load(&path, device)
                .map_err(|e| Error::Msg(format!("{}: {e}", path.display())))
        };
        let weights = load("weights.safetensors")?;
        let mut data = load("inputs.safetensors")?;
        let take = |data: &mut HashMap<String, Tensor>, name: &str| {
            data.remove(name)
                .ok_or_else(|| Error::Msg(format!("inputs.safetensors has no tensor {name}")))
        };
        let inputs = manifest
            .inputs
            .iter()
            .map(|n| take(&mut data, n))
            .collect::<Result<Vec<_>>>()?;
        let upstream = (0..manifest.outputs.len())
            .map(|i| take(&mut data, &format!("upstream.{i}")))
            .collect::<Result<Vec<_>>>()?;
        let parameters: HashSet<String> = manifest.parameters.iter().cloned().collect();
        let renames = Renames::new(&manifest.renames)?;
        let weights = Arc::new(TorchWeights::new(weights, parameters, renames));
        Ok(Self {
            dir,
            manifest,
            dtype,
            device: device.clone(),
            weights,
            inputs,
            upstream,
        })
    }

    /// A VarBuilder over torch's weights under torch's names (after the directory's rename
    /// rules), in torch's dtype: parameters come out as Vars, buffers as tensors.
    pub fn var_builder(&self) -> VarBuilder<'static> {
        let backend: Box<dyn candle_nn::var_builder::SimpleBackend> =
            Box::new(Shared(self.weights.clone()));
        VarBuilder::from_backend(backend, self.dtype, self.device.clone())
    }

    /// Lets the port build when it asks for names torch lacks: it gets its own init for them,
    /// and `compare` lists every such name at once and suggests rename rules. By default such a
    /// name is an error, as with a checkpoint (a port that tries optional weights then goes on
    /// without them).
    ///
    /// ```no_run
    /// # fn main() -> candle_core::Result<()> {
    /// let parity = candle_port_parity::Parity::open("parity/vit")?.allow_missing();
    /// # Ok(())
    /// # }
    /// ```
    pub fn allow_missing(self) -> Self {
        self.weights.set_allow_missing(true);
        self
    }

    /// Builds the port with `build` from [`Parity::var_builder`]; when that fails (a name torch
    /// lacks, a shape the port's own code rejects), writes the candle side with the error and
    /// every request so far for `candle-port compare`, and returns the error.
    ///
    /// ```no_run
    /// # fn main() -> candle_core::Result<()> {
    /// let parity = candle_port_parity::Parity::open("parity/mlp")?;
    /// let fc = parity.build(|vb| candle_nn::linear(8, 2, vb.pp("fc")))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn build<M>(&self, build: impl FnOnce(VarBuilder<'static>) -> Result<M>) -> Result<M> {
        match build(self.var_builder()) {
            Ok(model) => Ok(model),
            Err(e) => {
                let mut summary = self.empty_summary()?;
                summary.build_error = Some(e.to_string());
                let side = CandleSide {
                    format: crate::manifest::FORMAT,
                    dtype: self.manifest.dtype.clone(),
                    outputs: Vec::new(),
                    recorded: Vec::new(),
                    gradients: Vec::new(),
                    summary: &summary,
                };
                self.write(&HashMap::new(), &side)?;
                Err(e)
            }
        }
    }

    /// torch's inputs, in order.
    pub fn inputs(&self) -> &[Tensor] {
        &self.inputs
    }

    /// torch's dtype for this run.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Every trainable Var the port created through [`Parity::var_builder`], in creation order.
    pub fn vars(&self) -> Result<Vec<Var>> {
        Ok(self
            .weights
            .state()?
            .vars
            .iter()
            .map(|(_, v)| v.clone())
            .collect())
    }

    /// Runs `forward` on torch's inputs with recording on, the backward of torch's loss
    /// (`sum(output * upstream)`, or `--loss mse`'s mean of `(output - upstream)^2`) and, when torch ran optimizer steps, the same steps with
    /// candle-nn's optimizer; writes the candle side (`candle.safetensors`, `candle.json`) into
    /// the directory for `candle-port compare`, and returns what it found.
    pub fn check<F, O>(&self, mut forward: F) -> Result<Summary>
    where
        F: FnMut(&[Tensor]) -> Result<O>,
        O: Outputs,
    {
        let (outputs, recorded) = recording(|| forward(&self.inputs));
        let mut tensors: HashMap<String, Tensor> = HashMap::new();
        let mut summary = self.empty_summary()?;
        // Recorded under the port's names (a VarBuilder prefix, say): the rename rules that
        // serve torch's weights map them back to torch's module names.
        let renames = Renames::new(&self.manifest.renames)?;
        let mut recorded_names = Vec::with_capacity(recorded.len());
        for (name, t) in recorded {
            let name = module_to_torch(&renames, &name);
            tensors.insert(format!("module:{name}"), t.detach().contiguous()?);
            recorded_names.push(name);
        }
        let mut output_names = Vec::new();
        let mut gradient_names = Vec::new();
        match outputs {
            Err(e) => summary.forward_error = Some(e.to_string()),
            Ok(outputs) => {
                let outputs = outputs.into_outputs();
                for (i, t) in outputs.iter().enumerate() {
                    let name = format!("output.{i}");
                    tensors.insert(name.clone(), t.detach().contiguous()?);
                    output_names.push(name);
                }
                match self.loss(&outputs).and_then(|loss| loss.backward()) {
                    Err(e) => {
                        summary.backward_error = Some(backward_hint(&e.to_string()));
                    }
                    Ok(grads) => {
                        let state = self.weights.state()?;
                        for (name, var) in &state.vars {
                            match grads.get(var.as_tensor()) {
                                Some(g) => {
                                    let key = format!("grad:{name}");
                                    tensors.insert(key.clone(), g.contiguous()?);
                                    gradient_names.push(key);
                                }
                                None => summary.without_gradient.push(name.clone()),
                            }
                        }
                        summary.hint = explain_missing(&summary.without_gradient, &state.vars);
                    }
                }
                if summary.backward_error.is_none() {
                    if let Some(steps) = &self.manifest.steps {
                        summary.losses = self.steps(steps, &mut forward)?;
                    }
                }
            }
        }
        let side = CandleSide {
            format: crate::manifest::FORMAT,
            dtype: self.manifest.dtype.clone(),
            outputs: output_names,
            recorded: recorded_names,
            gradients: gradient_names,
            summary: &summary,
        };
        self.write(&tensors, &side)?;
        Ok(summary)
    }

    fn empty_summary(&self) -> Result<Summary> {
        let state = self.weights.state()?;
        Ok(Summary {
            build_error: None,
            forward_error: None,
            backward_error: None,
            without_gradient: Vec::new(),
            hint: None,
            losses: Vec::new(),
            requests: state.requests.clone(),
        })
    }

    fn loss(&self, outputs: &[Tensor]) -> Result<Tensor> {
        if outputs.len() != self.upstream.len() {
            return Err(Error::Msg(format!(
                "the port returned {} outputs, torch's model {} ({})",
                outputs.len(),
                self.upstream.len(),
                self.manifest.outputs.join(", ")
            )));
        }
        let mut total: Option<Tensor> = None;
        for (out, up) in outputs.iter().zip(&self.upstream) {
            if out.dims() != up.dims() {
                return Err(Error::Msg(format!(
                    "output shape {:?} differs from torch's {:?}",
                    out.dims(),
                    up.dims()
                )));
            }
            let up = up.to_dtype(out.dtype())?;
            let term = match self.manifest.loss.as_str() {
                "linear" => (out * up)?.sum_all()?,
                "mse" => (out - up)?.sqr()?.mean_all()?,
                other => return Err(Error::Msg(format!("manifest.json: unknown loss {other:?}"))),
            };
            total = Some(match total {
                None => term,
                Some(t) => (t + term)?,
            });
        }
        total.ok_or_else(|| Error::Msg("the port returned no output".into()))
    }

    fn steps<F, O>(&self, steps: &Steps, forward: &mut F) -> Result<Vec<f64>>
    where
        F: FnMut(&[Tensor]) -> Result<O>,
        O: Outputs,
    {
        let vars = self.vars()?;
        let mut losses = Vec::with_capacity(steps.count);
        let mut step = |optimizer: &mut dyn FnMut(&Tensor) -> Result<()>| -> Result<()> {
            for _ in 0..steps.count {
                let loss = self.loss(&forward(&self.inputs)?.into_outputs())?;
                losses.push(loss.to_dtype(DType::F64)?.to_scalar::<f64>()?);
                optimizer(&loss)?;
            }
            Ok(())
        };
        match steps.optimizer.as_str() {
            "sgd" => {
                let mut sgd = SGD::new(vars, steps.lr)?;
                step(&mut |loss| sgd.backward_step(loss))?;
            }
            "adamw" => {
                let params = ParamsAdamW {
                    lr: steps.lr,
                    beta1: steps.betas.0,
                    beta2: steps.betas.1,
                    eps: steps.eps,
                    weight_decay: steps.weight_decay,
                };
                let mut adamw = AdamW::new(vars, params)?;
                step(&mut |loss| adamw.backward_step(loss))?;
            }
            other => {
                return Err(Error::Msg(format!(
                    "manifest.json: unknown optimizer {other:?}"
                )))
            }
        }
        Ok(losses)
    }

    fn write(&self, tensors: &HashMap<String, Tensor>, side: &CandleSide) -> Result<()> {
        let tmp = self.dir.join("candle.safetensors.tmp");
        candle_core::safetensors::save(tensors, &tmp)?;
        std::fs::rename(&tmp, self.dir.join("candle.safetensors"))?;
        let json = serde_json::to_string_pretty(side).map_err(|e| Error::Msg(e.to_string()))?;
        let tmp = self.dir.join("candle.json.tmp");
        std::fs::write(&tmp, json)?;
        std::fs::rename(&tmp, self.dir.join("candle.json"))?;
        Ok(())
    }

    /// torch's state_dict names the port never asked for (parameters and buffers; torch's
    /// integer step counters such as BatchNorm's `num_batches_tracked` are left out).
    pub fn never_loaded(&self) -> Result<Vec<String>> {
        let state = self.weights.state()?;
        let asked: HashSet<&str> = state
            .requests
            .iter()
            .map(|r| r.torch_name.as_str())
            .collect();
        let mut names: Vec<String> = self
            .weights
            .torch_names()
            .filter(|n| !asked.contains(n.as_str()) && !n.ends_with("num_batches_tracked"))
            .cloned()
            .collect();
        names.sort();
        Ok(names)
    }
}

/// A module's torch name from the port's, by the weights' rename rules. Rules are written for
/// parameter names (`encoder.layer.{i}.=encoder.layers.{i}.`), so the module name is matched with
/// a trailing dot, which is then dropped again.
fn module_to_torch(renames: &Renames, name: &str) -> String {
    let torch = renames.to_torch(&format!("{name}."));
    match torch.strip_suffix('.') {
        Some(stripped) => stripped.to_string(),
        None => renames.to_torch(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_module_names_go_through_the_weights_rename_rules() {
        let rules = vec![
            (
                "encoder.layer.{i}.".to_string(),
                "encoder.layers.{i}.".to_string(),
            ),
            ("vit.embeddings.".to_string(), "patch_embed.".to_string()),
        ];
        let renames = Renames::new(&rules).unwrap();
        assert_eq!(
            module_to_torch(&renames, "encoder.layers.3"),
            "encoder.layer.3"
        );
        assert_eq!(
            module_to_torch(&renames, "encoder.layers.3.attention"),
            "encoder.layer.3.attention"
        );
        assert_eq!(module_to_torch(&renames, "patch_embed"), "vit.embeddings");
        assert_eq!(module_to_torch(&renames, "head"), "head");
    }
}
