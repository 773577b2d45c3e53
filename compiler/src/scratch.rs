//! Temporary files and directories carry the id of the process that made them, so a later run
//! can remove the ones a killed process left behind (a SIGKILL runs no cleanup).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

static SEQ: AtomicUsize = AtomicUsize::new(0);

/// `{prefix}{pid}-{n}`: unique per process and call (threads compile in parallel).
fn unique(prefix: &str) -> String {
    format!("{prefix}{}-{}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed))
}

/// A fresh path next to `path`, named `.NAME.{tag}-PID-N`, after removing the ones with this
/// name and tag whose process is gone.
pub fn sibling(path: &Path, tag: &str) -> PathBuf {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let prefix = format!(".{name}.{tag}-");
    remove_stale(dir, &prefix);
    dir.join(unique(&prefix))
}

/// A new directory `ember-{kind}-PID-N` in the system temp dir, after removing the `kind` ones
/// whose process is gone.
pub fn temp_dir(kind: &str) -> io::Result<PathBuf> {
    let prefix = format!("ember-{kind}-");
    let tmp = std::env::temp_dir();
    remove_stale(&tmp, &prefix);
    let dir = tmp.join(unique(&prefix));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Runs `f` in a fresh [`temp_dir`] and removes the directory after, whatever `f` returned: the
/// "write inputs, run a tool, read its outputs" steps of linking and of `ember.xla`.
pub fn with_temp_dir<T>(kind: &str, f: impl FnOnce(&Path) -> Result<T, String>) -> Result<T, String> {
    let dir = temp_dir(kind).map_err(|e| format!("cannot create a scratch dir: {e}"))?;
    let r = f(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    r
}

/// Removes the entries of `dir` named `{prefix}PID` or `{prefix}PID-...` whose process no longer
/// runs. Best effort: another process may be removing the same entry.
fn remove_stale(dir: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !alive(pid) {
            let p = e.path();
            let _ = if p.is_dir() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
        }
    }
}

/// Whether process `pid` may still use its files. Without /proc there is no cheap answer, so
/// every process counts as alive and nothing is removed.
fn alive(pid: u32) -> bool {
    pid == std::process::id() || !Path::new("/proc/self").exists() || Path::new(&format!("/proc/{pid}")).exists()
}
