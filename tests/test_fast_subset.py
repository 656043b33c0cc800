"""The fast subset (``-m fast``, tests/conftest.py) stays true to the test files: every test module
has a test in it or a reason in FAST_EXEMPT, and every test it names exists, so a renamed test or a new
module cannot silently drop out of it."""

import ast
from pathlib import Path

from conftest import FAST, FAST_EXEMPT

TESTS = Path(__file__).resolve().parent


def _test_functions(path: Path) -> set[str]:
    return {n.name for n in ast.parse(path.read_text(encoding="utf-8")).body
            if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}


def test_every_test_module_is_in_the_fast_subset_or_exempt_with_a_reason():
    modules = {p.name for p in TESTS.glob("test_*.py")}
    assert not modules - set(FAST) - set(FAST_EXEMPT), "test modules with no fast test and no reason"
    assert not (set(FAST) | set(FAST_EXEMPT)) - modules, "listed modules that do not exist"
    assert not set(FAST) & set(FAST_EXEMPT) and all(FAST_EXEMPT.values())


def test_every_fast_test_exists_and_is_not_slow():
    for module, names in FAST.items():
        assert names, module
        tree = ast.parse((TESTS / module).read_text(encoding="utf-8"))
        functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        for name in names:
            assert name in functions, f"{module}: no test {name}"
            marks = [ast.unparse(d) for d in functions[name].decorator_list]
            assert not any("mark.slow" in m for m in marks), f"{module}::{name} is marked slow"
