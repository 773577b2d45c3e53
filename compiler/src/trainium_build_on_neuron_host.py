"""Build an Ember trainium artifact into a NEFF on a Trn2 host with the Neuron SDK.

UNTESTED: Ember's build machine has no Neuron SDK and no Trainium hardware. This script follows
the public Neuron documentation; check every step on a real host before relying on it.

    python build_on_neuron_host.py [ARTIFACT_DIR] [--skip-kernels]

Steps:
1. `--skip-kernels` (the default while splicing is not implemented): neuronx-cc compiles the
   portable form (`model.hlo_module.pb`, kernel regions as plain HLO calls) with the recorded flags
   into `model.neff`.
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
    p.add_argument("--output", default="model.neff")
    ns = p.parse_args()
    art = Path(ns.artifact)
    manifest = json.loads((art / "manifest.json").read_text())
    module = art / manifest["module"]
    if manifest["kernels"] and not ns.skip_kernels:
        print(
            "error: splicing NKI kernels into AwsNeuronCustomNativeKernel custom calls is not implemented "
            "(the backend_config format is not publicly documented); run with --skip-kernels to compile "
            "the portable form",
            file=sys.stderr,
        )
        return 2
    cmd = ["neuronx-cc", "compile", str(module), *manifest["neuronx_cc_flags"], "--output", str(art / ns.output)]
    print(" ".join(cmd), file=sys.stderr)
    return subprocess.call(cmd)


if __name__ == "__main__":
    sys.exit(main())
