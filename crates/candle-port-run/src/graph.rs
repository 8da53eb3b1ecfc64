//! The graph file written by `candle_port.verify.graph_export` (format `candle-port-graph`,
//! version 1; the format is documented in that module's docstring).

use candle_core::{Error, Result};
use serde::Deserialize;
use serde_json::Value as Json;

/// The only format version this binary reads.
pub const FORMAT_VERSION: u64 = 1;

/// One graph input: a parameter (becomes a `Var`), a buffer or a model input.
#[derive(Debug, Clone, Deserialize)]
pub struct Placeholder {
    /// fx node name that the other nodes reference.
    pub node: String,
    /// `param`, `buffer` or `input`.
    pub kind: String,
    /// Parameter/buffer name, or the input's position.
    pub name: String,
}

/// One ATen call.
#[derive(Debug, Clone, Deserialize)]
pub struct Node {
    /// fx node name.
    pub name: String,
    /// `aten.<op>.<overload>` or `getitem`.
    pub op: String,
    /// Positional arguments (see the format for the encoding).
    #[serde(default)]
    pub args: Vec<Json>,
    /// Keyword arguments.
    #[serde(default)]
    pub kwargs: serde_json::Map<String, Json>,
    /// False when nothing reads the result (in-place buffer updates, `empty`).
    #[serde(default = "yes")]
    pub used: bool,
    /// The user's source line, `file:line`.
    pub location: Option<String>,
    /// The text of that line.
    pub code: Option<String>,
}

fn yes() -> bool {
    true
}

/// One model output and the name of its loss weight in the tensor file.
#[derive(Debug, Clone, Deserialize)]
pub struct Output {
    /// The node holding the output (None for a non-tensor output).
    pub node: Option<String>,
    /// Position in the flattened outputs.
    pub index: usize,
    /// `upstream.<i>` in tensors.safetensors; None for an output outside the loss.
    pub upstream: Option<String>,
}

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
pub struct Graph {
    /// Must be `candle-port-graph`.
    pub format: String,
    /// Must be [`FORMAT_VERSION`].
    pub version: u64,
    /// Graph inputs in order.
    pub placeholders: Vec<Placeholder>,
    /// Calls in execution order.
    pub nodes: Vec<Node>,
    /// Flattened outputs.
    pub outputs: Vec<Output>,
}

impl Graph {
    /// Parse and check the format and version.
    pub fn parse(text: &str) -> Result<Graph> {
        let g: Graph =
            serde_json::from_str(text).map_err(|e| Error::Msg(format!("graph.json: {e}")))?;
        if g.format != "candle-port-graph" || g.version != FORMAT_VERSION {
            return Err(Error::Msg(format!(
                "graph.json: format {} version {} (this binary reads candle-port-graph version {FORMAT_VERSION})",
                g.format, g.version
            )));
        }
        Ok(g)
    }
}
