//! Values flowing between nodes, and typed access to a node's arguments.

use std::collections::HashMap;

use candle_core::{bail, Error, Result, Tensor};
use serde_json::Value as Json;

use crate::graph::Node;

/// What a node produced.
#[derive(Debug, Clone)]
pub enum Value {
    /// One tensor.
    Tensor(Tensor),
    /// A tuple of tensors (`native_batch_norm`, `max_pool2d_with_indices`, `split`); `None` marks
    /// an element this mapping does not compute (reading it is an error).
    Tuple(Vec<Option<Tensor>>),
    /// Nothing usable (`empty`, or a node that was skipped).
    Nothing,
}

impl Value {
    /// The tensor, or an error naming what it was instead.
    pub fn tensor(&self) -> Result<&Tensor> {
        match self {
            Value::Tensor(t) => Ok(t),
            Value::Tuple(_) => bail!("expected a tensor, got a tuple"),
            Value::Nothing => bail!("expected a tensor, got nothing"),
        }
    }
}

/// A node's arguments resolved against the values computed so far.
pub struct Args<'a> {
    /// The node being run.
    pub node: &'a Node,
    /// Values by node name.
    pub env: &'a HashMap<String, Value>,
}

fn reference(j: &Json) -> Option<&str> {
    j.as_object()
        .and_then(|o| o.get("ref"))
        .and_then(|r| r.as_str())
}

impl<'a> Args<'a> {
    /// Positional argument `i`, else keyword `name`.
    pub fn get(&self, i: usize, name: &str) -> Option<&'a Json> {
        self.node
            .args
            .get(i)
            .or_else(|| self.node.kwargs.get(name))
            .filter(|j| !j.is_null())
    }

    fn resolve(&self, j: &Json) -> Result<Tensor> {
        let name = reference(j)
            .ok_or_else(|| Error::Msg(format!("expected a tensor reference, got {j}")))?;
        match self.env.get(name) {
            Some(v) => Ok(v.tensor()?.clone()),
            None => bail!("input {name} was not computed"),
        }
    }

    /// Tensor argument.
    pub fn tensor(&self, i: usize, name: &str) -> Result<Tensor> {
        let j = self
            .get(i, name)
            .ok_or_else(|| Error::Msg(format!("missing tensor argument {name}")))?;
        self.resolve(j)
    }

    /// Optional tensor argument (`None` when absent or null).
    pub fn opt_tensor(&self, i: usize, name: &str) -> Result<Option<Tensor>> {
        self.get(i, name).map(|j| self.resolve(j)).transpose()
    }

    /// True when argument `i` is a tensor reference (not a number).
    pub fn is_tensor(&self, i: usize, name: &str) -> bool {
        self.get(i, name).and_then(reference).is_some()
    }

    /// List of tensors (`cat`, `stack`).
    pub fn tensors(&self, i: usize, name: &str) -> Result<Vec<Tensor>> {
        match self.get(i, name).and_then(|j| j.as_array()) {
            Some(items) => items.iter().map(|j| self.resolve(j)).collect(),
            None => bail!("missing tensor list {name}"),
        }
    }

    /// Number argument (ints are read as floats too; `{"float": "inf"}` decodes).
    pub fn opt_float(&self, i: usize, name: &str) -> Result<Option<f64>> {
        match self.get(i, name) {
            None => Ok(None),
            Some(j) => float_of(j).map(Some),
        }
    }

    /// Number argument with a default.
    pub fn float_or(&self, i: usize, name: &str, default: f64) -> Result<f64> {
        Ok(self.opt_float(i, name)?.unwrap_or(default))
    }

    /// Integer argument; `None` when absent or null (`slice_scatter`'s `start=None`).
    pub fn opt_int(&self, i: usize, name: &str) -> Result<Option<i64>> {
        match self.get(i, name) {
            None | Some(Json::Null) => Ok(None),
            Some(j) => j
                .as_i64()
                .map(Some)
                .ok_or_else(|| Error::Msg(format!("{name}: expected an int, got {j}"))),
        }
    }

    /// Integer argument with a default.
    pub fn int_or(&self, i: usize, name: &str, default: i64) -> Result<i64> {
        match self.get(i, name) {
            None => Ok(default),
            Some(j) => j
                .as_i64()
                .ok_or_else(|| Error::Msg(format!("{name}: expected an int, got {j}"))),
        }
    }

    /// Integer list (a single int is a one-element list); `None` when absent.
    pub fn opt_ints(&self, i: usize, name: &str) -> Result<Option<Vec<i64>>> {
        match self.get(i, name) {
            None => Ok(None),
            Some(Json::Array(items)) => items
                .iter()
                .map(|j| {
                    j.as_i64()
                        .ok_or_else(|| Error::Msg(format!("{name}: expected ints, got {j}")))
                })
                .collect::<Result<Vec<_>>>()
                .map(Some),
            Some(j) => j
                .as_i64()
                .map(|v| Some(vec![v]))
                .ok_or_else(|| Error::Msg(format!("{name}: expected ints, got {j}"))),
        }
    }

    /// Integer list with a default.
    pub fn ints_or(&self, i: usize, name: &str, default: &[i64]) -> Result<Vec<i64>> {
        Ok(self.opt_ints(i, name)?.unwrap_or_else(|| default.to_vec()))
    }

    /// Bool argument with a default.
    pub fn bool_or(&self, i: usize, name: &str, default: bool) -> Result<bool> {
        match self.get(i, name) {
            None => Ok(default),
            Some(j) => j
                .as_bool()
                .ok_or_else(|| Error::Msg(format!("{name}: expected a bool, got {j}"))),
        }
    }

    /// String argument.
    pub fn opt_str(&self, i: usize, name: &str) -> Option<&'a str> {
        self.get(i, name).and_then(|j| j.as_str())
    }
}

/// A JSON number or an encoded non-finite float.
pub fn float_of(j: &Json) -> Result<f64> {
    if let Some(v) = j.as_f64() {
        return Ok(v);
    }
    if let Some(v) = j.as_bool() {
        return Ok(if v { 1.0 } else { 0.0 });
    }
    match j
        .as_object()
        .and_then(|o| o.get("float"))
        .and_then(|s| s.as_str())
    {
        Some("inf") => Ok(f64::INFINITY),
        Some("-inf") => Ok(f64::NEG_INFINITY),
        Some("nan") => Ok(f64::NAN),
        _ => bail!("expected a number, got {j}"),
    }
}

/// A torch dim (negative counts from the end) as a candle dim.
pub fn dim(d: i64, rank: usize) -> Result<usize> {
    let r = rank as i64;
    let v = if d < 0 { d + r } else { d };
    if v < 0 || v >= r.max(1) {
        bail!("dim {d} out of range for rank {rank}")
    }
    Ok(v as usize)
}

/// Non-negative ints as usize.
pub fn usizes(v: &[i64]) -> Result<Vec<usize>> {
    v.iter()
        .map(|&x| {
            usize::try_from(x)
                .map_err(|_| Error::Msg(format!("expected a non-negative int, got {x}")))
        })
        .collect()
}
