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

/// In-place ops this runner maps as their pure forms (`add_` as `add`, ...).
pub const IN_PLACE_AS_PURE: &[&str] = &["add_", "sigmoid_", "tanh_"];

/// Ops whose result is a view of their first argument's tensor.
const VIEWS: &[&str] = &[
    "getitem",
    "view",
    "_unsafe_view",
    "alias",
    "unsafe_split",
    "split",
    "split_with_sizes",
    "unsafe_chunk",
    "chunk",
    "unbind",
    "t",
    "transpose",
    "permute",
    "select",
    "slice",
    "narrow",
    "expand",
    "squeeze",
    "unsqueeze",
    "reshape",
    "diagonal",
];

fn first_ref(node: &Node) -> Option<String> {
    let mut names = Vec::new();
    refs(node.args.first()?, &mut names);
    names.into_iter().next()
}

/// True for an ATen op that writes into its first argument (`add_`, `copy_`; not `__and__`).
fn mutates(op: &str) -> bool {
    let name = ops::short_name(op);
    name.ends_with('_') && !name.starts_with("__")
}

/// For an in-place op at `graph.nodes[at]` (one in [`IN_PLACE_AS_PURE`], `copy_`, any other): the
/// first later reader (a node, or the graph's output) of the tensor it mutates or of a tensor that
/// one is a view of. This runner has values, not storage: a node's result is its pure form, and
/// no write reaches the tensor written into (or, for a view, the tensor it is a view of). That
/// equals torch only when nothing reads them later (make_fx's LSTM cell applies `sigmoid_` and
/// `tanh_` to chunks of the gates that nothing else reads; torch's circular padding, traced
/// without functionalize, `copy_`s into slices of a `new_empty` the convolution then reads).
fn read_after_in_place(graph: &Graph, at: usize) -> Option<String> {
    let node = &graph.nodes[at];
    if !mutates(&node.op) {
        return None;
    }
    let by_name: HashMap<&str, &Node> = graph.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    let mut aliases = Vec::new();
    let mut next = first_ref(node);
    while let Some(name) = next {
        next = by_name
            .get(name.as_str())
            .filter(|n| n.op == "getitem" || VIEWS.contains(&ops::short_name(&n.op)))
            .and_then(|n| first_ref(n));
        aliases.push(name);
    }
    for later in graph.nodes[at + 1..].iter().filter(|n| n.used) {
        let mut names = Vec::new();
        later
            .args
            .iter()
            .chain(later.kwargs.values())
            .for_each(|j| refs(j, &mut names));
        if let Some(a) = names.iter().find(|n| aliases.contains(n)) {
            return Some(format!("{a} (read by {})", later.name));
        }
    }
    graph
        .outputs
        .iter()
        .filter_map(|o| o.node.as_ref())
        .find(|n| aliases.contains(n))
        .map(|n| format!("{n} (a graph output)"))
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
    for (at, node) in graph.nodes.iter().enumerate() {
        // before `used`: a `copy_` into a view is unused itself, and its write was lost silently
        if let Some(reader) = read_after_in_place(graph, at) {
            let why = if IN_PLACE_AS_PURE.contains(&ops::short_name(&node.op)) {
                "its pure form, which this runner runs, would not equal torch"
            } else {
                "this runner keeps no in-place write (into a view, the tensor it views is left \
                 as it was), so that read would not equal torch"
            };
            rows.push(row(
                node,
                "error",
                Some(format!(
                    "{} mutates {reader} after this node: {why}",
                    node.op
                )),
            ));
            continue;
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(later_reader: &str) -> Graph {
        Graph::parse(&format!(
            r#"{{"format": "candle-port-graph", "version": 1,
                "placeholders": [{{"node": "x", "kind": "input", "name": "0"}}],
                "nodes": [
                  {{"name": "split", "op": "aten.unsafe_split.Tensor", "args": [{{"ref": "x"}}, 2, 0]}},
                  {{"name": "a", "op": "getitem", "args": [{{"ref": "split"}}, 0]}},
                  {{"name": "s", "op": "aten.sigmoid_.default", "args": [{{"ref": "a"}}]}},
                  {{"name": "m", "op": "aten.mul.Tensor", "args": [{{"ref": "s"}}, {{"ref": "{later_reader}"}}]}}
                ],
                "outputs": [{{"node": "m", "index": 0, "upstream": null}}]}}"#
        ))
        .expect("graph parses")
    }

    /// make_fx's LSTM cell: `sigmoid_` on a chunk nothing else reads runs as `sigmoid`; a later
    /// reader of the chunk, or of the tensor it is a view of, stops the node.
    #[test]
    fn in_place_activation_runs_as_pure_only_when_nothing_reads_the_mutated_tensor_later() {
        assert_eq!(read_after_in_place(&graph("s"), 2), None);
        assert_eq!(
            read_after_in_place(&graph("a"), 2).as_deref(),
            Some("a (read by m)")
        );
        assert_eq!(
            read_after_in_place(&graph("x"), 2).as_deref(),
            Some("x (read by m)")
        );
        let x = Tensor::new(&[0.5f64, -1.0, 2.0, 0.0], &candle_core::Device::Cpu).expect("x");
        let tensors = HashMap::from([("input.0".to_string(), x)]);
        let run = execute(&graph("x"), &tensors, OpsMode::Native).expect("runs");
        let row = &run.report.nodes[2];
        assert_eq!(row.status, "error");
        assert!(row
            .message
            .as_deref()
            .is_some_and(|m| m.contains("its pure form")));
        let run = execute(&graph("s"), &tensors, OpsMode::Native).expect("runs");
        assert!(run.report.forward_ok);
    }

    fn copy_graph(into: &str, reader: &str) -> Graph {
        Graph::parse(&format!(
            r#"{{"format": "candle-port-graph", "version": 1,
                "placeholders": [{{"node": "x", "kind": "input", "name": "0"}}],
                "nodes": [
                  {{"name": "buf", "op": "aten.new_empty.default", "args": [{{"ref": "x"}}, [6]]}},
                  {{"name": "part", "op": "aten.slice.Tensor", "args": [{{"ref": "buf"}}, 0, 1, 5]}},
                  {{"name": "c", "op": "aten.copy_.default", "args": [{{"ref": "{into}"}}, {{"ref": "x"}}],
                    "used": {used}, "location": "pad.py:3"}},
                  {{"name": "m", "op": "aten.mul.Tensor", "args": [{{"ref": "{reader}"}}, 2.0]}}
                ],
                "outputs": [{{"node": "m", "index": 0, "upstream": null}}]}}"#,
            used = reader == "c",
        ))
        .expect("graph parses")
    }

    /// torch's circular padding traced without functionalize: `copy_` into a slice of a
    /// `new_empty` that a later node reads. The runner has no storage to write into, so the node
    /// is an error on its line (it was unused, so skipped, and the read saw zeros); a `copy_`
    /// whose own result is what is read runs.
    #[test]
    fn copy_into_a_tensor_read_later_is_an_error_on_its_line() {
        let x = Tensor::new(&[0.5f64, -1.0, 2.0, 0.0], &candle_core::Device::Cpu).expect("x");
        let tensors = HashMap::from([("input.0".to_string(), x)]);
        for (into, reader) in [("part", "buf"), ("buf", "buf")] {
            let run = execute(&copy_graph(into, reader), &tensors, OpsMode::Port).expect("runs");
            let row = &run.report.nodes[2];
            assert_eq!(row.status, "error", "{into} read through {reader}");
            assert_eq!(row.location.as_deref(), Some("pad.py:3"));
            assert!(row
                .message
                .as_deref()
                .is_some_and(|m| m.contains("buf (read by m)") && m.contains("in-place write")));
            assert!(!run.report.ok);
        }
        let run = execute(&copy_graph("x", "c"), &tensors, OpsMode::Port).expect("runs");
        assert!(run.report.forward_ok);
        assert_eq!(run.report.nodes[2].status, "ok");
    }
}
