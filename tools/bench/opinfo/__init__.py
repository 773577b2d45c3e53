#!/usr/bin/env python3
"""Op-level harness for Ember, driven by PyTorch's OpInfo database.

Two commands, run one after the other::

    python tools/bench/opinfo.py export [--subset] [--ops a,b] [--limit-ops N] [--dtype D[,D]]
                                        [--max-samples-per-op K] [--cache DIR] [--jobs J]
    python tools/bench/opinfo.py check  [--subset] [--ops a,b] [--stages import,cpu] [--dtype D[,D]]
                                        [--max-samples-per-op K] [--ember PATH] [--cache DIR]
                                        [--report FILE.md] [--json FILE] [--jobs J]
                                        [--write-expected [FILE]]

``export`` walks ``torch.testing._internal.common_methods_invocations.op_db``. For
every OpInfo it seeds torch with 0, draws up to K samples from
``op.sample_inputs("cpu", torch.float32)`` and wraps each sample in an ``nn.Module``
whose ``forward`` takes the sample's tensors (every tensor leaf of ``sample.input``,
``sample.args`` and ``sample.kwargs``) as inputs and closes over everything else,
calling ``op.op``. The module is exported with
``torch.export.export(...).run_decompositions()`` (core ATen) and saved to a
content-addressed cache::

    DIR/<key>.pt2    torch.export.save of the decomposed program
    DIR/<key>.npz    arg0.. (the inputs) and out0.. (eager outputs, tensor leaves only)
    DIR/<key>.json   the sample's index entry (also written for failed exports)
    DIR/index.json   every entry: op, variant_test_name, sample_index, key, status
                     (exported | export_failed), error, aten_targets, sample, ...

``key`` is the sha256 of (op name, variant, sample index, sample dtype, shapes/dtypes/non-tensor
args, torch version, harness version); a sample whose ``<key>.json`` exists is
not exported again (use ``--force`` to redo it).

``--dtype bfloat16`` / ``float16`` (or a list, run one after the other) draws the samples with
``op.sample_inputs("cpu", torch.bfloat16)`` instead, for every OpInfo that lists the dtype in
``supported_dtypes("cpu")`` (the others are recorded as unsupported, not resampled in another
dtype). Each dtype has its own index (``index_bfloat16.json``, ``index_float16.json``; float32
keeps ``index.json``) and report (``opinfo_cpu_bf16.md``, ``opinfo_tpu_f16.md``, ...); bfloat16
arrays are stored as ml_dtypes' ``<V2`` (float32 runs keep storing a bfloat16 output widened,
as their cached samples do). Narrow outputs are compared with torch.testing's defaults for the
dtype, and a wrong result is measured against a float64 evaluation of the same sample
(``exact_reference``): when Ember is the nearer of the two, it is reported as eager's
rounding (kind ``precision``), not as a wrong result.

``check`` runs the *stages* in order on every exported sample of the index (a sample
passes when every selected stage passes; the first failing stage's error is what the
report groups by) and writes a markdown report, by default
``tools/bench/results/opinfo_<last stage>.md`` (``..._subset.md`` with ``--subset``,
none with ``--ops``), ending its output with the line
``N passed, M failed``. The stages (``--stages``, default ``import,cpu``):

``import``  ``ember import X.pt2``: the torch.export frontend plus the IR verifier.
``tpu``     ``ember compile X.pt2 --target tpu``, the StableHLO run on XLA (jaxlib's CPU
            client, in-process through ``ember.xla``) on ``arg*``, compared like ``cpu``.
``cpu``     ``ember compile X.pt2 --target cpu``, ``ember run`` on ``arg*`` of the .npz,
            and a comparison of its outputs with ``out*`` (``compare_outputs``, with the
            dtype-aware ``TOLERANCES``). Failures are classified as ``compile``, ``run``
            or ``wrong result`` (with max abs/rel error). The report also lists the
            *claimed ops* (``claimed_targets``): core ATen targets every relevant sample
            containing them passes.

A stage is a class with a ``name`` and a ``run(sample, ctx) -> StageResult`` method
registered in ``STAGES``. ``--write-expected`` records every sample's pass/fail in
``tools/bench/opinfo_subset_expected.json`` (with ``--subset``), which
``tools/python/tests/test_opinfo_subset.py`` compares against.

Modules: ``common`` (paths, the index), ``export``, ``stages``, ``compare`` (tolerances),
``classify`` (failure kinds and reasons), ``report`` (markdown), ``cli`` (the two commands);
``tools/bench/opinfo.py`` runs ``cli.main``.
"""
