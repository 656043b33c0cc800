"""Issue 35, class 2: numbers are parsed once, bounded. Variants at the edges (NaN, infinities, 1e400,
integers of 400-5,000 digits, text of 10,000 characters, bools, negative zero, fractions where counts
go) through every way a user types a number: the one parser (workbench.numbers.number), every numeric
command-line option (read from the parser, so a new option is covered without a change here), every
numeric key of a study file, solver parameters, and the environment variables (WORKBENCH_MAX_*,
WORKBENCH_WARM_UP_LIMIT, the readers' limits, the thread counts). Each must give a finite number in
range or one line (InputError), fast, never a traceback; and a tolerance above 1 is refused as the sign
slip it is ("--tol 1e6": did you mean 1e-06?).
"""

from __future__ import annotations

import math
import time

import pytest

from workbench.errors import InputError
from workbench.numbers import number

HUGE_INT = 10 ** 4000 + 7  # parsed by Python (under its 4,300-digit cap), as a TOML or JSON value can be
EDGES = ["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e400", "1e-400", "0", "-0", "-1", "1.5", "3.0",
         "0x10", "1_000", " 7 ", "", " ", "abc", "9" * 400, "9" * 5000, "1" + "0" * 10000, "1e6", "2e3", "\x1b[31m1",
         float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-300, 1e308, 2**63, -2**63, 10 ** 400, HUGE_INT,
         True, False, None, [], {}, 1, 2.5]


def _valid(x, kind, **bounds) -> None:
    assert isinstance(x, kind) and not isinstance(x, bool)
    assert math.isfinite(x)
    if bounds.get("positive"):
        assert x > 0
    if bounds.get("fraction"):
        assert x <= 1
    if bounds.get("low") is not None:
        assert x >= bounds["low"]
    if bounds.get("high") is not None:
        assert x <= bounds["high"]


@pytest.mark.parametrize("kind", [int, float])
@pytest.mark.parametrize("bounds", [{}, {"positive": True}, {"positive": True, "fraction": True},
                                    {"low": 0, "high": 100}, {"positive": True, "high": 1e6}])
def test_the_one_parser_gives_a_bounded_number_or_one_line(kind, bounds):
    for value in EDGES:
        t0 = time.perf_counter()
        try:
            x = number(value, "it", kind, **bounds)
        except InputError as exc:
            text = str(exc)
            assert "\n" not in text and len(text) < 400 and "\x1b" not in text, (value, text)
        else:
            _valid(x, kind, **bounds)
        assert time.perf_counter() - t0 < 0.05, repr(value)[:40]


def test_a_tolerance_above_one_is_taken_for_a_sign_slip():
    for given, meant in [("1e6", "1e-06"), ("1e8", "1e-08"), ("100", "0.01"), ("2e3", "0.0005")]:
        with pytest.raises(InputError, match=f"did you mean {meant}\\?"):
            number(given, "--tol", positive=True, fraction=True)
    assert number("1e-6", "--tol", positive=True, fraction=True) == 1e-6


def _numeric_options():
    """(command, option) of every option whose type is the workbench's number parser."""
    from workbench.cli import build_parser
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for command, p in sub.choices.items():
        for action in p._actions:
            if getattr(action.type, "__name__", "") in ("a positive number", "a positive integer"):
                yield command, action.option_strings[0]


REQUIRED = {"solve": ["scene:rolling-ball-2d", "-f", "dual", "-s", "apgd"], "compare": ["scene:rolling-ball-2d"],
            "export": ["scene:rolling-ball-2d", "out.npz"], "simulate": ["rolling-ball-2d"],
            "run": ["study.toml"], "generate": ["packing"]}


def test_every_numeric_option_refuses_the_edges_in_one_line(monkeypatch):
    from workbench.cli import build_parser
    options = list(_numeric_options())
    assert len(options) >= 8
    parser = build_parser()
    for command, option in options:
        for value in ("nan", "inf", "-1", "0", "1e400", "9" * 5000, "abc", "\x1b[2J"):
            with pytest.raises(InputError) as err:
                parser.parse_args([command, *REQUIRED.get(command, []), option, value])
            text = str(err.value)
            assert "\n" not in text and option in text and len(text) < 400, (command, option, text)
    for option in ("--tol", "--accept"):
        with pytest.raises(InputError, match="did you mean 1e-06"):
            parser.parse_args(["solve", *REQUIRED["solve"], option, "1e6"])


STUDY_NUMBERS = {"[study]": ["time_limit", "repetitions"], "[tolerances.t]": ["tol", "accept"],
                 "[methods.m]": ["max_iter"], "[report]": ["shift", "target", "convergence_members"]}


def _study(table: str, key: str, value: str) -> str:
    parts = {"[study]": 'name = "s"', "[tolerances.t]": "tol = 1e-6", "[methods.m]": 'formulation = "dual"\nsolver = "apgd"',
             "[report]": ""}
    parts[table] = f"{parts[table]}\n{key} = {value}"
    return "\n".join(f"{t}\n{body}" for t, body in parts.items() if t != "[report]" or table == "[report]") + \
        '\n[[problems]]\nscenes = ["rolling-ball-2d"]\n'


def test_every_numeric_study_key_refuses_the_edges_in_one_line(tmp_path):
    from workbench.study.spec import load_study
    (tmp_path / "ok.toml").write_text(_study("[study]", "repetitions", "2"))
    assert load_study(tmp_path / "ok.toml").repetitions == 2  # and the imports are done before the clock
    for table, keys in STUDY_NUMBERS.items():
        for key in keys:
            for value in ("nan", "inf", "-1", "0", "1e400", "9" * 400, "9" * 5000, '"1e-6"', "true", "2.5e6"):
                path = tmp_path / "s.toml"
                path.write_text(_study(table, key, value))
                t0 = time.perf_counter()
                try:
                    load_study(path)
                except InputError as exc:
                    assert "\n" not in str(exc) and len(str(exc)) < 600, (table, key, value, str(exc))
                else:
                    assert value == "2.5e6" and key in ("shift", "max_iter", "convergence_members"), (table, key, value)  # 2500000: a whole number
                assert time.perf_counter() - t0 < 2, (table, key, value)


@pytest.mark.parametrize("name", ["WORKBENCH_MAX_RUNS", "WORKBENCH_MAX_SECONDS", "WORKBENCH_MAX_DEPTH",
                                  "WORKBENCH_WARM_UP_LIMIT", "WORKBENCH_MAX_ENTRIES", "WORKBENCH_MAX_TEXT_MB",
                                  "WORKBENCH_MAX_INFLATION"])
def test_environment_numbers_are_parsed_by_the_same_rule(monkeypatch, name):
    from workbench.io.validate import max_entries, max_text_bytes, read_budget
    from workbench.limits import limit
    from workbench.study.worker import warm_up_limit
    read = {"WORKBENCH_WARM_UP_LIMIT": warm_up_limit, "WORKBENCH_MAX_ENTRIES": max_entries,
            "WORKBENCH_MAX_TEXT_MB": max_text_bytes, "WORKBENCH_MAX_INFLATION": lambda: read_budget(1)}.get(name, lambda: limit(name.removeprefix("WORKBENCH_MAX_")))
    for value in ("inf", "1e400", "nan", "-5", "0", "9" * 5000, "abc", "12", "1e3"):
        monkeypatch.setenv(name, value)
        try:
            x = read()
        except InputError as exc:
            assert name in str(exc) and "\n" not in str(exc)
        else:
            assert value in ("12", "1e3") and math.isfinite(x) and x > 0, (name, value, x)


def test_thread_counts_are_checked_before_any_library_reads_them(monkeypatch, capsys):
    from workbench.cli import main
    for value in ("0", "-1", "inf", "1e400", "abc", "99999"):
        monkeypatch.setenv("NUMBA_NUM_THREADS", value)
        assert main(["--version"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "NUMBA_NUM_THREADS" in err


def test_solver_parameters_take_numbers_through_the_same_parser():
    from workbench.solvers import get_solver
    apgd = get_solver("apgd")
    numeric = [p for p in apgd.parameters() if p.type in (int, float)]
    assert numeric
    for p in numeric:
        for value in (float("nan"), float("inf"), 10 ** 5000, "9" * 500, True, [1]):
            with pytest.raises(InputError):
                apgd.check_params({p.name: value})


def test_cli_parameters_of_5000_digits_are_one_line(capsys):
    from workbench.cli import main
    code = main(["solve", "scene:rolling-ball-2d", "-f", "dual", "-s", "apgd", "--param", "max_iter=" + "9" * 5000])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "too long" in err


@pytest.mark.parametrize("argv", [["solve", "scene:rolling-ball-2d", "-f", "dual", "-s", "apgd", "--tol", "\x1b[2J\x1b[31m"],
                                  ["solve", "scene:\x1b]0;pwned\x07", "-f", "dual", "-s", "apgd"],
                                  ["solve", "scene:rolling-ball-2d", "-f", "dual", "-s", "apgd", "--param",
                                   "\u202eevil=1"],
                                  ["run", "\x1b[2Jstudy.toml"]])
def test_messages_never_print_control_characters_from_input(capsys, argv):
    from workbench.cli import main
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and not any(ord(c) < 32 and c != "\n" or c in "\x7f\u202e" for c in err), repr(err)


def test_scene_and_generator_parameters_take_numbers_through_the_same_parser():
    from workbench.params import check_params
    from workbench.sources import builder
    func = builder("sphere_packing", "generator")
    for key in ("mu", "h", "radius", "envelope", "n_spheres"):
        for value in (float("nan"), float("inf"), -float("inf"), 10 ** 4000):
            with pytest.raises(InputError) as err:
                check_params("sphere_packing", func, {"n_spheres": 10, key: value})
            assert "\n" not in str(err.value) and len(str(err.value)) < 400


def test_sphere_counts_of_generate_are_parsed_by_the_same_rule():
    from workbench.cli import build_parser
    parser = build_parser()
    for text in ("1e400", "nan", "0", "-3", "2.5", "9" * 5000, "1," * 6000, ",", "64,inf"):
        with pytest.raises(InputError) as err:
            parser.parse_args(["generate", "packing", "--sizes", text])
        assert "\n" not in str(err.value) and len(str(err.value)) < 400
    assert parser.parse_args(["generate", "packing", "--sizes", "64,128.0"]).sizes == [64, 128]


def test_info_prints_no_control_characters_from_a_file(tmp_path, capsys):
    from factories import random_problem
    from workbench.cli import main
    from workbench.io import save_problem
    import numpy as np
    save_problem(random_problem(n_contacts=3, n_bodies=2, seed=1), tmp_path / "p.npz")
    with np.load(tmp_path / "p.npz", allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["name"] = np.array("evil\x1b]0;title\x07\x1b[2J\u202ename")
    np.savez_compressed(tmp_path / "p.npz", **arrays)
    assert main(["info", str(tmp_path / "p.npz")]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and "\\x1b" in out
