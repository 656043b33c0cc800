"""The layers of ARCHITECTURE.md, checked on the source: every import of every module of the
packages (module-level and inside functions, and the ``"module:Class"`` strings of the registries,
which are imports made later) points to the module's own layer or a lower one, and no two modules
import each other, directly or through others."""

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("workbench", "formulations", "problems", "benchmarks")

#: lowest first; a module may import its own layer and the layers before it. A name covers the module
#: and everything below it; the longest name that covers a module decides (``workbench`` alone is the
#: package's ``__init__``). A layer named here whose modules do not exist yet is simply empty.
LAYERS = [
    ("foundation", ["workbench.errors", "workbench.files", "workbench.params", "workbench.numbers",
                    "workbench.shared_data", "workbench.provenance", "workbench.limits"]),
    ("time-step problem", ["workbench", "workbench.problem", "workbench.cones", "workbench.metrics",
                           "workbench.lcp_metrics"]),
    ("I/O", ["workbench.io"]),
    ("formulations", ["formulations", "workbench.export"]),
    ("solvers", ["workbench.solvers"]),
    ("method", ["workbench.method"]),
    ("problems", ["problems"]),
    ("sources", ["workbench.sources"]),
    ("runner", ["workbench.study"]),
    ("reports", ["workbench.plot", "workbench.report"]),
    ("CLI", ["workbench.cli", "workbench.commands"]),
    ("benchmarks", ["benchmarks"]),
]
_REGISTRY_ENTRY = re.compile(r"^((?:%s)(?:\.\w+)*):\w+$" % "|".join(PACKAGES))


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
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


def imports(module: str, path: Path, known: dict[str, Path]) -> set[tuple[str, int]]:
    """(imported module of ours, line) for every import in the file, wherever it stands."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _REGISTRY_ENTRY.match(node.value):
            names = [_REGISTRY_ENTRY.match(node.value).group(1)]
        for name in names:
            target = _ours(name, known)
            if target is not None and target != module:
                found.add((target, node.lineno))
    return found


def layer_of(module: str) -> int:
    best, rank = -1, None
    for index, (_, names) in enumerate(LAYERS):
        for name in names:
            covers = module == name or (name != "workbench" and module.startswith(name + "."))
            if covers and len(name) > best:
                best, rank = len(name), index
    assert rank is not None, f"{module} is in no layer of tests/test_layers.py (and of ARCHITECTURE.md)"
    return rank


def graph() -> dict[str, set[tuple[str, int]]]:
    known = modules()
    return {module: imports(module, path, known) for module, path in known.items()}


def test_every_module_is_in_a_layer_and_imports_only_its_own_or_lower_layers():
    upward = []
    for module, targets in graph().items():
        own = layer_of(module)
        for target, line in sorted(targets):
            if layer_of(target) > own:
                upward.append(f"{module}:{line} ({LAYERS[own][0]}) imports {target} ({LAYERS[layer_of(target)][0]})")
    assert not upward, "\n".join(upward)


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


def test_no_import_circles():
    edges = {module: {target for target, _ in targets} for module, targets in graph().items()}
    assert cycles(edges) == []


def test_the_checks_find_what_they_are_for(tmp_path):
    """An upward import, a registry string, a relative import and a circle are each seen."""
    pkg = tmp_path / "workbench"
    (pkg / "study").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "errors.py").write_text("def f():\n    from workbench.study import spec\n")
    (pkg / "study" / "__init__.py").write_text("")
    (pkg / "study" / "spec.py").write_text("from . import worker\n")
    (pkg / "study" / "worker.py").write_text("X = 'workbench.study.spec:Study'\n")
    known = {"workbench": pkg / "__init__.py", "workbench.errors": pkg / "errors.py",
             "workbench.study": pkg / "study" / "__init__.py", "workbench.study.spec": pkg / "study" / "spec.py",
             "workbench.study.worker": pkg / "study" / "worker.py"}
    edges = {m: imports(m, p, known) for m, p in known.items()}
    assert edges["workbench.errors"] == {("workbench.study.spec", 2)}
    assert layer_of("workbench.study.spec") > layer_of("workbench.errors")
    assert edges["workbench.study.spec"] == {("workbench.study.worker", 1)}
    assert edges["workbench.study.worker"] == {("workbench.study.spec", 1)}
    assert cycles({m: {t for t, _ in e} for m, e in edges.items()}) == [["workbench.study.spec",
                                                                         "workbench.study.worker"]]
