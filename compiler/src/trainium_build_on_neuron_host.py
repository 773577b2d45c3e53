"""Build an Ember trainium artifact into a NEFF on a Trn2 host with the Neuron SDK.

UNTESTED: Ember's build machine has no Neuron SDK and no Trainium hardware. This script follows
the public Neuron documentation; check every step on a real host before relying on it.

    python build_on_neuron_host.py [ARTIFACT_DIR] [--skip-kernels]

Steps:
1. `--skip-kernels` (the default while splicing is not implemented): neuronx-cc compiles the
   portable form (`model.hlo_module.pb`, kernel regions as plain HLO calls) with the recorded flags
   into `model.neff`. A model with symbolic dims has one module per padded bucket (manifest
   `buckets`): each is compiled into its own NEFF next to it (`model.b0.hlo_module.pb` ->
   `model.b0.neff`); the Neuron runtime then loads the NEFF of the smallest bucket that fits.
2. With kernels: each `kernels/<name>.py` (an `@nki.jit` function `<name>`) must be compiled by
   the `nki` package and its result spliced into the custom calls to `AwsNeuronCustomNativeKernel`
   of `model.neuron.hlo_module.pb`, replacing the placeholder `backend_config`. The format of that
   config is not publicly documented, so this step is NOT implemented: the script stops and says so.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("artifact", nargs="?", default=str(Path(__file__).resolve().parent))
    p.add_argument("--skip-kernels", action="store_true", help="compile the portable form (kernel regions as plain HLO)")
    ns = p.parse_args()
    art = Path(ns.artifact)
    manifest = json.loads((art / "manifest.json").read_text())
    modules = [b["module"] for b in manifest.get("buckets") or []] or [manifest["module"]]
    if manifest["kernels"] and not ns.skip_kernels:
        print(
            "error: splicing NKI kernels into AwsNeuronCustomNativeKernel custom calls is not implemented "
            "(the backend_config format is not publicly documented); run with --skip-kernels to compile "
            "the portable form",
            file=sys.stderr,
        )
        return 2
    for module in modules:
        neff = art / (module.removesuffix(".hlo_module.pb") + ".neff")
        cmd = ["neuronx-cc", "compile", str(art / module), *manifest["neuronx_cc_flags"], "--output", str(neff)]
        print(" ".join(cmd), file=sys.stderr)
        code = subprocess.call(cmd)
        if code != 0:
            print(f"error: neuronx-cc failed on {module} (exit code {code})", file=sys.stderr)
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
