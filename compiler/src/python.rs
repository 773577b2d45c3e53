//! The Python side of the XLA-based targets: jaxlib has the StableHLO -> HLO converter, the VHLO
//! writer and the PJRT client, so those steps run `python -m ember.xla` in a subprocess. This
//! module is the one place that finds that Python and runs it.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The Python that runs `ember.xla`: `EMBER_PYTHON`, else `~/.cache/ember/venv/bin/python` if it
/// exists. Callers word the error, since what is missing depends on what they were doing.
pub fn find() -> Option<PathBuf> {
    match std::env::var_os("EMBER_PYTHON").filter(|p| !p.is_empty()) {
        Some(p) => Some(PathBuf::from(p)),
        None => std::env::var_os("HOME")
            .map(|h| PathBuf::from(h).join(".cache/ember/venv/bin/python"))
            .filter(|p| p.exists()),
    }
}

/// Runs `python -m ember.xla TOOL ARGS` and returns its standard output. A failure is
/// `{failed}` followed by the tool's standard error.
pub fn ember_xla<I: AsRef<OsStr>>(
    python: &Path,
    tool: &str,
    args: impl IntoIterator<Item = I>,
    failed: &str,
) -> Result<String, String> {
    let o = std::process::Command::new(python)
        .args(["-m", "ember.xla", tool])
        .args(args)
        .output()
        .map_err(|e| format!("cannot start `{}`: {e}", python.display()))?;
    if !o.status.success() {
        return Err(format!("{failed}{}", String::from_utf8_lossy(&o.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// `ember run` on an artifact of an XLA-based target: hands it to `python -m ember.xla run` and
/// returns the runner's exit code (its messages go straight to the terminal).
pub fn run_artifact(target: &str, dir: &Path, inputs: &Path, outputs: &Path, repeat: usize) -> Result<i32, String> {
    let how = format!(
        "python -m ember.xla run {} --inputs {} --outputs {}",
        dir.display(),
        inputs.display(),
        outputs.display()
    );
    let Some(python) = find() else {
        return Err(format!(
            "`{}` is a {target} artifact: it runs on XLA through jaxlib, not in this binary. Run\n  {how}\nwith a Python that has jax 0.10.2 and the ember package (`make setup` makes ~/.cache/ember/venv), or set EMBER_PYTHON to one",
            dir.display()
        ));
    };
    let mut cmd = std::process::Command::new(&python);
    cmd.args(["-m", "ember.xla", "run"]).arg(dir).arg("--inputs").arg(inputs).arg("--outputs").arg(outputs);
    if repeat > 1 {
        cmd.arg("--repeat").arg(repeat.to_string());
    }
    let status = cmd.status().map_err(|e| {
        format!(
            "`{}` is a {target} artifact, run by `{how}`; cannot start `{}`: {e} (set EMBER_PYTHON to a Python with jax 0.10.2 and the ember package)",
            dir.display(),
            python.display()
        )
    })?;
    status.code().ok_or_else(|| format!("`{} -m ember.xla` was killed by a signal", python.display()))
}
