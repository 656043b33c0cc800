"""Numbers in README.md and docs/ are the committed output of the commands that measured them
(workbench.provenance): a page, its raw data and every embedded copy agree, and changing one number
anywhere makes them disagree."""

import json
import re
import shutil

import pytest

from benchmarks.pages import RENDERERS
from workbench import provenance


def _table(data):
    return "| a | b |\n|---|---|\n" + "".join(f"| {k} | {v:.3g} |\n" for k, v in data["rows"].items())


def test_committed_docs_agree_with_their_results():
    assert provenance.check_docs(renderers=RENDERERS) == []


def test_a_changed_number_is_caught(tmp_path):
    root = tmp_path
    (root / "docs").mkdir()
    page = provenance.write_results("demo", {"rows": {"x": 1.25, "y": 0.5}}, _table, command="demo cmd",
                                    folder=root / "docs" / "results")
    body = page.read_text()
    assert "| x | 1.25 |" in body and "demo cmd" in body
    (root / "README.md").write_text(f"intro\n<!-- results: demo -->\n{body}<!-- end results: demo -->\n")
    assert provenance.check_docs(root, [_table]) == []
    # a number typed into the embedded copy
    readme = (root / "README.md").read_text()
    (root / "README.md").write_text(readme.replace("| x | 1.25 |", "| x | 1.26 |"))
    assert any("embedded copy" in p for p in provenance.check_docs(root, [_table]))
    (root / "README.md").write_text(readme)
    # a number changed in the page itself
    page.write_text(body.replace("| y | 0.5 |", "| y | 0.4 |"))
    assert any("differs from what its raw data renders" in p for p in provenance.check_docs(root, [_table]))
    page.write_text(body)
    # a number changed in the raw data
    raw = root / "docs" / "results" / "demo.json"
    record = json.loads(raw.read_text())
    record["data"]["rows"]["x"] = 2.0
    raw.write_text(json.dumps(record))
    assert provenance.check_docs(root, [_table]) != []


def test_the_load_at_the_start_is_the_process_start_not_the_write(tmp_path, monkeypatch):
    """A run of an hour writes its page at its end: the header's "load at the start" is the load when the
    process imported the workbench, and the load at the end is written beside it."""
    monkeypatch.setattr(provenance, "START_LOAD", (0.25, 0.5, 0.75))
    monkeypatch.setattr(provenance.os, "getloadavg", lambda: (7.0, 6.0, 5.0))
    page = provenance.write_results("demo", {"rows": {"x": 1.0}}, _table, command="demo", folder=tmp_path)
    record = json.loads((tmp_path / "demo.json").read_text())
    assert (record["provenance"]["load"], record["provenance"]["load_end"]) == ("0.2 0.5 0.8", "7.0 6.0 5.0")
    assert "load average at the start 0.2 0.5 0.8, at the end 7.0 6.0 5.0." in page.read_text()
    # a record written before the end was kept renders as it did
    del record["provenance"]["load_end"]
    assert "load average at the start 0.2 0.5 0.8. Do not edit" in provenance.render(record, _table)


def test_the_commit_is_the_one_the_run_started_on(tmp_path):
    """HEAD read from the files at the process's start (a branch ref loose, then packed; a worktree's .git
    file) is git's own HEAD; a page whose HEAD moved during its run names the start's commit and says
    where HEAD went, not the end's commit alone."""
    import subprocess

    from workbench.process_start import head_commit

    def git(*args, cwd=tmp_path / "repo"):
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()

    (tmp_path / "repo").mkdir()
    git("init", "-q", "-b", "main")
    (tmp_path / "repo" / "a.txt").write_text("a")
    git("add", "a.txt")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "a")
    first = git("rev-parse", "HEAD")
    assert head_commit(tmp_path / "repo") == first
    git("pack-refs", "--all")
    assert not (tmp_path / "repo" / ".git" / "refs" / "heads" / "main").exists()
    assert head_commit(tmp_path / "repo") == first
    git("worktree", "add", "-q", str(tmp_path / "tree"), "-b", "other")
    assert head_commit(tmp_path / "tree") == first
    assert head_commit(tmp_path / "nowhere") is None
    now = subprocess.run(["git", "-C", str(provenance.ROOT), "rev-parse", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    assert provenance._commit(now).split("+")[0] == now[:7]
    moved = provenance._commit("0" * 40)
    assert moved.startswith(f"0000000 (HEAD moved to {now[:7]} during the run)")


def _scratch_repo(tmp_path):
    """A git repository with two committed files, MANIFEST.json and code.py, and its git command."""
    import subprocess

    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args):
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()

    git("init", "-q", "-b", "main")
    for name in ("MANIFEST.json", "code.py"):
        (repo / name).write_text("{}")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "a")
    return repo, git


def test_files_a_run_writes_itself_are_not_local_changes(tmp_path, monkeypatch):
    """A run that updates a tracked manifest before writing its page (workbench generate into
    problems/datasets) names its commit without "+local changes"; a change to any other tracked file
    is still one, and so is the manifest's change when the run does not declare it."""
    repo, git = _scratch_repo(tmp_path)
    head = git("rev-parse", "HEAD")
    monkeypatch.setattr(provenance, "ROOT", repo)
    assert provenance._commit(head) == head[:7]
    (repo / "MANIFEST.json").write_text('{"new": 1}')
    assert provenance._commit(head) == head[:7] + "+local changes"
    assert provenance._commit(head, own=(repo / "MANIFEST.json",)) == head[:7]
    (repo / "code.py").write_text("x = 1")
    assert provenance._commit(head, own=(repo / "MANIFEST.json",)) == head[:7] + "+local changes"


def test_a_page_rendered_again_keeps_its_numbers_and_provenance(tmp_path):
    page = provenance.write_results("demo", {"rows": {"x": 1.25}}, _table, command="demo cmd", folder=tmp_path)
    before = json.loads((tmp_path / "demo.json").read_text())

    def _wide(data):
        return _table(data) + "\nthe same numbers, presented anew\n"
    provenance.rerender("demo", _wide, folder=tmp_path)
    after = json.loads((tmp_path / "demo.json").read_text())
    assert (after["data"], after["provenance"]) == (before["data"], before["provenance"])
    assert page.read_text() == provenance.render(before, _wide) and "presented anew" in page.read_text()
    assert after["renderer"].endswith(":_wide")


def test_a_renderer_of_a_command_run_as_a_module_is_found_again(tmp_path, monkeypatch):
    """``python -m benchmarks.reproduce.calibrate --write``: the renderer's module is __main__
    there; the record names the module the command was run as."""
    import sys
    import types

    def render_rows(data):
        return _table(data)
    render_rows.__module__ = "__main__"
    monkeypatch.setattr(sys.modules["__main__"], "__spec__", types.SimpleNamespace(name="test_docs_claims"),
                        raising=False)
    monkeypatch.setattr(sys.modules["test_docs_claims"], "render_rows", render_rows, raising=False)
    provenance.write_results("m", {"rows": {"x": 1.0}}, render_rows, command="c", folder=tmp_path)
    assert json.loads((tmp_path / "m.json").read_text())["renderer"] == "test_docs_claims:render_rows"


def test_a_renderer_not_handed_over_is_named_and_never_imported(tmp_path):
    """The record keeps a label of its renderer, not something to import: a label no handed-over function
    has (here one of the standard library) is one line, and the function is not looked up by it."""
    folder = tmp_path / "docs" / "results"
    provenance.write_results("demo", {"rows": {"x": 1.0}}, _table, command="c", folder=folder)
    record = json.loads((folder / "demo.json").read_text())
    (folder / "demo.json").write_text(json.dumps({**record, "renderer": "os:getcwd"}))
    assert provenance.check_docs(tmp_path, [_table]) == ["docs/results/demo.json names the renderer os:getcwd, "
                                                         "which was not handed over"]
    assert provenance.check_docs(tmp_path) != []


def _change_a_digit(text: str, start: int = 0) -> str:
    """``text`` with the first digit of a table row after ``start`` changed (d -> d + 1 mod 10)."""
    for line_start in (m.start() for m in re.finditer(r"^\| ", text[start:], re.M)):
        i = start + line_start
        end = text.index("\n", i)
        digit = re.search(r"\d", text[i:end])
        if digit:
            k = i + digit.start()
            return text[:k] + str((int(text[k]) + 1) % 10) + text[k + 1:]
    raise AssertionError("no table row with a digit")


def test_a_changed_digit_in_a_committed_page_is_caught(tmp_path):
    """The committed results and the pages embedding them, copied: they agree; one digit changed in a
    results page, in an embedded copy or in the raw data, and check_docs names the disagreement."""
    records = sorted(provenance.RESULTS_DIR.glob("*.json"))
    if not records:
        pytest.skip("no committed results")
    shutil.copytree(provenance.ROOT / "docs", tmp_path / "docs")
    if (provenance.ROOT / "README.md").exists():
        shutil.copy(provenance.ROOT / "README.md", tmp_path / "README.md")
    assert provenance.check_docs(tmp_path, RENDERERS) == []
    name = records[0].stem
    page = tmp_path / "docs" / "results" / f"{name}.md"
    body = page.read_text()
    page.write_text(_change_a_digit(body))
    assert any(f"{name}.md differs from what its raw data renders" in p
               for p in provenance.check_docs(tmp_path, RENDERERS))
    page.write_text(body)
    embedding = [d for d in sorted((tmp_path / "docs").glob("*.md")) if "<!-- results: " in d.read_text()]
    if embedding:
        doc = embedding[0]
        text = doc.read_text()
        doc.write_text(_change_a_digit(text, text.index("<!-- results: ")))
        assert any("embedded copy" in p for p in provenance.check_docs(tmp_path, RENDERERS))
        doc.write_text(text)
    raw = tmp_path / "docs" / "results" / f"{name}.json"
    record = json.loads(raw.read_text())
    raw.write_text(json.dumps(_bump_first_number(record)))
    assert any(f"{name}.md differs" in p for p in provenance.check_docs(tmp_path, RENDERERS))


def _bump_first_number(record: dict) -> dict:
    """The record with the first number of its data (depth first) increased by one."""
    def bump(x):
        if isinstance(x, bool):
            return x, False
        if isinstance(x, (int, float)):
            return x + 1, True
        if isinstance(x, list):
            for i, v in enumerate(x):
                x[i], done = bump(v)
                if done:
                    return x, True
        if isinstance(x, dict):
            for k in sorted(x):
                x[k], done = bump(x[k])
                if done:
                    return x, True
        return x, False
    data, done = bump(record["data"])
    assert done, "no number in the raw data"
    return {**record, "data": data}


def _first_row(data):
    return "| a | b |\n|---|---|\n" + "".join(f"| {k} | {v:.3g} |\n" for k, v in list(data["rows"].items())[:1])


def test_a_view_shares_its_source_data_and_provenance(tmp_path):
    """write_view renders the same record another way (the README's short copy of a long page): same
    provenance, and a number changed in the view's data is caught like any other."""
    folder = tmp_path / "docs" / "results"
    provenance.write_results("demo", {"rows": {"x": 1.25, "y": 0.5}}, _table, command="demo cmd", folder=folder)
    view = provenance.write_view("demo-short", "demo", _first_row, folder=folder)
    body = view.read_text()
    assert "| x | 1.25 |" in body and "| y |" not in body and "demo cmd" in body
    assert provenance.check_docs(tmp_path, [_table, _first_row]) == []
    raw = folder / "demo-short.json"
    record = json.loads(raw.read_text())
    record["data"]["rows"]["x"] = 9.0
    raw.write_text(json.dumps(record))
    assert provenance.check_docs(tmp_path, [_table, _first_row]) != []


# --------------------------------------------------------------------------- typed numbers
# A measured number in README.md or docs/*.md must be written by the command that measured it, into a
# generated block (workbench.provenance). So every number outside those blocks is listed here, and a
# new one fails the test until it is either moved into a generated block or allowed below with its
# reason. Not counted: generated blocks, code (fenced or inline: commands and their options), links,
# references to the papers' parts (sec., eq., Table, Fig., QP (15), lines 33-37, journal volumes),
# years and dates, integers up to 10, powers of ten (tolerances, caps) and zero-padded dataset ids.
_GENERATED = re.compile(r"<!-- results: (\S+) -->.*?<!-- end results: \1 -->", re.S)
_NOT_PROSE = [re.compile(p, f) for p, f in (
    (r"^(```|~~~).*?^\1", re.S | re.M), (r"`[^`\n]*`", 0), (r"\]\([^)]*\)|https?://\S+", 0),
    (r"(?i)\b(?:sec(?:tion)?s?|eqs?|equations?|tables?|fig(?:ure)?s?|issues?|items?|lines|algorithm|qp|"
     r"theorem|lemma)\.?\s*\(?\d+(?:\.\d+)*\)?(?:\s*(?:-|–|/|and|,)\s*\(?\d+(?:\.\d+)*\)?)*", 0),
    (r"\b\d+\(\d+\)", 0), (r"\bTR-\d+-\d+", 0), (r"\b(?:19|20)\d\d(?:-\d\d-\d\d)?[a-z]?\b", 0))]
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")

#: file -> (numbers allowed outside generated blocks, why they are not measurements)
ALLOWED_NUMBERS = {
    "README.md": ("3.11 45500", "the Python version required, an example command's packing size"),
    "docs/benchmarks.md": ("12 20 200 30 32 320 4,096 4.4 40 50 52 570 82",
                           "benchmark settings (repetitions, sizes, limits), corpus problems' contact counts "
                           "(given by their files), the Siconos version"),
    "docs/cli.md": ("0.291 1.429 1.68 25 45,500 45500 65 8.06",
                    "closed-form values of the built-in scenes (t = 2 v0 / (7 g mu), 5 v0 / 7, g (sin - mu cos)), "
                    "their angles, and an example command's packing size"),
    "docs/datasets.md": ("0.0005 0.005 0.05 0.2 0.25 16 16,000 2,560 256 320 4,096 40 45,000 30,000 30000 50 500 64 "
                         "640,1280 8,000 8,192 800 4096 64,2560 17.5152587890625 20 11.6",
                         "the datasets' generator parameters (h, duration, sizes, radius, mu, envelope, "
                         "container), the papers' protocols, the step a profile starts from, an example command's size, "
                         "the calibrated floor as the calibration's record stores it (tests/test_generate.py checks it), "
                         "a family's member count in an example command, the series fit's hours for a tolerance-solved "
                         "30,000-sphere settle (recomputed from docs/results/generate.json by "
                         "test_the_large_settles_extrapolated_hours_in_datasets_md_are_the_generator_pages_fit)"),
    "docs/plotting.md": ("20 3.5", "the history recorder's rows per decade (a setting), a journal column's width "
                                   "in inches (plot.COLUMN_WIDTH)"),
    "docs/reproductions.md": ("0.0005 25 8,000 95 0.05", "the papers' protocol (h, steps), a declared rule tolerance, "
                              "and the level of the intervals over members (workbench.analysis.members.LEVEL)"),
    "docs/solvers-performance.md": ("0.9 16", "an algorithm constant (L <- 0.9 L) and the ipm pass's iterations"),
    "docs/solvers.md": ("0.7 0.9 1.9 240 3,072 12,288", "algorithm constants (damping, L <- 0.9 L, Jacobi's step "
                                                       "1.9 / ...), a size threshold, the block size of the "
                                                       "parallel reductions and the size below which loops stay serial"),
    "docs/studies.md": ("2,560 320 64", "packing sizes of the example studies"),
    "docs/threat-model.md": ("12 16 16777216 200 2000000 256 30 32 500 5000000 1,024 1,100 13,000 20 200,000 300,000 400 "
                             "5,000 64 65,536 65535 96 1073741824 250000 4096",
                             "declared resource limits (workbench.limits, the readers' budgets) and the hostile "
                             "inputs they stop (sizes of the cases), the problem size of the time-limit check"),
}


def _trivial(number: str) -> bool:
    s = number.replace(",", "")
    if re.fullmatch(r"[-+]?0\d+", s) or re.fullmatch(r"[-+]?1e[-+]?\d+|[-+]?10*|[-+]?0\.0*1", s):
        return True
    return float(s).is_integer() and abs(float(s)) <= 10


def typed_numbers(text: str) -> set[str]:
    """The numbers of ``text`` outside generated blocks and the forms listed above."""
    text = _GENERATED.sub(" ", text)
    for pattern in _NOT_PROSE:
        text = pattern.sub(" ", text)
    return {n.rstrip(",") for n in _NUMBER.findall(text) if not _trivial(n.rstrip(","))}


def test_typed_numbers_outside_generated_blocks_are_only_the_allowed_ones():
    root = provenance.RESULTS_DIR.parents[1]
    new, stale = {}, {}
    for path in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        name = path.relative_to(root).as_posix()
        found = typed_numbers(path.read_text(encoding="utf-8"))
        allowed = set(ALLOWED_NUMBERS.get(name, ("", ""))[0].split())
        if found - allowed:
            new[name] = sorted(found - allowed)
        if allowed - found:
            stale[name] = sorted(allowed - found)
    assert not new, f"numbers typed outside generated blocks (write them by their command): {new}"
    assert not stale, f"allowed numbers no longer in the docs (remove them from ALLOWED_NUMBERS): {stale}"


def test_the_typed_number_finder_sees_a_new_measurement_and_skips_what_is_not_one():
    text = ("APGD needs 41,156 iterations (sec. 5.1, eqs. 8-10, QP (15), Table 1, 2026-11-28, `--jobs 2`).\n"
            "<!-- results: x -->\n| 4,658 |\n<!-- end results: x -->\ntol 1e-6, 10,000 steps, 3 cores, 00320\n")
    assert typed_numbers(text) == {"41,156"}


def test_a_page_is_refused_from_a_tree_with_local_changes(tmp_path, monkeypatch):
    """write_results into docs/results from a tree whose tracked files differ from HEAD is a DirtyTree error
    (one line naming the files; the record kept in the temporary folder); the files the run writes itself
    are not local changes; another folder is never refused; require_clean refuses before a run."""
    repo, git = _scratch_repo(tmp_path)
    (repo / "docs" / "results").mkdir(parents=True)
    monkeypatch.setattr(provenance, "ROOT", repo)
    monkeypatch.setattr(provenance, "RESULTS_DIR", repo / "docs" / "results")
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    assert provenance.write_results("demo", {"rows": {"x": 1.0}}, _table, command="c").exists()
    (repo / "code.py").write_text("x = 1")
    (repo / "MANIFEST.json").write_text('{"new": 1}')
    with pytest.raises(provenance.DirtyTree, match=r"tracked files differ from HEAD: (MANIFEST.json, )?code.py") as exc:
        provenance.write_results("demo2", {"rows": {"x": 2.0}}, _table, command="c", own=(repo / "MANIFEST.json",))
    assert "MANIFEST.json" not in str(exc.value) and "\n" not in str(exc.value)
    assert not (repo / "docs" / "results" / "demo2.md").exists()
    assert json.loads((tmp_path / "tmp" / "workbench-refused" / "demo2.json").read_text())["data"] == {"rows": {"x": 2.0}}
    assert provenance.write_results("demo3", {"rows": {"x": 1.0}}, _table, command="c", folder=tmp_path / "other")
    with pytest.raises(provenance.DirtyTree, match="code.py"):
        provenance.require_clean()
    git("checkout", "code.py")
    provenance.require_clean(own=(repo / "MANIFEST.json",))


@pytest.mark.parametrize("page", [p.stem for p in sorted(provenance.RESULTS_DIR.glob("*.md"))])
def test_no_committed_page_was_written_from_a_tree_with_local_changes(page):
    """Every committed page's header names a commit, never one with local changes (issue 44 item 8)."""
    head = (provenance.RESULTS_DIR / f"{page}.md").read_text(encoding="utf-8").split("\n", 1)[0]
    assert "commit " in head and provenance.LOCAL_CHANGES not in head, head


def test_the_large_settles_extrapolated_hours_in_datasets_md_are_the_generator_pages_fit():
    """docs/datasets.md's estimate of a tolerance-solved 30,000-sphere settle is the series fit t = c n^p
    of docs/results/generate.json at n = LARGE_SPHERES, in hours to one decimal (issue 44 item 8)."""
    from problems.generator import LARGE_SPHERES

    record = provenance.RESULTS_DIR / "generate.json"
    if not record.exists():
        pytest.skip("docs/results/generate.json not committed")
    fit = json.loads(record.read_text())["data"]["series"]["fit"]
    hours = fit["c"] * LARGE_SPHERES ** fit["p"] / 3600
    text = " ".join((provenance.RESULTS_DIR.parent / "datasets.md").read_text().split())
    assert f"{LARGE_SPHERES:,}-sphere settle to tol 1e-6 extrapolates to about {hours:.1f} h" in text
