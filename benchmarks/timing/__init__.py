"""What the workbench's own code costs: first calls and cold starts, the interior-point and first-order
solvers, the exact methods, condensing, exporting, the time limits and the largest problems
(``python -m benchmarks.timing.NAME``). Comparisons with other programs are in :mod:`benchmarks.peers`."""
