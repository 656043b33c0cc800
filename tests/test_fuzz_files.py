"""The generated fuzz suite of the problem-file readers (issue 24): several hundred malformed files
derived from valid ones (tests/fuzz_files.py), each read through the command line (``info FILE``,
``export ... --guess FILE``) in a child process under an address-space cap (1 GiB, of which the CLI
maps ~620 MB) and a per-case time cap (tests/fuzz_harness.py), whose peak resident memory must stay
under 500 MB. Every case must end with exit code 0, 1 or 2, exit 2 with exactly one line on stderr,
and none with a traceback, a warning, a signal, a hang or a MemoryError. A few cases
also run as the real ``python -m workbench.cli`` process.

The entry limit is lowered to 2,000,000 for the children (``WORKBENCH_MAX_ENTRIES``): a file may
declare any size up to the limit and the reader will allocate it, so the limit, not the file, is
what bounds memory, and it is set here to fit the cap. The zip bomb of 300,000,000 entries is
refused under the default limit too (tests/test_hostile_files.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import pytest

from fuzz_files import make_cases
from fuzz_harness import ENV, ROOT, RSS_MB, problems, run_cases
from workbench.shared_data import shared_data_dir

LIMITS = {"WORKBENCH_MAX_ENTRIES": "2000000", "WORKBENCH_MAX_TEXT_MB": "16"}
MIN_CASES = 300
SPOT_EVERY = 50   # one case in SPOT_EVERY also runs as its own `python -m workbench.cli` process


@pytest.fixture(scope="module")
def fuzz(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz")
    shared = shared_data_dir()
    cases = make_cases(folder / "cases", shared if shared is not None and shared.is_dir() else None)
    outcomes, peak_mb = run_cases(cases, env=LIMITS)
    return cases, outcomes, peak_mb


def test_enough_cases_and_every_one_ran(fuzz):
    cases, outcomes, _ = fuzz
    assert len(cases) >= MIN_CASES
    assert len({c["id"] for c in cases}) == len(cases)
    assert set(outcomes) == {c["id"] for c in cases}


def test_no_case_crashes_hangs_or_leaks_a_traceback(fuzz):
    cases, outcomes, _ = fuzz
    bad = {case_id: found for case_id, outcome in outcomes.items() if (found := problems(outcome))}
    assert not bad, "\n".join(f"{k}: {v}" for k, v in sorted(bad.items())[:20]) + f"\n({len(bad)} cases)"


def test_valid_bases_read_and_malformed_files_are_mostly_refused(fuzz):
    """The bases read (exit 0), so the suite tests readers that work; the structural faults are refused."""
    cases, outcomes, _ = fuzz
    valid = [k for k in outcomes if k.endswith(": valid") or k.endswith(": valid guess")]
    assert valid and all(outcomes[k]["code"] == 0 for k in valid), {k: outcomes[k]["stderr"] for k in valid}
    refused = [k for k in outcomes if any(word in k for word in (
        "external", "virtual", "soft link", "complex", "not monotone", "2-D mu", "bomb", "huge", "10^12",
        "FIFO", "directory", "empty", "out of range", "pickled"))]
    assert len(refused) >= 60
    accepted = {k: outcomes[k]["code"] for k in refused if outcomes[k]["code"] != 2 and "(not read)" not in k}
    assert not accepted, accepted


def test_children_stay_under_the_memory_cap(fuzz):
    _, _, peak_mb = fuzz
    assert peak_mb < RSS_MB


def test_spot_cases_as_real_processes(fuzz):
    """Every SPOT_EVERY-th case through ``python -m workbench.cli``: the same exit code as in the batch,
    one line on stderr for exit 2, no traceback."""
    cases, outcomes, _ = fuzz
    env = dict(os.environ, **ENV, **LIMITS)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)

    def run(case: dict) -> tuple[dict, int, str]:
        with tempfile.TemporaryFile() as err:
            proc = subprocess.run([sys.executable, "-m", "workbench.cli", *case["argv"]], stdout=subprocess.DEVNULL,
                                  stderr=err, env=env, cwd=ROOT, timeout=120)
            err.seek(0)
            return case, proc.returncode, err.read().decode("utf-8", errors="replace")

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        runs = list(pool.map(run, cases[::SPOT_EVERY]))
    assert len(runs) >= 8
    for case, code, stderr in runs:
        assert code == outcomes[case["id"]]["code"], (case["id"], stderr)
        assert "Traceback" not in stderr, (case["id"], stderr)
        if code == 2:
            assert len(stderr.strip().splitlines()) == 1, (case["id"], stderr)
