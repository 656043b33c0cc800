"""The renderers of the committed results pages (``docs/results/*.json``), handed as functions to
:func:`workbench.provenance.check_docs` (``tests/test_docs_claims.py``): a command that writes a page
adds its renderer here, so the check re-renders every page without importing a name stored in data."""

from __future__ import annotations

from benchmarks.generation import bench_generate
from benchmarks.peers import bench_peers
from benchmarks.reproduce import calibrate, settledness
from benchmarks.timing import (bench_admm, bench_admm_factor, bench_cold_start, bench_export, bench_first_call, bench_firstorder, bench_scale,
                               bench_time_limits, tiny_profile)
from problems.generator import render_manifest
from workbench.report.reproduction import render_table
from workbench.report.conformance import render_page

#: every renderer a committed page names
RENDERERS = (bench_admm.render, bench_admm_factor.render, bench_cold_start.render, bench_cold_start.render_front, calibrate.render, bench_export.render, bench_first_call.render, bench_firstorder.render,
             bench_generate.render, bench_peers.render,
             bench_peers.render_targets, bench_scale.render, bench_time_limits.render, render_manifest, render_table, render_page,
             settledness.render, tiny_profile.render)
