//! The VarBuilder backend that serves torch's weights to a port and remembers what it asked for.
//!
//! Every parameter the port loads becomes a `Var` (so its gradient can be read), buffers stay
//! plain tensors, and each request is kept for `candle-port compare`. A name torch does not have
//! is an error, as with a checkpoint (ports such as candle-transformers' convnext try optional
//! weights and go on without them), unless the check allows missing names: then the port gets
//! its own init, so that every missing name is listed in one run. A shape that differs (a
//! transposed Linear, a conv stored HWIO) gets the port's init too, and is listed.

use crate::renames::Renames;
use candle_core::{DType, Device, Error, Result, Shape, Tensor, Var};
use candle_nn::var_builder::SimpleBackend;
use candle_nn::Init;
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// What became of one name the port asked for.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// torch's tensor, as a trainable Var.
    Parameter,
    /// torch's tensor, as a plain tensor (a buffer: BatchNorm's running statistics).
    Buffer,
    /// torch has no tensor under this name: the port got its init hint ([`crate::Parity::allow_missing`]).
    Missing,
    /// torch has no tensor under this name and the port got an error for it, as from a
    /// checkpoint: a port that still builds tried an optional weight and went on without it.
    Absent,
    /// torch's tensor has another shape: the port got its init hint.
    ShapeMismatch,
}

/// One request of the port, in the order the port made it.
#[derive(Debug, Clone, Serialize)]
pub struct Request {
    /// The port's name.
    pub name: String,
    /// The state_dict name it maps to (the rename rules applied).
    pub torch_name: String,
    /// The shape the port asked for.
    pub shape: Vec<usize>,
    /// torch's shape, when torch has the name.
    pub torch_shape: Option<Vec<usize>>,
    /// What the port got.
    pub status: Status,
}

#[derive(Default)]
pub(crate) struct State {
    pub(crate) requests: Vec<Request>,
    /// Trainable Vars by torch name, in the order the port created them.
    pub(crate) vars: Vec<(String, Var)>,
    served: HashMap<String, Tensor>,
}

pub(crate) struct TorchWeights {
    torch: HashMap<String, Tensor>,
    parameters: HashSet<String>,
    renames: Renames,
    allow_missing: AtomicBool,
    state: Mutex<State>,
}

impl TorchWeights {
    pub(crate) fn new(
        torch: HashMap<String, Tensor>,
        parameters: HashSet<String>,
        renames: Renames,
    ) -> Self {
        Self {
            torch,
            parameters,
            renames,
            allow_missing: AtomicBool::new(false),
            state: Mutex::new(State::default()),
        }
    }

    pub(crate) fn state(&self) -> Result<MutexGuard<'_, State>> {
        self.state
            .lock()
            .map_err(|_| Error::Msg("a port panicked while loading weights".into()))
    }

    pub(crate) fn set_allow_missing(&self, allow: bool) {
        self.allow_missing.store(allow, Ordering::Relaxed);
    }

    pub(crate) fn torch_names(&self) -> impl Iterator<Item = &String> {
        self.torch.keys()
    }

    fn serve(
        &self,
        shape: Option<&Shape>,
        name: &str,
        init: Init,
        dtype: DType,
        dev: &Device,
    ) -> Result<Tensor> {
        let mut state = self.state()?;
        if let Some(served) = state.served.get(name) {
            if let Some(shape) = shape {
                if served.shape() != shape {
                    return Err(Error::Msg(format!(
                        "the port asks for {name} twice, as {:?} and as {:?}",
                        served.dims(),
                        shape.dims()
                    )));
                }
            }
            return Ok(served.clone());
        }
        let torch_name = self.renames.to_torch(name);
        let found = self.torch.get(&torch_name);
        let wanted: Vec<usize> = match (shape, found) {
            (Some(s), _) => s.dims().to_vec(),
            (None, Some(t)) => t.dims().to_vec(),
            (None, None) => {
                return Err(Error::Msg(format!(
                    "the port asks for {name} (torch name {torch_name}) without a shape, and torch has no such tensor"
                )))
            }
        };
        let status = match found {
            None => Status::Missing,
            Some(t) if t.dims() != wanted.as_slice() => Status::ShapeMismatch,
            Some(_) if self.parameters.contains(&torch_name) => Status::Parameter,
            Some(_) => Status::Buffer,
        };
        if status == Status::Missing && !self.allow_missing.load(Ordering::Relaxed) {
            state.requests.push(Request {
                name: name.to_string(),
                torch_name: torch_name.clone(),
                shape: wanted,
                torch_shape: None,
                status: Status::Absent,
            });
            return Err(Error::CannotFindTensor { path: torch_name });
        }
        let tensor = match (&status, found) {
            (Status::Buffer, Some(t)) => t.to_dtype(dtype)?.to_device(dev)?,
            (Status::Parameter, Some(t)) => {
                let var = Var::from_tensor(&t.to_dtype(dtype)?.to_device(dev)?)?;
                state.vars.push((torch_name.clone(), var.clone()));
                var.as_tensor().clone()
            }
            _ => {
                let var = init.var(wanted.clone(), dtype, dev)?;
                state.vars.push((torch_name.clone(), var.clone()));
                var.as_tensor().clone()
            }
        };
        state.requests.push(Request {
            name: name.to_string(),
            torch_name,
            shape: wanted,
            torch_shape: found.map(|t| t.dims().to_vec()),
            status,
        });
        state.served.insert(name.to_string(), tensor.clone());
        Ok(tensor)
    }
}

/// `Arc` so the [`crate::Parity`] keeps reading what the VarBuilder served.
pub(crate) struct Shared(pub(crate) Arc<TorchWeights>);

impl SimpleBackend for Shared {
    fn get(&self, s: Shape, name: &str, h: Init, dtype: DType, dev: &Device) -> Result<Tensor> {
        self.0.serve(Some(&s), name, h, dtype, dev)
    }

    fn get_unchecked(&self, name: &str, dtype: DType, dev: &Device) -> Result<Tensor> {
        self.0.serve(None, name, Init::Const(0.), dtype, dev)
    }

    fn contains_tensor(&self, name: &str) -> bool {
        self.0.torch.contains_key(&self.0.renames.to_torch(name))
    }
}
