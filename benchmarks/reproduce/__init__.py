"""The papers' reproductions: one module per paper behind one command (``python -m benchmarks.reproduce
PAPER``, this package's ``__main__``): ``anitescu_hart_2003``, ``mazhar_2014``, ``melanz_2015``,
``pqn_2017``; what they share (``common``); the measurements they are built on (``anitescu_hart_table1``,
``compaction``, ``drum_pqn``, ``trajectories``); and the two commands that fit and sweep what Mazhar et
al. 2014 leave unstated (``calibrate``, its test rows and page in ``calibrate_rows``, and ``settledness``).
The verdict rules are :mod:`workbench.report.reproduction`'s."""
