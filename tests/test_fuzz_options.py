"""A generated fuzz suite of command lines, study files and results folders (issue 24).

Every option of every command (read from the parser itself, so a new option is fuzzed without a
change here), every key of a study file, every field of a results folder's ``plan.json`` and a
few whole files (100,000-deep nesting, binary, a FIFO) get hostile values from a seeded generator:
negative, zero, huge, NaN, inf, text where numbers go, wrong types, paths that escape, very long
strings, unicode, NUL bytes, deep nesting. Each case runs in its own process
(:mod:`tests.fork_server`: forked from a server that imported the workbench once) under an
address-space cap of 500 MB beyond the server's and a time cap, with its own folder as the
working directory. Each must end with exit code 0, 1 or 2; with 2, exactly one line on stderr and
no traceback; never by a signal, never hang, never grow by 500 MB; and nothing may appear outside
the case's folder.
"""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SEED = 24
MEMORY_MB = 500
TIMEOUT_S = 60
#: an absolute path no case may create (a study name or plan.json study set to it tries)
ABSOLUTE_ESCAPE = "/tmp/workbench-fuzz-escape"

# --------------------------------------------------------------------------- hostile values
DEEP_JSON_LIST = "[" * 5000 + "]" * 5000
DEEP_JSON_DICT = '{"a":' * 5000 + "1" + "}" * 5000
CLI_VALUES = [
    "-1", "0", "-0", "1e308", "-1e308", "1e-308", "nan", "inf", "-inf", "abc", "", " ", "1e9",
    "99999999999999999999999", "0x10", "1_000", "../../escape", "/", "~", "é∂ƒ漢字🙂", "x" * 5000,
    DEEP_JSON_LIST, DEEP_JSON_DICT, "null", "true", "[]", "{}", "-", "=", "a=b", "KEY=", "=1",
    "n_spheres=1e9", "n_spheres=1000000000", "n=1000000000", "n=-5", "mu=-1", "mu=nan", "seed=1e400",
    "duration=1e308", "h=0", "h=1e-300", "max_iter=1e30", f"key={DEEP_JSON_LIST}",
    "outer_patience=99999999999999999999999", "outer_patience=1e400", "anti_relaxation=sideways",
    "shared:../../etc/passwd", "shared:/etc/passwd", "dataset:../../pyproject", "dataset:/etc/passwd",
    "scene:../x", "generator:sphere_packing", "scenario:filling", f"{ABSOLUTE_ESCAPE}/x",
]
#: options whose value is a path the user chose to write to: escaping paths are the user's choice
#: there, so those get in-folder paths instead (the rest must never write anywhere)
OUTPUT_OPTIONS = {"--out", "--history", "--report-dir", "out"}
OUTPUT_VALUES = ["", " ", "a/b/c", "x" * 300, "é∂ƒ漢字🙂", "./.", "out.unknownsuffix", "out.npz/inner.npz"]


class Deep:
    """A TOML value nested ``depth`` levels (arrays, or inline tables)."""

    def __init__(self, depth: int, table: bool):
        self.depth, self.table = depth, table


STUDY_VALUES = [
    -1, 0, 1e308, -1e308, 1e-308, math.nan, math.inf, -math.inf, 10**18, 2**63, "abc", "", True, [], {},
    [1, "a"], {"a": {"b": 1}}, "../../escape", "/etc", ABSOLUTE_ESCAPE, "x" * 10000, "é∂ƒ漢字🙂",
    "a\u0000b", "<script>alert(1)</script>", "/**/passwd", "../**/*.hdf5", Deep(200, False), Deep(200, True),
    ["rolling-ball-2d"] * 3, {"n_spheres": [1, 2] * 1000}, "{n_spheres}/../../x",
]

# --------------------------------------------------------------------------- base inputs
STUDY = {
    "study": {"name": "fuzz", "time_limit": 5, "repetitions": 1},
    "problems": [{"scenes": ["rolling-ball-2d"]}],
    "methods": {"a": {"formulation": "dual", "solver": "apgd"}},
}
#: extra keys each table may take, fuzzed too (valid on their own)
STUDY_KEYS = {
    "study": ["name", "description", "repetitions", "time_limit", "tolerance", "histories", "plugins"],
    "tolerances": ["x"],
    "problems": ["files", "scenes", "generator", "scenario", "params", "sweep", "name", "tags", "series",
                 "optional"],
    "methods": ["formulation", "solver", "label", "tolerance", "max_iter", "params"],
    "reference": ["solver", "formulations", "tol", "max_iter", "params"],
    "report": ["sections", "reference_method", "convergence", "shift", "time", "target", "paper"],
    "report.paper": ["what", "source", "value", "method", "tag", "problem", "quantity", "rel_tol"],
}
PLAN = {
    "study": "fuzz", "description": "d", "time_limit": 5.0, "repetitions": 1,
    "report": {"sections": ["summary", "tables"], "reference_method": None, "convergence": "error", "shift": 10.0,
               "time": "solve", "target": 1e-6, "paper": []},
    "methods": [{"method": "a", "label": "A", "formulation": "dual", "solver": "apgd", "tolerance": "default",
                 "tol": 1e-6, "accept": None, "max_iter": None, "params": {}}],
    "problems": [{"problem": "p", "source": "scene:rolling-ball-2d", "problem_hash": "0", "tags": [], "kind": "global",
                  "n_contacts": 1, "n_dof": 3, "d": 2, "params": None, "series": None}],
    "runs": [], "skipped": [], "missing": [], "references": [], "reference_runs": [],
}
#: base command line of each command (valid and cheap); ``{...}`` names a file the case folder holds
BASE = {
    "info": ["info", "scene:rolling-ball-2d"],
    "list": ["list"],
    "solve": ["solve", "scene:rolling-ball-2d", "-f", "dual", "-s", "apgd"],
    "compare": ["compare", "scene:rolling-ball-2d", "-f", "dual", "-s", "apgd"],
    "simulate": ["simulate", "ball-on-plane-2d", "-f", "dual", "-s", "apgd", "--set", "duration=0.02",
                 "--out", "sim"],
    "generate": ["generate", "scaling", "--out", "gen", "--sizes", "2", "--set", "duration=0.01", "--quiet"],
    "run": ["run", "study.toml", "--out", "res", "--no-report", "--no-progress"],
    "report": ["report", "given", "--out", "rep"],
    "export": ["export", "scene:rolling-ball-2d", "out.npz"],
    "check-export": ["check-export", "out.cbf", "scene:rolling-ball-2d"],
    "conformance": ["conformance", "given"],
    "help": ["help", "solve"],
    "warm-up": ["warm-up", "--solver", "apgd", "--formulation", "dual", "--quiet"],
}


def toml_value(v) -> str:
    if isinstance(v, Deep):
        return ("{a = " * v.depth + "1" + "}" * v.depth) if v.table else ("[" * v.depth + "1" + "]" * v.depth)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v) if abs(v) < 2**63 else f'"{v}"'  # TOML integers are 64-bit
    if isinstance(v, float):
        return "nan" if v != v else ("inf" if v == math.inf else "-inf" if v == -math.inf else repr(v))
    if isinstance(v, str):
        return json.dumps(v)  # JSON strings are TOML basic strings (\uXXXX escapes included)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + "}"


def toml_document(doc: dict) -> str:
    lines = []
    for section, body in doc.items():
        if isinstance(body, list):
            for item in body:
                lines.append(f"[[{section}]]")
                lines += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in item.items()]
        elif section in ("methods", "tolerances"):
            for name, table in body.items():
                lines.append(f"[{section}.{json.dumps(name)}]")
                lines += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in table.items()]
        else:
            lines.append(f"[{section}]")
            lines += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in body.items()]
    return "\n".join(lines) + "\n"


def study_with(table: str, key: str, value) -> dict:
    """The base study with ``table``'s ``key`` set to ``value`` (JSON round trip: a deep copy)."""
    doc = json.loads(json.dumps(STUDY))
    if table == "study":
        doc["study"][key] = value
    elif table == "problems":
        doc["problems"][0][key] = value
    elif table == "methods":
        doc["methods"]["a"][key] = value
    elif table == "tolerances":
        doc["tolerances"] = {"x": {"tol": value}}
    elif table == "reference":
        doc["reference"] = {"solver": "clarabel", key: value}
    elif table == "report":
        doc["report"] = {key: value}
    else:  # report.paper
        entry = {"what": "w", "source": "s", "value": 1, "method": "a", "quantity": "iterations", key: value}
        doc["report"] = {"paper": [entry]}
    return doc


# --------------------------------------------------------------------------- the generator
def _options():
    """(command, option or positional dest, kind) for every argument of every command, from the parser."""
    from workbench.cli import build_parser
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for command, p in sub.choices.items():
        for action in p._actions:
            if action.dest == "help":
                continue
            kind = "flag" if action.nargs == 0 else "value"
            yield command, (action.option_strings[0] if action.option_strings else action.dest), kind


def _cli_case(rng: random.Random, command: str, option: str, kind: str) -> list[str]:
    argv = list(BASE[command])
    if kind == "flag":
        return argv + [option]
    pool = OUTPUT_VALUES if option in OUTPUT_OPTIONS else CLI_VALUES
    value = rng.choice(pool)
    if not option.startswith("-"):  # a positional: replace it, or add it where there is none
        positions = [i for i, a in enumerate(argv) if i > 0 and not a.startswith("-")
                     and (i == 1 or not argv[i - 1].startswith("-"))]
        at = positions[0] if option in ("problem", "problems", "scene", "name", "study", "results", "topic") \
            else (positions[1] if len(positions) > 1 else None)
        if at is None:
            return argv + [value]
        argv[at] = value
        return argv
    if option in argv:
        argv[argv.index(option) + 1] = value
        return argv
    return argv + [option, value]


def generate_cases(tmp: Path) -> list[dict]:
    rng = random.Random(SEED)
    cases: list[dict] = []

    def add(name: str, argv: list[str], files: dict[str, str | bytes] | None = None) -> None:
        folder = tmp / "cases" / f"{len(cases):04d}"
        work = folder / "work"
        work.mkdir(parents=True)
        (work / "study.toml").write_text(toml_document(STUDY))
        given = work / "given"
        given.mkdir()
        (given / "plan.json").write_text(json.dumps(PLAN))
        for rel, content in (files or {}).items():
            target = work / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content if isinstance(content, bytes) else content.encode())
        cases.append({"id": f"{len(cases):04d} {name}", "argv": argv, "cwd": str(work),
                      "env": {"HOME": str(work), "MPLCONFIGDIR": str(tmp / "mpl")}})

    for command, option, kind in _options():
        for _ in range(1 if kind == "flag" else 2):
            argv = _cli_case(rng, command, option, kind)
            add(f"{command} {option}", argv)
    for table, keys in STUDY_KEYS.items():
        for key in keys:
            for value in rng.sample(STUDY_VALUES, 2):
                add(f"study {table}.{key} = {toml_value(value)[:40]}", BASE["run"],
                    {"study.toml": toml_document(study_with(table, key, value))})
    for key in PLAN:
        for value in rng.sample(STUDY_VALUES, 2):
            plan = dict(PLAN, **{key: value if not isinstance(value, Deep) else [[[]]]})
            add(f"plan.json {key} = {str(value)[:40]}", BASE["report"], {"given/plan.json": json.dumps(plan)})
    for key in PLAN["report"]:
        value = rng.choice(STUDY_VALUES)
        plan = dict(PLAN, report=dict(PLAN["report"], **{key: value if not isinstance(value, Deep) else []}))
        add(f"plan.json report.{key} = {str(value)[:40]}", BASE["report"], {"given/plan.json": json.dumps(plan)})
    for listed in ("methods", "problems"):
        for key in PLAN[listed][0]:
            value = rng.choice(STUDY_VALUES)
            entry = dict(PLAN[listed][0], **{key: value if not isinstance(value, Deep) else [[[]]]})
            plan = dict(PLAN, **{listed: [entry]})
            add(f"plan.json {listed}[0].{key} = {str(value)[:40]}", BASE["report"],
                {"given/plan.json": json.dumps(plan)})
    whole = {
        "study 100,000-deep array": "[study]\nname = " + "[" * 100_000 + "]" * 100_000 + "\n",
        "study 100,000-deep inline table": "[study]\nname = " + "{a = " * 100_000 + "1" + "}" * 100_000 + "\n",
        "study binary": os.urandom(2048),
        "study UTF-16 with BOM": toml_document(STUDY).encode("utf-16"),
        "study empty": b"",
        "study only a comment": b"# nothing\n",
    }
    for name, content in whole.items():
        add(name, BASE["run"], {"study.toml": content})
    add("plan.json 100,000-deep", BASE["report"], {"given/plan.json": "[" * 100_000 + "]" * 100_000})
    add("plan.json binary", BASE["report"], {"given/plan.json": os.urandom(512)})
    add("plan.json not an object", BASE["report"], {"given/plan.json": "[1, 2]"})
    add("report of a folder without plan.json", ["report", "."])
    # a FIFO study file: made in place (a case folder is ready before the server runs)
    add("study is a FIFO", ["run", "fifo.toml", "--out", "res", "--no-report"])
    os.mkfifo(Path(cases[-1]["cwd"]) / "fifo.toml")
    add("problem is a FIFO", ["info", "fifo.dat"])
    os.mkfifo(Path(cases[-1]["cwd"]) / "fifo.dat")
    return cases


# --------------------------------------------------------------------------- running them
def _writes_outside(tmp: Path) -> list[str]:
    """Files under ``tmp`` that no case folder holds (a case may write only under its own folder)."""
    out = []
    for folder, dirs, files in os.walk(tmp):
        rel = Path(folder).relative_to(tmp)
        if rel.parts[:1] == ("mpl",) or (len(rel.parts) >= 2 and rel.parts[0] == "cases"):
            dirs[:] = []
            continue
        out += [str(rel / f) for f in files]
    return out


@pytest.fixture(scope="module")
def fuzz(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fuzz")
    cases = generate_cases(tmp)
    request = {"jobs": os.cpu_count() or 2, "memory_mb": MEMORY_MB, "timeout_s": TIMEOUT_S,
               "warm": [["dual", "apgd"]], "cases": cases}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               MPLCONFIGDIR=str(tmp / "mpl"))
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "fork_server.py")], input=json.dumps(request),
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return cases, json.loads(proc.stdout), tmp


def test_the_suite_is_large_and_covers_every_option(fuzz):
    cases, outcomes, _ = fuzz
    assert len(cases) >= 200
    assert len(outcomes) == len(cases)
    names = " ".join(c["id"] for c in cases)
    for command, option, _ in _options():
        assert f"{command} {option}" in names
    for table, keys in STUDY_KEYS.items():
        for key in keys:
            assert f"study {table}.{key} =" in names


def _problems(case: dict, out: dict) -> list[str]:
    found = []
    if out["hung"]:
        found.append(f"hung (killed after {TIMEOUT_S} s)")
    if out["signal"] is not None:
        found.append(f"died by signal {out['signal']}")
    if "Traceback" in out["stderr"]:
        found.append("traceback:\n" + out["stderr"][-2000:])
    if out["code"] not in (0, 1, 2) and out["signal"] is None:
        found.append(f"exit code {out['code']}")
    lines = out["stderr"].strip().splitlines()
    if out["code"] == 2 and (len(lines) != 1 or not lines[0].startswith("workbench: error: ")):
        found.append("exit 2 without exactly one 'workbench: error:' line:\n" + out["stderr"][-2000:])
    if out["extra_rss_mb"] > MEMORY_MB:
        found.append(f"{out['extra_rss_mb']:.0f} MB of memory")
    return found


def test_every_case_ends_cleanly(fuzz):
    cases, outcomes, _ = fuzz
    failures = {}
    for case in cases:
        problems = _problems(case, outcomes[case["id"]])
        if problems:
            failures[case["id"]] = {"argv": [a[:80] for a in case["argv"]], "problems": problems}
    assert not failures, json.dumps(failures, indent=1, ensure_ascii=False)[:20000]


def test_nothing_is_written_outside_the_case_folders(fuzz):
    _, _, tmp = fuzz
    assert _writes_outside(tmp) == []
    assert not os.path.lexists(ABSOLUTE_ESCAPE)


def test_bad_values_are_refused_not_ignored(fuzz):
    """The fuzz must exercise refusals (not only runs that ignore the value) and runs that go ahead."""
    cases, outcomes, _ = fuzz
    codes = [outcomes[c["id"]]["code"] for c in cases]
    assert codes.count(2) >= len(codes) // 2
    assert codes.count(0) >= 10
