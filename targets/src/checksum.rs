//! File checksums of an artifact. `manifest.json`'s `files` lists every other file of the
//! artifact with its size and SHA-256, written by the compiler and checked before anything is
//! loaded: a truncated or edited `kernels.so` would otherwise be dlopen'ed (and run), a
//! truncated `weights.bin` read as other numbers.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

/// One file's entry in the manifest's `files`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSum {
    pub bytes: u64,
    pub sha256: String,
}

impl FileSum {
    pub fn of(data: &[u8]) -> FileSum {
        FileSum { bytes: data.len() as u64, sha256: hex(&Sha256::digest(data)) }
    }
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// The checksums of `files` (name, contents), sorted by name, for the manifest.
pub fn sums<'a>(files: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> BTreeMap<String, FileSum> {
    files.into_iter().map(|(n, b)| (n.to_string(), FileSum::of(b))).collect()
}

/// Whether a manifest of this `format_version` must list its files: 2.0 artifacts predate the
/// checksums and load without them.
pub fn required(format_version: &str) -> bool {
    let mut it = format_version.split('.').map(|p| p.parse::<u32>().ok());
    !matches!((it.next(), it.next()), (Some(Some(2)), Some(Some(0))))
}

/// Checks every listed file of the artifact in `dir` against its size and SHA-256. The size is
/// checked first (a truncated file is named as truncated without hashing it); the hash streams
/// the file through a 1 MiB buffer, so a weights file of any size costs one read.
pub fn verify(dir: &Path, format_version: &str, files: &BTreeMap<String, FileSum>) -> Result<(), String> {
    if files.is_empty() {
        if required(format_version) {
            return Err(
                "manifest.json lists no file checksums (`files`); the artifact is damaged: recompile the model".into(),
            );
        }
        return Ok(());
    }
    for (name, want) in files {
        if name.split('/').any(|c| c == ".." || c.is_empty()) || name.starts_with('/') {
            return Err(format!("manifest.json lists a file outside the artifact: `{name}`"));
        }
        let path = dir.join(name);
        // Callers put the artifact's directory in front.
        let damaged = |what: String| format!("`{name}` {what}; the artifact is damaged: recompile the model");
        let mut f = std::fs::File::open(&path).map_err(|e| damaged(format!("cannot be opened ({e})")))?;
        let len = f.metadata().map_err(|e| damaged(format!("cannot be read ({e})")))?.len();
        if len != want.bytes {
            let how = if len < want.bytes { "is truncated" } else { "is longer than compiled" };
            return Err(damaged(format!("{how}: {len} bytes, manifest.json says {}", want.bytes)));
        }
        let mut h = Sha256::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = f.read(&mut buf).map_err(|e| damaged(format!("cannot be read ({e})")))?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
        }
        if hex(&h.finalize()) != want.sha256 {
            return Err(damaged("does not match its SHA-256 in manifest.json (it was edited after compile)".into()));
        }
    }
    Ok(())
}

/// [`verify`] for an artifact of any target: reads `format_version` and `files` from its
/// `manifest.json`.
pub fn verify_dir(dir: &Path) -> Result<(), String> {
    #[derive(Deserialize)]
    struct Head {
        #[serde(default)]
        format_version: String,
        #[serde(default)]
        files: BTreeMap<String, FileSum>,
    }
    let path = dir.join("manifest.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let h: Head = serde_json::from_str(&text).map_err(|e| format!("{} is malformed: {e}", path.display()))?;
    verify(dir, &h.format_version, &h.files)
}
