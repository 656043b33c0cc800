"""Measured numbers in the documentation are written by the command that measured them.

A command that measures something (a benchmark, a reproduction, a study report) calls
:func:`write_results` with its raw data and its renderer, a function. That writes two files under
``docs/results/``:

- ``NAME.json``: the raw data, the renderer's label (:func:`label`, ``module:function``: which
  function made the page; never imported from here) and the provenance (UTC date, machine, commit,
  command line, load average);
- ``NAME.md``: a header stating that provenance, then ``renderer(data)`` (markdown).

README.md and the pages of ``docs/`` never type a measured number: they link a results page, or
embed it between the markers ``<!-- results: NAME -->`` and ``<!-- end results: NAME -->``, and
:func:`check_docs` (run by ``tests/test_docs_claims.py``) verifies that every ``NAME.md`` is exactly
what its renderer makes of its ``NAME.json`` and that every embedded copy is exactly the page. So a
number changed by hand in a page, an embedded copy or the raw data fails the test. The renderers are
handed to it as functions (``benchmarks/pages.py`` lists those of the committed pages): this module, in
the lowest layer, imports nothing by a name stored in data.

Clean provenance (issue 44): a page is measured on a commit, so :func:`write_results` refuses to write
into ``docs/results`` from a tree whose tracked files differ from HEAD (other than the files the run
writes itself, ``own``): a :class:`DirtyTree` error (an InputError: one line naming the changed files,
exit code 2), after keeping the record it would have written in the system's temporary folder
(``workbench-refused/NAME.json``), so nothing measured is lost. A command can call
:func:`require_clean` before it measures, to refuse at once. Writing into another folder
(``--results-dir``, a test's temporary folder) is never refused.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

from workbench.errors import InputError
from workbench.files import atomic_output
from workbench.process_start import ROOT, START_HEAD, START_LOAD

__all__ = ["RESULTS_DIR", "write_results", "write_view", "rerender", "render", "check_docs", "provenance", "header", "embed",
           "label", "DirtyTree", "local_changes", "require_clean", "LOCAL_CHANGES"]

#: what a page's commit says when it was written from a tree with local changes
LOCAL_CHANGES = "+local changes"


class DirtyTree(InputError):
    """A results page asked for from a tree with local changes."""

#: where the generated results pages live
RESULTS_DIR = ROOT / "docs" / "results"

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_EMBED = re.compile(r"<!-- results: ([a-z0-9_-]+) -->\n(.*?)<!-- end results: \1 -->", re.S)


def local_changes(own: tuple[os.PathLike | str, ...] = ()) -> list[str] | None:
    """The tracked files (paths relative to the repository root) that differ from HEAD, but for
    ``own``; None when git cannot tell (no git, not a repository)."""
    try:
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if dirty.returncode != 0:
        return None
    mine = {Path(f).resolve() for f in own}
    changed = [line[3:] for line in dirty.stdout.splitlines() if line.strip()]
    return [f for f in changed if (ROOT / f).resolve() not in mine]


def _refusal(changed: list[str]) -> str:
    shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    return (f"results pages are written from a clean commit; tracked files differ from HEAD: {shown} "
            "(commit or stash them, then run the command again)")


def require_clean(own: tuple[os.PathLike | str, ...] = ()) -> None:
    """Refuse (:class:`DirtyTree`, one line naming the changed files) when tracked files other than
    ``own`` differ from HEAD: for a command about to measure a page."""
    changed = local_changes(own)
    if changed:
        raise DirtyTree(_refusal(changed))


def _commit(start: str | None = None, own: tuple[os.PathLike | str, ...] = ()) -> str:
    """The commit the run started on (``start``, default :data:`workbench.process_start.START_HEAD`), short,
    with "+local changes" when tracked files differ from HEAD now, and the commit HEAD moved to when it
    moved during the run (a page names what was checked out when it was measured, not when it ended).
    ``own``: tracked files the run itself writes (a manifest the page renders), not local changes."""
    start = START_HEAD if start is None else start
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    now = out.stdout.strip()
    if not now:
        return "unknown"
    commit = (start or now)[:7]
    if start and start != now:
        commit += f" (HEAD moved to {now[:7]} during the run)"
    return commit + (LOCAL_CHANGES if local_changes(own) else "")


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}, Python {platform.python_version()}"


def provenance(command: str | None = None, own: tuple[os.PathLike | str, ...] = ()) -> dict[str, str]:
    """Date (UTC, now), machine, commit, command line and the load averages of a measurement that ends
    now: ``load`` when the process imported the workbench (:data:`workbench.process_start.START_LOAD`, the run's start)
    and ``load_end`` now; a long run's own processes raise the second. ``own``: see :func:`_commit`."""
    try:
        now = os.getloadavg()
    except OSError:
        now = None
    return {"date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": _machine(), "commit": _commit(own=own),
            "command": command or " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
            "load": _load(START_LOAD), "load_end": _load(now)}


def _load(values: tuple[float, ...] | None) -> str:
    return "unknown" if values is None else " ".join(f"{x:.1f}" for x in values)


def header(prov: dict[str, str]) -> str:
    """The lines that open every results page."""
    end = f", at the end {prov['load_end']}" if "load_end" in prov else ""  # records before it was kept: start only
    return (f"_Generated by `{prov['command']}` on {prov['date']} — {prov['machine']}; commit "
            f"{prov['commit']}; load average at the start {prov['load']}{end}. Do not edit: re-run the command._\n\n")


def label(func: Callable) -> str:
    """``module:function``, the label a record keeps of its renderer, by which :func:`check_docs`
    picks the function it was handed; a command run as ``python -m package.module`` defines its
    functions in ``__main__``, whose importable name is its spec's."""
    module = func.__module__
    if module == "__main__":
        spec = getattr(sys.modules["__main__"], "__spec__", None)
        if spec is None:
            raise ValueError(f"renderer {func.__name__} is defined in a script: run it as python -m MODULE")
        module = spec.name
    return f"{module}:{func.__name__}"


def render(record: dict[str, Any], renderer: Callable[[Any], str]) -> str:
    """The page a results record (the contents of ``NAME.json``) renders to with ``renderer``."""
    return header(record["provenance"]) + renderer(record["data"]).rstrip("\n") + "\n"


def write_results(name: str, data: Any, renderer: Callable[[Any], str], command: str | None = None,
                  folder: os.PathLike | str | None = None, own: tuple[os.PathLike | str, ...] = ()) -> Path:
    """Write ``NAME.json`` (data, renderer, provenance) and ``NAME.md`` (rendered) under
    ``folder`` (default :data:`RESULTS_DIR`); the path of the page. ``data`` must be plain JSON
    (numbers, strings, lists, dicts) and ``renderer`` a module-level function of it. ``own``: tracked
    files this run wrote before its page (its manifest), which are not "local changes". Into
    :data:`RESULTS_DIR` only from a clean tree (module docstring: :class:`DirtyTree` otherwise, the
    record kept in the temporary folder)."""
    if not _NAME.match(name):
        raise ValueError(f"results name {name!r}: lower-case letters, digits, '-' and '_' only")
    folder = Path(folder) if folder is not None else RESULTS_DIR
    record = {"renderer": label(renderer), "provenance": provenance(command, own),
              "data": json.loads(json.dumps(data, allow_nan=False))}
    if folder.resolve() == RESULTS_DIR.resolve():
        changed = local_changes(own)
        if changed:
            import tempfile

            kept = Path(tempfile.gettempdir()) / "workbench-refused" / f"{name}.json"
            kept.parent.mkdir(parents=True, exist_ok=True)
            with atomic_output(kept) as tmp:
                tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
            raise DirtyTree(f"{_refusal(changed)}; the measured record is kept in {kept}")
    folder.mkdir(parents=True, exist_ok=True)
    return _write_record(folder, name, record, renderer)


def _write_record(folder: Path, name: str, record: dict[str, Any], renderer: Callable[[Any], str]) -> Path:
    """``folder/NAME.json`` (the record) and ``folder/NAME.md`` (its page), each written atomically."""
    page = render(record, renderer)
    with atomic_output(folder / f"{name}.json") as tmp:
        tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    with atomic_output(folder / f"{name}.md") as tmp:
        tmp.write_text(page, encoding="utf-8")
    return folder / f"{name}.md"


def write_view(name: str, source: str, renderer: Callable[[Any], str], folder: os.PathLike | str | None = None) -> Path:
    """Write ``NAME.json`` / ``NAME.md``: another rendering of the record ``SOURCE.json`` (the same
    data and provenance, e.g. a short table for the README); the path of the page."""
    if not _NAME.match(name):
        raise ValueError(f"results name {name!r}: lower-case letters, digits, '-' and '_' only")
    folder = Path(folder) if folder is not None else RESULTS_DIR
    record = json.loads((folder / f"{source}.json").read_text(encoding="utf-8"))
    view = {"renderer": label(renderer), "provenance": record["provenance"], "data": record["data"],
            "view_of": source}
    return _write_record(folder, name, view, renderer)


def rerender(name: str, renderer: Callable[[Any], str], folder: os.PathLike | str | None = None) -> Path:
    """Write ``NAME.md`` again from the stored ``NAME.json`` by ``renderer`` (its data and provenance as
    measured; the record's renderer label set to ``renderer``'s): for a change of how a page presents the
    same numbers, never of the numbers. The path of the page."""
    folder = Path(folder) if folder is not None else RESULTS_DIR
    record = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
    return _write_record(folder, name, {**record, "renderer": label(renderer)}, renderer)


def check_docs(root: os.PathLike | str = ROOT, renderers: Iterable[Callable[[Any], str]] = ()) -> list[str]:
    """Every disagreement between the generated results pages, their raw data (rendered by the one of
    ``renderers`` whose :func:`label` the record names) and the copies embedded in README.md and
    docs/*.md, one line each (empty: all agree); a record whose renderer was not handed over is one."""
    root = Path(root)
    by_label = {label(f): f for f in renderers}
    results = root / "docs" / "results"
    problems = []
    pages: dict[str, str] = {}
    for record_path in sorted(results.glob("*.json")):
        name = record_path.stem
        page_path = results / f"{name}.md"
        if not page_path.exists():
            problems.append(f"docs/results/{name}.json has no {name}.md")
            continue
        pages[name] = page_path.read_text(encoding="utf-8")
        try:
            record = json.loads(record_path.read_text(encoding="utf-8"))
            if record["renderer"] not in by_label:
                problems.append(f"docs/results/{name}.json names the renderer {record['renderer']}, which was not "
                                "handed over")
                continue
            expected = render(record, by_label[record["renderer"]])
        except Exception as exc:  # noqa: BLE001 - a record that does not render is what is reported
            problems.append(f"docs/results/{name}.json does not render: {type(exc).__name__}: {exc}")
            continue
        if expected != pages[name]:
            problems.append(f"docs/results/{name}.md differs from what its raw data renders to")
    for page in results.glob("*.md"):
        if page.stem not in pages and not (results / f"{page.stem}.json").exists():
            problems.append(f"docs/results/{page.name} has no raw data ({page.stem}.json)")
    for doc in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        if not doc.exists():
            continue
        for match in _EMBED.finditer(doc.read_text(encoding="utf-8")):
            name, body = match.group(1), match.group(2)
            if name not in pages:
                problems.append(f"{doc.relative_to(root)} embeds results {name!r}, which does not exist")
            elif body != pages[name]:
                problems.append(f"{doc.relative_to(root)}: the embedded copy of results {name!r} differs from "
                                f"docs/results/{name}.md")
    return problems


def embed(doc: os.PathLike | str, name: str, folder: os.PathLike | str | None = None) -> bool:
    """Replace the copy of results ``name`` embedded in ``doc`` (between its markers) with the current
    page ``folder/NAME.md`` (default :data:`RESULTS_DIR`); False when ``doc`` has no such markers. A
    command that writes results calls it so the page that shows them never lags behind."""
    doc = Path(doc)
    page = (Path(folder) if folder is not None else RESULTS_DIR) / f"{name}.md"
    if not doc.exists():
        return False
    text = doc.read_text(encoding="utf-8")
    start, end = f"<!-- results: {name} -->\n", f"<!-- end results: {name} -->"
    i = text.find(start)
    j = text.find(end, i + len(start)) if i >= 0 else -1
    if j < 0:
        return False
    with atomic_output(doc) as tmp:
        tmp.write_text(text[:i + len(start)] + page.read_text(encoding="utf-8") + text[j:], encoding="utf-8")
    return True
