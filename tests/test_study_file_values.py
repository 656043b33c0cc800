"""Issue 45, item 4 (left over): a 16 MB study file of 5.5 million inline tables took about 1 GB to
parse (within the BYTES limit: each value costs the parser about 150 bytes). Rule: a study file's
values are counted from its delimiters (, = [ {) before any parser sees it, and bounded by
WORKBENCH_MAX_VALUES (workbench.limits.count_values): past it, one line, exit 2, nothing parsed.
Variants: every shape TOML makes many values with (inline tables, arrays of numbers, strings and
arrays, keys, arrays of tables, dotted keys); the issue's 16 MB file in a child process under
500 MB and 10 s of CPU; every shipped study well within the limit."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.limits import limit

ROOT = Path(__file__).resolve().parents[1]
HEAD = '[study]\nname = "s"\n'
N = 260_000          # past the default limit of 250,000 in every shape
SHAPES = {"inline tables": "x = [" + "{}," * N + "]\n",
          "numbers": "x = [" + "1," * N + "]\n",
          "nested arrays": "x = [" + "[]," * N + "]\n",
          "keys": "".join(f"k{i} = 1\n" for i in range(N)),
          "arrays of tables": "[[x]]\n" * N,
          "dotted keys": "".join(f"a.b{i} = 0\n" for i in range(N))}


#: the CLI in a child process that reports its own CPU time and peak memory on its last stderr line; the
#: peak is its own address space's high-water mark (VmHWM), not ru_maxrss, which on Linux carries over the
#: resident size of the process that started it (a pytest worker of a gigabyte) across the exec
CHILD = ("import resource, sys\nfrom workbench.cli import main\ncode = main(sys.argv[1:])\n"
         "u = resource.getrusage(resource.RUSAGE_SELF)\npeak = u.ru_maxrss\n"
         "try:\n    peak = int(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')))\n"
         "except OSError:\n    pass\n"
         "print('USAGE', u.ru_utime + u.ru_stime, peak, file=sys.stderr)\nsys.exit(code)\n")


def _run_child(path: Path):
    """(exit code, stderr without the usage line, CPU seconds, peak kB) of ``workbench run PATH``."""
    proc = subprocess.run([sys.executable, "-c", CHILD, "run", str(path), "--no-report"], cwd=path.parent,
                          capture_output=True, text=True, timeout=120)
    *lines, usage = proc.stderr.splitlines(keepends=True)
    _, cpu, peak = usage.split()
    return proc.returncode, "".join(lines), float(cpu), int(peak)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_study_file_of_many_values_is_refused_before_parsing(tmp_path, monkeypatch, capsys, shape):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "s.toml"
    path.write_text(HEAD + SHAPES[shape])
    t0 = time.process_time()
    assert main(["run", str(path), "--no-report"]) == 2
    assert time.process_time() - t0 < 2.0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "values" in err and "WORKBENCH_MAX_VALUES" in err, err
    assert not (tmp_path / "results").exists()


def test_the_issues_16_mb_file_is_one_line_small_and_fast(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(HEAD + "x = [" + "{}," * 5_300_000 + "]\n")      # 16 MB, within WORKBENCH_MAX_BYTES
    assert path.stat().st_size < limit("BYTES")
    code, err, cpu, peak = _run_child(path)
    assert code == 2 and err.count("\n") == 1 and "values" in err, err
    assert "Traceback" not in err
    assert cpu < 10.0 and peak < 500_000          # s and kB, the child's own


def test_the_costliest_shape_within_the_limit_stays_small(tmp_path):
    """Table headers cost the parser most (about 800 bytes each): a file of them just within the
    limit is parsed (and refused for its unknown tables) under 500 MB and 10 s of CPU."""
    path = tmp_path / "s.toml"
    n = int(limit("VALUES")) - 10
    path.write_text(HEAD + "".join(f"[t{i}]\n" for i in range(n)))
    code, err, cpu, peak = _run_child(path)
    assert code == 2 and err.count("\n") == 1 and "values" not in err, err
    assert cpu < 10.0 and peak < 500_000          # s and kB, the child's own


def test_the_limit_is_raised_by_its_variable(tmp_path, monkeypatch, capsys):
    path = tmp_path / "s.toml"
    path.write_text(HEAD + "x = [" + "1," * 50 + "]\n")
    monkeypatch.setenv("WORKBENCH_MAX_VALUES", "20")
    assert main(["run", str(path), "--no-report"]) == 2
    assert "over the limit of 20 values" in capsys.readouterr().err


def test_every_shipped_study_is_far_within_the_limit():
    from workbench.limits import count_values
    studies = sorted((ROOT / "studies").glob("*.toml"))
    assert studies
    for p in studies:
        assert count_values(p.read_text(), str(p)) < limit("VALUES") / 100, p
