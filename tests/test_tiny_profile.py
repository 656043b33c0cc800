"""benchmarks.timing.tiny_profile's reading of callgrind dumps: self instructions by object (a called
function's inclusive cost is not its caller's own; compressed names resolved, also those defined on a
``cob=`` line), the object groups, and the segments of one process split into phases in order, with
their median and per-call split; a dump count that does not match is an error, not a shifted table."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.timing import tiny_profile as tp

DUMP = """version: 1
creator: callgrind-3.19.0
events: Ir
summary: 1000
totals: 1000
ob=(1) /usr/lib/libpython3.11.so.1.0
fl=(1) ceval.c
fn=(1) _PyEval_EvalFrameDefault
10 300
cob=(2) /venv/lib/python3.11/site-packages/numpy/core/_multiarray_umath.so
cfi=(2) x.c
cfn=(2) PyArray_Dot
calls=2 0
11 450
+1 50
ob=(2)
fl=(2)
fn=(2)
0 450
ob=(3) ???
fn=(3) 0x000000000badc0de
* 200
"""


def test_self_costs_by_object(tmp_path):
    path = tmp_path / "cg.1.1"
    path.write_text(DUMP)
    total, costs = tp.object_costs(path)
    assert total == 1000
    assert costs == {"/usr/lib/libpython3.11.so.1.0": 350,
                     "/venv/lib/python3.11/site-packages/numpy/core/_multiarray_umath.so": 450, "???": 200}
    assert {tp.group_of(o) for o in costs} == {"Python interpreter", "numpy", "numba (runtime and compiled code)"}
    assert tp.group_of("/usr/lib/x86_64-linux-gnu/libc.so.6") == "C library and loader"
    assert tp.group_of("/somewhere/libfoo.so") == "other"


def _dump(folder: Path, pid: int, k: int, total: int) -> None:
    (folder / f"cg.{pid}.{k}").write_text(f"events: Ir\ntotals: {total}\nob=(1) /bin/python3.11\nfn=(1) f\n1 {total}\n")


def test_segments_in_order(tmp_path):
    reps = 3
    k, counts = 1, []
    _dump(tmp_path, 7, k, 5)                    # from the start of instrumentation to the first mark
    for r in range(reps):                       # parse, model, iterate, judge: 100 r + 10, 20, 30, 40
        for j in range(4):
            k += 1
            _dump(tmp_path, 7, k, 100 * r + 10 * (j + 1))
    for r in range(reps):                       # parse, whole call
        for j in (5, 6):
            k += 1
            _dump(tmp_path, 7, k, 100 * r + 10 * j)
    (tmp_path / "cg.7").write_text("totals: 1\n")   # the exit: not a segment
    files = tp.dumps(tmp_path, 7)
    assert [f.name for f in files][:3] == ["cg.7.1", "cg.7.2", "cg.7.3"] and len(files) == k
    (out,) = tp.segments(files, reps)
    assert out["start"] == {"started": 5}
    assert out["phases"]["parse"] == {"median": 110, "min": 10, "max": 210, "by_object": {"Python interpreter": 110}}
    assert out["phases"]["judge"]["median"] == 140 and out["phases"]["call"]["median"] == 160
    with pytest.raises(RuntimeError, match="segments"):
        tp.segments(files[:-1], reps)
    first, second = tp.segments(files[:1] + files[1:] + files[1:], reps, methods=2)   # two methods in turn
    assert first["phases"] == second["phases"] == out["phases"]
