//! Runs a graph in candle: parameters as `Var`s, the loss `sum_i sum(output_i * upstream_i)`,
//! `backward()`, and one report row per node.

use std::collections::HashMap;

use candle_core::{Result, Tensor, Var};
use serde_json::Value as Json;

use crate::graph::{Graph, Node};
use crate::ops::{self, OpsMode};
use crate::report::{first_line, BackwardReport, NodeReport, Report, CANDLE_VERSION};
use crate::value::{Args, Value};

/// A finished run: the report and the tensors to write (`output.<i>`, `grad.<param>`).
pub struct RunResult {
    /// Per-op report.
    pub report: Report,
    /// Outputs and parameter gradients.
    pub tensors: HashMap<String, Tensor>,
}

fn refs(j: &Json, out: &mut Vec<String>) {
    match j {
        Json::Array(items) => items.iter().for_each(|i| refs(i, out)),
        Json::Object(o) => {
            if let Some(Json::String(r)) = o.get("ref") {
                out.push(r.clone());
            }
        }
        _ => {}
    }
}

fn missing_input(node: &Node, env: &HashMap<String, Value>) -> Option<String> {
    let mut names = Vec::new();
    node.args
        .iter()
        .chain(node.kwargs.values())
        .for_each(|j| refs(j, &mut names));
    names.into_iter().find(|n| !env.contains_key(n))
}

fn getitem(node: &Node, env: &HashMap<String, Value>) -> Result<Value> {
    let mut names = Vec::new();
    refs(&node.args[0], &mut names);
    let index = node.args.get(1).and_then(|j| j.as_u64()).unwrap_or(0) as usize;
    match names.first().and_then(|n| env.get(n)) {
        Some(Value::Tuple(items)) => match items.get(index) {
            Some(Some(t)) => Ok(Value::Tensor(t.clone())),
            _ => candle_core::bail!(
                "element {index} of {} is not computed by this mapping",
                names[0]
            ),
        },
        _ => candle_core::bail!("getitem of a non-tuple"),
    }
}

fn row(node: &Node, status: &str, message: Option<String>) -> NodeReport {
    NodeReport {
        name: node.name.clone(),
        op: node.op.clone(),
        status: status.into(),
        message,
        location: node.location.clone(),
        code: node.code.clone(),
    }
}

/// Execute `graph` on `tensors` (the exporter's `param.*`, `buffer.*`, `input.*`, `upstream.*`).
pub fn execute(
    graph: &Graph,
    tensors: &HashMap<String, Tensor>,
    mode: OpsMode,
) -> Result<RunResult> {
    let mut env: HashMap<String, Value> = HashMap::new();
    let mut vars: Vec<(String, Var)> = Vec::new();
    for p in &graph.placeholders {
        let key = format!("{}.{}", p.kind, p.name);
        let t = tensors
            .get(&key)
            .ok_or_else(|| candle_core::Error::Msg(format!("tensors.safetensors has no {key}")))?;
        let t = if p.kind == "param" {
            let v = Var::from_tensor(t)?;
            let t = v.as_tensor().clone();
            vars.push((p.name.clone(), v));
            t
        } else {
            t.clone()
        };
        env.insert(p.node.clone(), Value::Tensor(t));
    }
    let mut rows = Vec::with_capacity(graph.nodes.len());
    for node in &graph.nodes {
        if !node.used {
            rows.push(row(node, "unused", None));
            continue;
        }
        if let Some(m) = missing_input(node, &env) {
            rows.push(row(
                node,
                "skipped",
                Some(format!("input {m} was not computed")),
            ));
            continue;
        }
        let outcome = if node.op == "getitem" {
            Some(getitem(node, &env))
        } else {
            ops::run(&Args { node, env: &env }, mode)
        };
        match outcome {
            None => rows.push(row(
                node,
                "no_mapping",
                Some(format!("no candle mapping for {}", node.op)),
            )),
            Some(Err(e)) => rows.push(row(node, "error", Some(first_line(&e)))),
            Some(Ok(v)) => {
                env.insert(node.name.clone(), v);
                rows.push(row(node, "ok", None));
            }
        }
    }
    let mut out = HashMap::new();
    let mut loss: Option<Tensor> = None;
    let mut forward_ok = true;
    for o in &graph.outputs {
        let Some(name) = &o.node else { continue };
        match env.get(name).map(|v| v.tensor()) {
            Some(Ok(t)) => {
                out.insert(format!("output.{}", o.index), t.clone());
                if let Some(u) = o.upstream.as_ref().and_then(|k| tensors.get(k)) {
                    let term = t.mul(&u.to_dtype(t.dtype())?)?.sum_all()?;
                    loss = Some(match loss {
                        Some(l) => l.add(&term)?,
                        None => term,
                    });
                }
            }
            _ => forward_ok = false,
        }
    }
    let mut backward = BackwardReport::default();
    let mut missing = Vec::new();
    if let (true, Some(loss)) = (forward_ok, loss) {
        backward.ran = true;
        match loss.backward() {
            Ok(grads) => {
                backward.ok = true;
                for (name, v) in &vars {
                    match grads.get(v.as_tensor()) {
                        Some(g) => {
                            out.insert(format!("grad.{name}"), g.clone());
                        }
                        None => missing.push(name.clone()),
                    }
                }
            }
            Err(e) => {
                let message = first_line(&e);
                for (node, r) in graph.nodes.iter().zip(rows.iter_mut()) {
                    let used = ops::candle_op_used(&Args { node, env: &env }, mode);
                    if r.status == "ok"
                        && used.is_some_and(|op| message.contains(&format!("for {op}")))
                    {
                        r.status = "backward_error".into();
                        r.message = Some(message.clone());
                        backward.nodes.push(node.name.clone());
                    }
                }
                backward.message = Some(message);
            }
        }
    }
    let all_ok = rows
        .iter()
        .all(|r| r.status == "ok" || r.status == "unused");
    let report = Report {
        format: "candle-port-run-report",
        version: 1,
        mode: mode.name(),
        candle: CANDLE_VERSION,
        ok: all_ok && forward_ok && backward.ok && missing.is_empty(),
        forward_ok,
        backward,
        missing_gradients: missing,
        nodes: rows,
    };
    Ok(RunResult {
        report,
        tensors: out,
    })
}
