"""What the dataset generator (:mod:`problems.generator`, ``workbench generate``) costs against its targets:
the papers' protocols, the scaling series, the large bed (``python -m benchmarks.generation.bench_generate``;
``generate_bed`` and ``generate_assembly`` are the bed and per-step assembly timings it runs). These measure
the generator; they make no dataset that the workbench uses (``workbench generate`` does)."""
