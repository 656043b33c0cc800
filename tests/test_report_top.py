"""The HTML report is read in a minute (issue 46): in headless Chromium at 1,400 x 900 px, the first
window shows the conclusions in plain sentences and one figure (the performance profile of time);
the accounting rule and the long tables are folded below, linked from the top."""

import re

from test_report import _render_in_chromium

from workbench.report.document import FOLD_ROWS


def test_the_top_of_the_page_is_the_conclusions_in_sentences_and_one_figure(report):
    out = report[1]
    page = _render_in_chromium(out / "index.html")
    top = page["top"]
    assert top["h2"] == "In short"
    sentences = [t for t in top["leads"] if re.search(r"^At equal accuracy, .*: time: .*; iterations: ", t)]
    assert sentences, top["leads"]
    assert any("planned runs recorded" in t and "the accounting rule" in t for t in top["leads"])
    src, img_top = top["img"]
    assert "profile-time" in src and 0 <= img_top < 900
    assert top["rule_folded"] is True
    assert top["table_top"] is None or top["table_top"] > img_top  # no table before the figure
    html = (out / "index.html").read_text()
    assert '<a href="#accounting-rule">' in html and '<a href="#conclusion">' in html
    # every table longer than FOLD_ROWS rows is folded, and nothing shorter
    for match in re.finditer(r"(<details id=\"table-\d+\"><summary>[^<]*</summary>(?:<p>.*?</p>)?\n?)?<table>(.*?)</table>",
                             html, re.S):
        rows = match.group(2).count("<tr>") - 1
        assert (match.group(1) is not None) == (rows > FOLD_ROWS), (rows, match.group(1))
