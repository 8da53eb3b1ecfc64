//! ATen op -> candle mappings, one op family per module. [`run`] returns `None` for an op
//! without a mapping: the report names it, nothing is guessed.

pub mod activation;
pub mod conv;
pub mod elementwise;
pub mod index;
pub mod linalg;
pub mod loss;
pub mod norm;
pub mod reduce;
pub mod resize;
pub mod rnn;
pub mod shape;
pub mod sort;
pub mod twins;

use std::collections::HashMap;

use candle_core::Result;

use crate::graph::Node;
use crate::value::{Args, Value};

/// Which candle op runs the ops that have a candle-port-ops twin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpsMode {
    /// candle's own op, as a straightforward port writes it.
    Native,
    /// The differentiable twin from candle-port-ops.
    Port,
}

impl OpsMode {
    /// `native` or `port`.
    pub fn name(self) -> &'static str {
        match self {
            OpsMode::Native => "native",
            OpsMode::Port => "port",
        }
    }
}

/// `aten.convolution.default` -> `convolution`.
pub fn short_name(op: &str) -> &str {
    let rest = op.strip_prefix("aten.").unwrap_or(op);
    rest.split('.').next().unwrap_or(rest)
}

/// Run one node; `None` when no module maps its op.
pub fn run(args: &Args, mode: OpsMode) -> Option<Result<Value>> {
    let op = args.node.op.as_str();
    let name = short_name(op);
    conv::run(name, args, mode)
        .or_else(|| norm::run(name, args, mode))
        .or_else(|| linalg::run(name, args))
        .or_else(|| elementwise::run(name, op, args))
        .or_else(|| activation::run(name, args, mode))
        .or_else(|| reduce::run(name, args, mode))
        .or_else(|| shape::run(name, op, args))
        .or_else(|| index::run(name, args))
        .or_else(|| sort::run(name, args))
        .or_else(|| loss::run(name, args))
        .or_else(|| rnn::run(name, args))
        .or_else(|| resize::run(name, op, args, mode))
        .or_else(|| twins::run(name, op, args, mode))
}

/// True when a module maps the ATen op `name` (an overload packet, `elu`) in both modes: every
/// module dispatches on the name before it reads an argument, so a node without arguments tells.
/// A twin's native mode answers "candle has no X op", which counts as mapped.
///
/// ```
/// assert!(candle_port_run::ops::mapped("elu"));
/// assert!(!candle_port_run::ops::mapped("no_such_op"));
/// ```
pub fn mapped(name: &str) -> bool {
    let node = Node {
        name: "probe".into(),
        op: format!("aten.{name}.default"),
        args: Vec::new(),
        kwargs: serde_json::Map::new(),
        used: true,
        location: None,
        code: None,
    };
    let env = HashMap::new();
    [OpsMode::Native, OpsMode::Port].into_iter().all(|mode| {
        run(
            &Args {
                node: &node,
                env: &env,
            },
            mode,
        )
        .is_some()
    })
}

/// The candle op whose missing backward a mapping relies on in this mode, so that a
/// `backward not supported for X` error can be pinned on the nodes that used X.
pub fn candle_op_used(args: &Args, mode: OpsMode) -> Option<&'static str> {
    let name = short_name(&args.node.op);
    resize::candle_op_used(name, mode).or_else(|| conv::candle_op_used(name, args, mode))
}
