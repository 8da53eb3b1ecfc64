//! The torch side's `manifest.json`, as far as the candle side needs it.

use candle_core::{DType, Error, Result};
use serde::Deserialize;
use std::path::Path;

/// The format this crate reads; `candle-port reference` writes it.
pub(crate) const FORMAT: &str = "candle-port-parity/1";

#[derive(Debug, Deserialize)]
pub(crate) struct Manifest {
    pub(crate) format: String,
    pub(crate) dtype: String,
    pub(crate) inputs: Vec<String>,
    pub(crate) outputs: Vec<String>,
    pub(crate) parameters: Vec<String>,
    #[serde(default)]
    pub(crate) renames: Vec<(String, String)>,
    #[serde(default)]
    pub(crate) steps: Option<Steps>,
}

/// `--steps N`: the optimizer torch ran, to run the same one in candle.
#[derive(Debug, Deserialize, Clone)]
pub(crate) struct Steps {
    pub(crate) count: usize,
    pub(crate) optimizer: String,
    pub(crate) lr: f64,
    #[serde(default)]
    pub(crate) weight_decay: f64,
    #[serde(default = "default_betas")]
    pub(crate) betas: (f64, f64),
    #[serde(default = "default_eps")]
    pub(crate) eps: f64,
}

fn default_betas() -> (f64, f64) {
    (0.9, 0.999)
}

fn default_eps() -> f64 {
    1e-8
}

impl Manifest {
    pub(crate) fn read(dir: &Path) -> Result<Self> {
        let path = dir.join("manifest.json");
        let text = std::fs::read_to_string(&path).map_err(|e| {
            Error::Msg(format!(
                "{}: {e} (write it with `candle-port reference MODEL --out {}`)",
                path.display(),
                dir.display()
            ))
        })?;
        let manifest: Manifest = serde_json::from_str(&text)
            .map_err(|e| Error::Msg(format!("{}: not a parity manifest: {e}", path.display())))?;
        if manifest.format != FORMAT {
            return Err(Error::Msg(format!(
                "{}: format {:?}, this crate reads {FORMAT:?} (update candle-port or the crate)",
                path.display(),
                manifest.format
            )));
        }
        Ok(manifest)
    }

    pub(crate) fn dtype(&self) -> Result<DType> {
        match self.dtype.as_str() {
            "float32" => Ok(DType::F32),
            "float64" => Ok(DType::F64),
            "float16" => Ok(DType::F16),
            "bfloat16" => Ok(DType::BF16),
            other => Err(Error::Msg(format!(
                "manifest.json: unsupported dtype {other:?}"
            ))),
        }
    }
}
