//! `candle-port-run DIR [--ops native|port] [--out DIR]`: reads DIR/graph.json and
//! DIR/tensors.safetensors, writes `candle-<mode>.safetensors` (outputs and parameter gradients)
//! and `candle-<mode>.json` (the per-op report) into the output directory (default DIR).
//! `candle-port-run --measure-ops OUT.json` runs the op probes (`measure.rs`) and writes their
//! records, from which `scripts/gen_optable.py` generates verify's op table.
//! Exit 0 when the run finished (the report says whether candle passed), 2 on a usage or I/O error.

use std::path::PathBuf;

use candle_core::{Device, Result};
use candle_port_run::{exec, graph::Graph, ops::OpsMode};

fn run(args: &[String]) -> Result<()> {
    if args.first().map(String::as_str) == Some("--measure-ops") {
        let Some(path) = args.get(1) else {
            candle_core::bail!("usage: candle-port-run --measure-ops OUT.json")
        };
        let records = candle_port_run::measure::measure_all()?;
        let json = serde_json::json!({
            "format": "candle-port-op-measurements", "version": 1,
            "candle": candle_port_run::report::CANDLE_VERSION, "records": records,
        });
        let text = serde_json::to_string_pretty(&json)
            .map_err(|e| candle_core::Error::Msg(e.to_string()))?;
        std::fs::write(path, text)?;
        println!("{} records", records.len());
        return Ok(());
    }
    let mut dir = None;
    let mut out = None;
    let mut mode = OpsMode::Native;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--ops" => {
                mode = match it.next().map(String::as_str) {
                    Some("native") => OpsMode::Native,
                    Some("port") => OpsMode::Port,
                    other => candle_core::bail!("--ops takes native or port, not {other:?}"),
                }
            }
            "--out" => out = it.next().map(PathBuf::from),
            _ if dir.is_none() => dir = Some(PathBuf::from(a)),
            _ => candle_core::bail!("unexpected argument {a}"),
        }
    }
    let Some(dir) = dir else {
        candle_core::bail!("usage: candle-port-run DIR [--ops native|port] [--out DIR]")
    };
    let out = out.unwrap_or_else(|| dir.clone());
    let text = std::fs::read_to_string(dir.join("graph.json"))?;
    let graph = Graph::parse(&text)?;
    let tensors = candle_core::safetensors::load(dir.join("tensors.safetensors"), &Device::Cpu)?;
    let result = exec::execute(&graph, &tensors, mode)?;
    std::fs::create_dir_all(&out)?;
    candle_core::safetensors::save(
        &result.tensors,
        out.join(format!("candle-{}.safetensors", mode.name())),
    )?;
    let json = serde_json::to_string_pretty(&result.report)
        .map_err(|e| candle_core::Error::Msg(e.to_string()))?;
    std::fs::write(out.join(format!("candle-{}.json", mode.name())), json)?;
    println!("{}", if result.report.ok { "ok" } else { "failed" });
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = run(&args) {
        eprintln!(
            "candle-port-run: {}",
            e.to_string().lines().next().unwrap_or("")
        );
        std::process::exit(2);
    }
}
