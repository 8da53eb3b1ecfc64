//! `parity-ports PORT DIR [CONFIG_JSON | DEFECT]`: build one candle port from the torch weights
//! in the parity directory DIR (written by `candle-port reference`), run the parity check and
//! write the candle side for `candle-port compare DIR`.
//!
//! PORT is `small` (fixtures/parity/small_net.py, with an optional planted DEFECT) or one of
//! candle-transformers 0.11.0's vision models, used as published: `vit` and `segformer` take
//! the transformers config as JSON, the others fixed architectures (tests/parity/ports.py lists
//! each one's torch original).

mod small;

use candle_core::{Module, Result};
use candle_port_parity::Parity;
use candle_transformers::models::{
    beit, convnext, dinov2, efficientnet, mobilenetv4, repvgg, resnet, segformer, vit,
};
use std::process::ExitCode;

const CLASSES: usize = 10;

fn config<T: serde::de::DeserializeOwned>(json: Option<&str>) -> Result<T> {
    let json =
        json.ok_or_else(|| candle_core::Error::Msg("this port needs its config as JSON".into()))?;
    serde_json::from_str(json).map_err(|e| candle_core::Error::Msg(format!("config: {e}")))
}

fn run(port: &str, dir: &str, extra: Option<&str>) -> Result<candle_port_parity::Summary> {
    let mut parity = Parity::open(dir)?;
    if std::env::var_os("PARITY_ALLOW_MISSING").is_some() {
        parity = parity.allow_missing();
    }
    match port {
        "small" => {
            let defect = small::Defect::parse(extra.unwrap_or("none"))
                .ok_or_else(|| candle_core::Error::Msg(format!("unknown defect {extra:?}")))?;
            let model = parity.build(|vb| small::SmallNet::new(vb, defect))?;
            parity.check(|xs| model.forward(&xs[0]))
        }
        "vit" => {
            let model = parity.build(|vb| vit::Model::new(&config(extra)?, CLASSES, vb))?;
            parity.check(|xs| model.forward(&xs[0]))
        }
        "segformer" => {
            let model = parity.build(|vb| {
                segformer::ImageClassificationModel::new(&config(extra)?, CLASSES, vb)
            })?;
            parity.check(|xs| model.forward(&xs[0]))
        }
        "resnet18" => {
            let model = parity.build(|vb| resnet::resnet18(CLASSES, vb))?;
            parity.check(|xs| model.forward(&xs[0]))
        }
        "efficientnet_b0" | "efficientnet_b0_eps3" => {
            let model = parity.build(|vb| {
                efficientnet::EfficientNet::new(vb, efficientnet::MBConvConfig::b0(), CLASSES)
            })?;
            parity.check(|xs| model.forward(&xs[0]))
        }
        "convnext_atto" => {
            let model =
                parity.build(|vb| convnext::convnext(&convnext::Config::atto(), CLASSES, vb))?;
            parity.check(|xs| model.forward(&xs[0]))
        }
        "repvgg_a0" => {
            let model = parity.build(|vb| repvgg::repvgg(&repvgg::Config::a0(), CLASSES, vb))?;
            parity.check(|xs| model.forward(&xs[0]))
        }
        "mobilenetv4_small" => {
            let model = parity
                .build(|vb| mobilenetv4::mobilenetv4(&mobilenetv4::Config::small(), CLASSES, vb))?;
            parity.check(|xs| model.forward(&xs[0]))
        }
        "dinov2_small" => {
            let model = parity.build(|vb| dinov2::vit_small(vb))?;
            parity.check(|xs| model.forward(&xs[0]))
        }
        "beit_tiny" => {
            // candle's beit fixes 384x384 inputs and 1000 classes; depth, width and heads are free.
            let model = parity.build(|vb| beit::BeitVisionTransformer::new(vb, 2, 32, 2))?;
            parity.check(|xs| model.forward(&xs[0]))
        }
        other => Err(candle_core::Error::Msg(format!("unknown port {other:?}"))),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: parity-ports PORT DIR [CONFIG_JSON | DEFECT]");
        return ExitCode::from(2);
    }
    match run(&args[1], &args[2], args.get(3).map(String::as_str)) {
        Ok(summary) => {
            println!(
                "{}: forward {}, backward {}, {} Vars without a gradient",
                args[1],
                if summary.forward_error.is_some() {
                    "failed"
                } else {
                    "ran"
                },
                if summary.backward_error.is_some() {
                    "failed"
                } else {
                    "ran"
                },
                summary.without_gradient.len()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("parity-ports {}: {e}", args[1]);
            // A port that did not build still wrote its side (Parity::build) for compare.
            let written = std::path::Path::new(&args[2]).join("candle.json").exists();
            ExitCode::from(if written { 1 } else { 2 })
        }
    }
}
