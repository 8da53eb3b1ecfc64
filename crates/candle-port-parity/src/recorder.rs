//! Intermediate tensors recorded under torch module names while a parity check runs.
//!
//! A port calls [`record`] where a torch module's forward would end (`record("encoder.layer.0",
//! &xs)`). Outside a check it only reads a thread-local flag, so the calls can stay in the port.

use candle_core::Tensor;
use std::cell::RefCell;
use std::collections::HashMap;

#[derive(Default)]
pub(crate) struct Recording {
    pub(crate) tensors: Vec<(String, Tensor)>,
    calls: HashMap<String, usize>,
}

thread_local! {
    static RECORDING: RefCell<Option<Recording>> = const { RefCell::new(None) };
}

/// Record `tensor` as the output of the torch module `name` (its state_dict prefix, e.g.
/// `encoder.layer.0.attention`). A second call with the same name is that module's second call,
/// stored as `name#2`, as the torch side numbers a module called twice. Does nothing unless a
/// [`crate::Parity`] check is running on this thread.
///
/// ```
/// use candle_core::{Device, Tensor};
/// let xs = Tensor::zeros((1, 4), candle_core::DType::F32, &Device::Cpu)?;
/// candle_port_parity::record("encoder.layer.0", &xs); // a no-op here: no check is running
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn record(name: impl AsRef<str>, tensor: &Tensor) {
    RECORDING.with(|cell| {
        if let Some(recording) = cell.borrow_mut().as_mut() {
            let name = name.as_ref();
            let count = recording.calls.entry(name.to_string()).or_insert(0);
            *count += 1;
            let key = if *count == 1 {
                name.to_string()
            } else {
                format!("{name}#{count}")
            };
            recording.tensors.push((key, tensor.clone()));
        }
    });
}

/// Passes a forward's result through, recording an `Ok` tensor as the output of the torch module
/// `name` ([`record`]). `port-fix --instrument` wraps each forward's value in it, with the
/// VarBuilder prefix the module was built with as `name`. An empty name (the root, built from
/// the VarBuilder itself) records nothing: torch's outputs are compared already. The name comes
/// second, so a `&mut self` forward's own borrows end before it is read.
///
/// ```
/// use candle_core::{Device, Tensor};
/// let xs = Tensor::zeros((1, 4), candle_core::DType::F32, &Device::Cpu)?;
/// let ys = candle_port_parity::recorded(xs.relu(), "encoder.layer.0")?; // a no-op here
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn recorded<E>(out: Result<Tensor, E>, name: impl AsRef<str>) -> Result<Tensor, E> {
    if let Ok(tensor) = &out {
        if !name.as_ref().is_empty() {
            record(name, tensor);
        }
    }
    out
}

/// Whether [`record`] keeps what it is given on this thread (a port may skip building a tensor
/// it records only for the check).
///
/// ```
/// assert!(!candle_port_parity::is_recording());
/// ```
pub fn is_recording() -> bool {
    RECORDING.with(|cell| cell.borrow().is_some())
}

/// Runs `body` with recording on and returns its result and what was recorded.
pub(crate) fn recording<T>(body: impl FnOnce() -> T) -> (T, Vec<(String, Tensor)>) {
    RECORDING.with(|cell| *cell.borrow_mut() = Some(Recording::default()));
    let result = body();
    let recorded = RECORDING
        .with(|cell| cell.borrow_mut().take())
        .unwrap_or_default();
    (result, recorded.tensors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{DType, Device};

    #[test]
    fn a_second_call_is_numbered_and_nothing_is_kept_outside_a_check() {
        let t = Tensor::zeros(2, DType::F32, &Device::Cpu).unwrap();
        record("ignored", &t);
        let ((), kept) = recording(|| {
            assert!(is_recording());
            record("block", &t);
            record("block", &t);
            record("head", &t);
        });
        let names: Vec<_> = kept.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["block", "block#2", "head"]);
        let ((), kept) = recording(|| {
            let ok: Result<Tensor, ()> = Ok(t.clone());
            assert!(recorded(ok, "mlp").is_ok());
            assert!(recorded(Err::<Tensor, _>(()), "mlp").is_err());
            assert!(recorded(Ok::<_, ()>(t.clone()), "").is_ok());
        });
        let names: Vec<_> = kept.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["mlp"]);
        assert!(!is_recording());
    }
}
