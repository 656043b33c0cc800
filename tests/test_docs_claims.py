"""Numbers in README.md and docs/ are the committed output of the commands that measured them
(workbench.provenance): a page, its raw data and every embedded copy agree, and changing one number
anywhere makes them disagree."""

import json
import shutil

from workbench import provenance


def _table(data):
    return "| a | b |\n|---|---|\n" + "".join(f"| {k} | {v:.3g} |\n" for k, v in data["rows"].items())


def test_committed_docs_agree_with_their_results():
    assert provenance.check_docs() == []


def test_a_changed_number_is_caught(tmp_path):
    root = tmp_path
    (root / "docs").mkdir()
    page = provenance.write_results("demo", {"rows": {"x": 1.25, "y": 0.5}}, _table, command="demo cmd",
                                    folder=root / "docs" / "results")
    body = page.read_text()
    assert "| x | 1.25 |" in body and "demo cmd" in body
    (root / "README.md").write_text(f"intro\n<!-- results: demo -->\n{body}<!-- end results: demo -->\n")
    assert provenance.check_docs(root) == []
    # a number typed into the embedded copy
    readme = (root / "README.md").read_text()
    (root / "README.md").write_text(readme.replace("| x | 1.25 |", "| x | 1.26 |"))
    assert any("embedded copy" in p for p in provenance.check_docs(root))
    (root / "README.md").write_text(readme)
    # a number changed in the page itself
    page.write_text(body.replace("| y | 0.5 |", "| y | 0.4 |"))
    assert any("differs from what its raw data renders" in p for p in provenance.check_docs(root))
    page.write_text(body)
    # a number changed in the raw data
    raw = root / "docs" / "results" / "demo.json"
    record = json.loads(raw.read_text())
    record["data"]["rows"]["x"] = 2.0
    raw.write_text(json.dumps(record))
    assert provenance.check_docs(root) != []


def test_a_renderer_of_a_command_run_as_a_module_is_found_again(tmp_path, monkeypatch):
    """``python -m workbench.study.conformance ... --results-page``: the renderer's module is __main__
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
