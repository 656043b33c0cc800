"""The layers of ARCHITECTURE.md, checked on the source as Python runs it: every package of the tree
(every top-level folder with Python files but ``tests/``, found, not listed), and every import of each
of their modules -- module-level and inside functions, relative, ``importlib.import_module("...")`` and
``__import__`` strings, the ``"module:Class"`` strings of the registries (imports made later), and the
package ``__init__`` each import runs first -- points to the module's own layer or a lower one, and no
two modules import each other, directly or through others."""

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: top-level folders that are not layered code: the tests themselves, build output
NOT_PACKAGES = ("tests", "build")

#: the rooms of benchmarks/ (ARCHITECTURE.md, docs/benchmarks.md): every benchmark module is in one of them
BENCHMARK_ROOMS = ["benchmarks.timing", "benchmarks.peers", "benchmarks.generation", "benchmarks.reproduce"]
#: the modules of benchmarks/ outside the rooms: the package (the interpreter check, the old commands) and
#: the renderers of the committed pages, which imports every room
BENCHMARKS_OUTSIDE_ROOMS = {"benchmarks", "benchmarks.pages"}

#: lowest first; a module may import its own layer and the layers before it. A name covers the module
#: and everything below it; the longest name that covers a module decides (``workbench`` alone is the
#: package's ``__init__``). A layer named here whose modules do not exist yet is simply empty.
LAYERS = [
    ("foundation", ["workbench.errors", "workbench.files", "workbench.params", "workbench.numbers",
                    "workbench.shared_data", "workbench.provenance", "workbench.limits",
                    "workbench.process_start", "workbench.status", "workbench.progress", "workbench.kernel_cache"]),
    ("time-step problem", ["workbench", "workbench.threads", "workbench.blocks", "workbench.problem",
                           "workbench.cones", "workbench.metrics", "workbench.lcp_metrics"]),
    ("I/O", ["workbench.io"]),
    ("formulations", ["formulations", "workbench.export"]),
    ("solvers", ["workbench.solvers"]),
    ("method", ["workbench.judging", "workbench.method"]),
    ("problems", ["problems"]),
    ("sources", ["workbench.sources"]),
    ("analysis", ["workbench.analysis"]),
    ("runner", ["workbench.study"]),
    ("reports", ["workbench.plot", "workbench.report"]),
    ("CLI", ["workbench.cli", "workbench.commands"]),
    ("benchmarks", ["benchmarks", *BENCHMARK_ROOMS]),
]
_REGISTRY_ENTRY = re.compile(r"^([A-Za-z_]\w*(?:\.\w+)*):\w+$")
_IMPORT_CALLS = ("import_module", "__import__")


def packages(root: Path = REPO) -> list[str]:
    """The top-level folders of ``root`` that hold Python files (hidden ones and NOT_PACKAGES aside)."""
    return sorted(d.name for d in root.iterdir() if d.is_dir() and not d.name.startswith((".", "_"))
                  and d.name not in NOT_PACKAGES and any(d.rglob("*.py")))


def modules(root: Path = REPO) -> dict[str, Path]:
    found = {}
    for package in packages(root):
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _ours(name: str, known: dict[str, Path]) -> str | None:
    """The module of ours that importing ``name`` runs last (the longest known prefix)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in known:
            return ".".join(parts[:end])
    return None


def _import_call(node: ast.Call) -> str | None:
    """The module an ``importlib.import_module(...)`` or ``__import__(...)`` call names: its literal
    argument, or the constant start of an f-string (``f"workbench.study.{name}"``: that package)."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if called not in _IMPORT_CALLS or not node.args:
        return None
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        return str(arg.values[0].value).rstrip(".") or None
    return None


def _named(node: ast.AST, package: str, known: dict[str, Path]) -> list[str]:
    """The dotted names one AST node imports (now or later)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
            base = ".".join(anchor + ([base] if base else []))
        return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
    if isinstance(node, ast.Call):
        name = _import_call(node)
        return [name] if name else []
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and _REGISTRY_ENTRY.match(node.value):
        return [_REGISTRY_ENTRY.match(node.value).group(1)]
    return []


def _runs(target: str, importer: str, known: dict[str, Path]) -> list[str]:
    """``target`` and the package ``__init__``s importing it runs first, but the importer's own packages
    (always run before the importer)."""
    parts = target.split(".")
    own = {".".join(importer.split(".")[:end]) for end in range(1, len(importer.split(".")))}
    parents = [".".join(parts[:end]) for end in range(1, len(parts))]
    return [target] + [p for p in parents if p in known and p not in own]


def imports(module: str, path: Path, known: dict[str, Path]) -> set[tuple[str, int]]:
    """(imported module of ours, line) for every import in the file, wherever it stands."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        for name in _named(node, package, known):
            target = _ours(name, known)
            if target is None:
                continue
            found |= {(runs, node.lineno) for runs in _runs(target, module, known) if runs != module}
    return found


def layer_of(module: str, layers=LAYERS) -> int:
    best, rank = -1, None
    for index, (_, names) in enumerate(layers):
        for name in names:
            covers = module == name or (name != "workbench" and module.startswith(name + "."))
            if covers and len(name) > best:
                best, rank = len(name), index
    assert rank is not None, f"{module} is in no layer of tests/test_layers.py (and of ARCHITECTURE.md)"
    return rank


def graph(root: Path = REPO) -> dict[str, set[tuple[str, int]]]:
    known = modules(root)
    return {module: imports(module, path, known) for module, path in known.items()}


def upward(root: Path = REPO, layers=LAYERS) -> list[str]:
    """Every import that runs up a layer, one line each."""
    found = []
    for module, targets in graph(root).items():
        own = layer_of(module, layers)
        for target, line in sorted(targets):
            if layer_of(target, layers) > own:
                found.append(f"{module}:{line} ({layers[own][0]}) imports {target} "
                             f"({layers[layer_of(target, layers)][0]})")
    return found


def test_every_module_is_in_a_layer_and_imports_only_its_own_or_lower_layers():
    assert set(packages()) >= {"workbench", "formulations", "problems", "benchmarks"}
    assert upward() == []


def test_every_benchmark_module_is_in_a_room():
    rooms = {module: next((room for room in BENCHMARK_ROOMS if module == room or module.startswith(room + ".")), None)
             for module in modules() if module == "benchmarks" or module.startswith("benchmarks.")}
    assert set(BENCHMARK_ROOMS) <= set(rooms)
    assert {module for module, room in rooms.items() if room is None} == BENCHMARKS_OUTSIDE_ROOMS


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def circles(root: Path = REPO) -> list[list[str]]:
    return cycles({module: {target for target, _ in targets} for module, targets in graph(root).items()})


def test_no_import_circles():
    assert circles() == []


# --------------------------------------------------------------------------- the checks themselves

#: a small tree of the real layers: foundation, a runner package, a report package with a submodule
_TREE = {"workbench/__init__.py": "", "workbench/errors.py": "X = 1\n", "workbench/study/__init__.py": "",
         "workbench/study/spec.py": "from workbench.errors import X\n", "workbench/report/__init__.py": "",
         "workbench/report/tables.py": "", "workbench/plot.py": ""}


def _tree(root: Path, **changes: str) -> Path:
    for rel, text in {**_TREE, **changes}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.mark.parametrize("kind, errors_py", [
    ("plain", "import workbench.study.spec\n"),
    ("from-import", "from workbench.study import spec\n"),
    ("relative", "from .study import spec\n"),
    ("function-level", "def f():\n    from workbench.study.spec import X\n"),
    ("importlib string", "import importlib\n\ndef f():\n    return importlib.import_module('workbench.study.spec')\n"),
    ("importlib f-string",
     "import importlib\n\ndef f(n):\n    return importlib.import_module(f'workbench.study.{n}')\n"),
    ("__import__ string", "def f():\n    return __import__('workbench.study.spec')\n"),
    ("registry string", "LATER = {'x': 'workbench.study.spec:Study'}\n"),
])
def test_each_kind_of_upward_import_fails(tmp_path, kind, errors_py):
    assert upward(_tree(tmp_path)) == []
    found = upward(_tree(tmp_path, **{"workbench/errors.py": errors_py}))
    assert found and all(f.startswith("workbench.errors:") and "(foundation) imports workbench.study" in f
                         for f in found), (kind, found)


def test_an_upward_import_through_a_package_init_fails(tmp_path):
    """Importing a low module of a package runs the package's ``__init__`` first: when that ``__init__``
    sits in a higher layer, the import runs up (``pkg.mid.leaf`` is low, ``pkg.mid`` high)."""
    layers = [("low", ["pkg.low", "pkg.mid.leaf"]), ("high", ["pkg", "pkg.mid"])]
    tree = {"pkg/__init__.py": "", "pkg/low.py": "from pkg.mid.leaf import X\n", "pkg/mid/__init__.py": "",
            "pkg/mid/leaf.py": "X = 1\n"}
    for rel, text in tree.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert upward(tmp_path, layers) == ["pkg.low:1 (low) imports pkg.mid (high)"]


def test_a_circle_through_a_package_init_is_found(tmp_path):
    """plot imports report.tables, whose package ``__init__`` imports plot: a circle although no two
    modules name each other (the one that plot -> report.accounting made)."""
    root = _tree(tmp_path, **{"workbench/plot.py": "def f():\n    from workbench.report.tables import t\n",
                              "workbench/report/__init__.py": "from workbench import plot\n"})
    assert circles(root) == [["workbench.plot", "workbench.report"]]
    assert circles(_tree(tmp_path, **{"workbench/plot.py": ""})) == []


def test_a_circle_of_two_modules_is_found(tmp_path):
    root = _tree(tmp_path, **{"workbench/study/spec.py": "from . import worker\n",
                              "workbench/study/worker.py": "X = 'workbench.study.spec:Study'\n"})
    assert circles(root) == [["workbench.study.spec", "workbench.study.worker"]]


def test_a_new_package_is_found_and_must_be_given_a_layer(tmp_path):
    root = _tree(tmp_path, **{"newpkg/thing.py": "from workbench.errors import X\n"})
    assert "newpkg" in packages(root)
    with pytest.raises(AssertionError, match="newpkg.thing is in no layer"):
        upward(root)
