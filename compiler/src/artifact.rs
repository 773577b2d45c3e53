//! Compiled artifacts: a directory with `manifest.json` plus target files. The manifest's
//! `format_version` is `MAJOR.MINOR`; readers refuse an unknown major.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const FORMAT_MAJOR: u32 = 1;
pub const FORMAT_MINOR: u32 = 0;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Cpu,
    Tpu,
    Trainium,
}

impl Target {
    pub const ALL: [Target; 3] = [Target::Cpu, Target::Tpu, Target::Trainium];
    pub fn name(&self) -> &'static str {
        match self {
            Target::Cpu => "cpu",
            Target::Tpu => "tpu",
            Target::Trainium => "trainium",
        }
    }
    pub fn parse(s: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == s)
    }
}

/// The part of a manifest every reader checks before anything else.
#[derive(Debug, Serialize, Deserialize)]
pub struct ManifestHeader {
    pub format_version: String,
    pub target: String,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ArtifactError(pub String);

pub fn read_header(dir: &Path) -> Result<ManifestHeader, ArtifactError> {
    let path: PathBuf = dir.join("manifest.json");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        ArtifactError(format!("`{}` is not an Ember artifact: cannot read {}: {e}", dir.display(), path.display()))
    })?;
    let h: ManifestHeader = serde_json::from_str(&text)
        .map_err(|e| ArtifactError(format!("{} is malformed: {e}", path.display())))?;
    let major = h.format_version.split('.').next().and_then(|m| m.parse::<u32>().ok());
    match major {
        Some(FORMAT_MAJOR) => Ok(h),
        Some(m) => Err(ArtifactError(format!(
            "{} has format_version {} (major {m}); this Ember reads major {FORMAT_MAJOR}. Recompile the model with this Ember.",
            path.display(),
            h.format_version
        ))),
        None => Err(ArtifactError(format!("{}: format_version `{}` is not MAJOR.MINOR", path.display(), h.format_version))),
    }
}
