"""Issue 35, class 4: the tracebacks it listed become one line, by variants.

* every row read back from a results folder is checked against the declared run row
  (workbench.study.row_check, through workbench.study.results.read_runs): corrupt, empty, column-less
  and two-row run files, keys that are paths, unknown statuses, text where numbers go, and a
  ``handover_detail`` that is not JSON, not a list, 100,000 levels deep, or lacks the fields the
  report reads; ``run --rerun-failed`` reads the statuses through the same open (one line each);
* Dask scheduler addresses are checked before Dask parses them.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workbench.errors import InputError

GOOD = {"key": "k1", "study": "s", "problem": "p", "method": "m", "status": "solved", "objective": 1.0,
        "iterations": 3, "judged_error": "nan", "repetition": 0,
        "handover_detail": json.dumps([{"kind": "fallback", "from": "ncp/pqn", "to": "pgs", "reason": "r",
                                        "at_iteration": 4, "at_seconds": 0.1, "error_before": 0.5, "used": True,
                                        "status_alone": "max_iter"}])}


def _row(**changes) -> dict:
    row = dict(GOOD)
    for k, v in changes.items():
        if v is KeyError:
            row.pop(k)
        else:
            row[k] = v
    return row


def _handover(**changes) -> str:
    h = json.loads(GOOD["handover_detail"])[0]
    h.update(changes)
    return json.dumps([{k: v for k, v in h.items() if v is not KeyError}])


BAD_ROWS = {
    "no key": _row(key=KeyError), "no status": _row(status=KeyError), "no problem": _row(problem=KeyError),
    "a key that is a path": _row(key="../../etc/passwd"), "a key with a NUL": _row(key="a\x00b"),
    "an unknown status": _row(status="\x1b[31mpwned"), "a number as text": _row(objective="1.0"),
    "text as a number": _row(problem=3), "handover not JSON": _row(handover_detail="{"),
    "handover 100,000 deep": _row(handover_detail="[" * 100_000 + "]" * 100_000),
    "handover 40 deep": _row(handover_detail="[" * 40 + "]" * 40),
    "handover an object": _row(handover_detail='{"kind": "x"}'), "handover of numbers": _row(handover_detail="[1, 2]"),
    **{f"handover without {f}": _row(handover_detail=_handover(**{f: KeyError}))
       for f in ("kind", "from", "to", "at_iteration", "at_seconds", "used", "status_alone")},
    "handover at_iteration text": _row(handover_detail=_handover(at_iteration="4")),
    "handover used a number": _row(handover_detail=_handover(used=1)),
    "handover huge integer": _row(handover_detail='[{"at_iteration": ' + "9" * 5000 + "}]"),
}


def _write(folder, name: str, rows: list[dict] | None = None, raw: bytes | None = None):
    runs = folder / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    path = runs / f"{name}.parquet"
    if raw is not None:
        path.write_bytes(raw)
    else:
        pq.write_table(pa.Table.from_pylist(rows) if rows else pa.table({}), path)
    return path


def _reads(folder):
    from workbench.study.results import read_runs, row_check
    from workbench.study.store import ResultStore
    store = ResultStore(folder)
    return {"read runs": lambda: read_runs(store), "rerun-failed": lambda: store.unsolved_keys(row_check)}


def test_a_good_row_reads(tmp_path):
    _write(tmp_path, "k1", [GOOD])
    reads = _reads(tmp_path)
    assert reads["read runs"]()["key"].tolist() == ["k1"]
    assert reads["rerun-failed"]() == set()


@pytest.mark.parametrize("name", list(BAD_ROWS))
def test_bad_rows_are_one_line_naming_the_file(tmp_path, name):
    path = _write(tmp_path, "k1", [BAD_ROWS[name]])
    with pytest.raises(InputError) as err:
        _reads(tmp_path)["read runs"]()
    text = str(err.value)
    assert str(path) in text and "\n" not in text and len(text) < 600, text


BROKEN_FILES = {"empty": b"", "garbage": b"PAR1" + b"\x00" * 100, "truncated": None, "no columns": None,
                "two rows": None, "status only, no rows": None}


@pytest.mark.parametrize("name", list(BROKEN_FILES))
def test_broken_run_files_are_one_line_for_every_reader(tmp_path, name):
    if name == "truncated":
        good = _write(tmp_path, "tmp", [GOOD])
        raw = good.read_bytes()[:-20]
        good.unlink()
        path = _write(tmp_path, "k1", raw=raw)
    elif name == "no columns":
        path = _write(tmp_path, "k1", None)
    elif name == "two rows":
        path = _write(tmp_path, "k1", [GOOD, GOOD])
    elif name == "status only, no rows":
        path = tmp_path / "runs" / "k1.parquet"
        path.parent.mkdir(parents=True)
        pq.write_table(pa.table({"status": pa.array([], pa.string())}), path)
    else:
        path = _write(tmp_path, "k1", raw=BROKEN_FILES[name])
    for what, read in _reads(tmp_path).items():
        with pytest.raises(InputError) as err:
            read()
        assert str(path) in str(err.value) and "\n" not in str(err.value), (what, str(err.value))


@pytest.mark.parametrize("address", ["tcp://[::1", "tcp://[::1]", "ucx://127.0.0.1:8786", "tls://127.0.0.1:8786",
                                     "inproc://127.0.0.1/1/1", "tcp://127.0.0.1:0", "tcp://127.0.0.1:99999",
                                     "tcp://:8786", "tcp://host:port", "", "x" * 1000, "tcp://[zz::1]:8786",
                                     "tcp://a b:1", "tcp://127.0.0.1:8786/x", "\x1b[2J:1"])
def test_dask_addresses_are_checked_before_dask_sees_them(address):
    from workbench.study.executors import check_scheduler
    with pytest.raises(InputError) as err:
        check_scheduler(address)
    assert "\n" not in str(err.value) and "\x1b" not in str(err.value)


def test_good_dask_addresses_pass():
    from workbench.study.executors import check_scheduler
    for address in ("tcp://127.0.0.1:8786", "127.0.0.1:8786", "tcp://[::1]:8786", "tcp://scheduler.lan:8786"):
        assert check_scheduler(address) == address
