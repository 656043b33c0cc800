"""Issue 45, class 5: no traceback from the environment or the API. Closed standard streams, numba's
and OpenMP's variables, and the numbers of SolveOptions (checked at construction, with the command
line's words) give one line and exit 2 - or run, where the value is valid (OMP_NUM_THREADS=4,2)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from workbench.errors import InputError
from workbench.solvers import SolveOptions

ROOT = Path(__file__).resolve().parents[1]


def _cli(args, env=None, **kwargs) -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "workbench.cli", *args], env=full, cwd=ROOT, text=True,
                          capture_output=kwargs.pop("capture_output", True), timeout=120, **kwargs)


def _one_line(done: subprocess.CompletedProcess, code: int = 2) -> str:
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    return done.stderr


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> str:
    from factories import write_samples
    return str(next(iter(write_samples(tmp_path_factory.mktemp("samples")).values())))


@pytest.mark.parametrize("args", [["info", "{small}"], ["list"], ["solve", "{small}", "-f", "dual", "-s", "apgd"]])
def test_a_closed_stdout_is_one_line(small, args):
    """``workbench info FILE >&-``: the process starts without a standard output (sys.stdout is None)."""
    args = " ".join(f"'{a.format(small=small)}'" for a in args)
    done = subprocess.run(["bash", "-c", f"exec '{sys.executable}' -m workbench.cli {args} >&-"],
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT, text=True, stderr=subprocess.PIPE,
                          timeout=120)
    err = _one_line(done)
    assert "standard output is closed" in err


@pytest.mark.parametrize("layer", ["tbb", "nonsense", "\x1b[31m", ""])
def test_numba_threading_layer_is_one_line_or_works(small, layer):
    done = _cli(["info", small], {"NUMBA_THREADING_LAYER": layer})
    try:
        import tbb  # noqa: F401
        if layer == "tbb":
            pytest.skip("TBB is installed here: the layer works")
    except ImportError:
        pass
    err = _one_line(done)
    assert "NUMBA_THREADING_LAYER" in err and "\x1b" not in err


@pytest.mark.parametrize("value,ok", [("4,2", True), ("1", True), ("2,2,1", True), ("4,0", False), ("4,,2", False),
                                      ("-1", False), ("nan", False), ("4;2", False)])
def test_omp_num_threads_takes_openmps_lists(small, value, ok):
    done = _cli(["info", small], {"OMP_NUM_THREADS": value})
    if ok:
        assert done.returncode == 0, done.stderr
    else:
        assert "OMP_NUM_THREADS" in _one_line(done)


@pytest.mark.parametrize("field,value", [("tol", math.inf), ("tol", math.nan), ("tol", 0.0), ("tol", -1e-6),
                                         ("tol", 2.0), ("tol", "1e-6"), ("tol", None), ("accept", math.inf),
                                         ("accept", 10.0), ("max_iter", 2.5), ("max_iter", 0), ("max_iter", 10 ** 400),
                                         ("max_iter", math.inf), ("time_limit", math.nan), ("time_limit", math.inf),
                                         ("time_limit", -1.0), ("time_limit", 0.0), ("time_limit", 1e300),
                                         ("max_iter", True)])
def test_solve_options_are_checked_at_construction_with_the_clis_words(field, value):
    from workbench.cli import main
    with pytest.raises(InputError) as e:
        SolveOptions(**{field: value})
    message = str(e.value)
    assert "\n" not in message and message.startswith(f"{field} (--{field.replace('_', '-')})")
    # the command line says the same of the same value
    if field in ("tol", "accept", "max_iter", "time_limit") and isinstance(value, float) and math.isfinite(value):
        import contextlib
        import io
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main(["solve", "x.dat", "-f", "dual", "-s", "apgd", f"--{field.replace('_', '-')}={value!r}"])
        assert code == 2
        assert message.split(": ", 1)[1].split(", got")[0] in err.getvalue(), err.getvalue()


def test_solve_options_take_numpy_numbers_and_keep_valid_ones():
    o = SolveOptions(tol=np.float64(1e-7), accept=np.float32(1e-5), max_iter=np.int64(50), time_limit=np.int32(3))
    assert (o.tol, o.max_iter, o.time_limit) == (1e-7, 50, 3.0)
    assert type(o.max_iter) is int


@pytest.mark.parametrize("limit", [math.nan, math.inf, -math.inf])
def test_solve_with_hard_limit_of_nan_or_inf_is_one_line(limit):
    """The issue's case: solve_with_hard_limit(..., SolveOptions(time_limit=nan)) raised ValueError
    from deep inside; the options now refuse it where they are made."""
    with pytest.raises(InputError, match="time_limit"):
        SolveOptions(time_limit=limit)


@pytest.mark.parametrize("category", [RuntimeWarning, DeprecationWarning, FutureWarning, UserWarning])
def test_no_warning_is_printed_before_the_one_error_line(monkeypatch, capsys, category):
    """Issue 45, class 7: numpy's RuntimeWarning (an overflow in data about to be refused) or a
    library's deprecation note printed before the error line; the CLI holds warnings and, after bad
    input, prints the one line only. A command that succeeds still shows them, after its output."""
    import warnings

    import workbench.commands.solve as solve_cmd
    from workbench.cli import main

    def warns_then(fail):
        def command(args):
            with np.errstate(over="warn"):
                np.float64(1e300) * np.float64(1e300)
            warnings.warn("a library's note", category)
            if fail:
                raise InputError("the input is bad")
            print("done")
            return 0
        return command

    monkeypatch.setattr(solve_cmd, "cmd_info", warns_then(True))
    code = main(["info", "x.dat"])
    assert code == 2 and capsys.readouterr().err == "workbench: error: the input is bad\n"
    monkeypatch.setattr(solve_cmd, "cmd_info", warns_then(False))
    with pytest.warns(category, match="a library's note"):
        assert main(["info", "x.dat"]) == 0
    assert capsys.readouterr().out == "done\n"
