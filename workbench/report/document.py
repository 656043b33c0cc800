"""A report as a list of blocks, rendered twice from the same content: markdown (tables through
pandas, text columns left-aligned, numbers right-aligned) and a standalone HTML page (a table of
contents, relative links to the figures and tables next to it, no scripts, no network; laid out to
fit a 1,400 px window without horizontal scrolling). The HTML page is read in a minute: the accounting
rule and every table longer than :data:`FOLD_ROWS` rows are folded (``<details>``, opened by a click,
each with an anchor the page links to), so the conclusions and their figure come first."""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

__all__ = ["Heading", "Text", "Lead", "Table", "Figure", "Code", "render_markdown", "render_html", "write_pages", "cell",
           "spread", "numeric_column", "FOLD_ROWS", "RULE_ANCHOR"]

#: tables with more rows than this are folded in the HTML page (their caption stays in sight)
FOLD_ROWS = 8
#: the anchor of the folded accounting rule (the page's lead links to it)
RULE_ANCHOR = "accounting-rule"


@dataclass
class Heading:
    level: int
    text: str


@dataclass
class Text:
    text: str


@dataclass
class Lead(Text):
    """A sentence of the page's opening, shown a little larger in HTML, with links (label -> anchor or
    relative path) after it."""
    links: dict[str, str] = field(default_factory=dict)


@dataclass
class Table:
    """A table (cells already formatted, see :func:`cell`) with its files (label -> relative path)."""
    frame: pd.DataFrame
    caption: str = ""
    files: dict[str, str] = field(default_factory=dict)


@dataclass
class Figure:
    """A figure: its PNG (shown) and other formats (linked)."""
    path: str
    caption: str
    others: dict[str, str] = field(default_factory=dict)


@dataclass
class Code:
    text: str


def cell(x) -> str:
    """A value as a table shows it: 4 significant digits (whole numbers below a million in full),
    '-' for missing."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if isinstance(x, float):
        if math.isinf(x):
            return "inf"
        return str(int(x)) if x.is_integer() and abs(x) < 1e6 else f"{x:.4g}"
    return str(x)


def spread(median, low, high) -> str:
    """'median (low-high)', or the median alone when the spread is nil or unknown."""
    if median is None or (isinstance(median, float) and math.isnan(median)):
        return "-"
    if low is None or high is None or (isinstance(low, float) and math.isnan(low)) or cell(low) == cell(high):
        return cell(median)
    return f"{cell(median)} ({cell(low)}–{cell(high)})"


_NUMBER = re.compile(r"^(-|[-+]?(\d[\d.]*(e[-+]?\d+)?|inf)( \(.*\))?)$")


def numeric_column(values) -> bool:
    """Whether a column shows numbers (right-aligned) rather than text (left-aligned)."""
    shown = [cell(v) for v in values]
    return bool(shown) and all(_NUMBER.match(s) for s in shown) and any(s != "-" for s in shown)


def _display(df: pd.DataFrame) -> pd.DataFrame:
    out = df.map(cell) if len(df.columns) else df.copy()
    out.index = [cell(i) for i in df.index]
    out.index.name = df.index.name
    return out


def _slug(text: str) -> str:
    """A heading's anchor as GitHub makes it (so the markdown's table of contents links work there too)."""
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


_MD_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "[": "\\[", "]": "\\]", "`": "\\`", "|": "\\|"}


def _md(text) -> str:
    """Text as markdown shows it literally: no raw HTML (``<script>``, ``<img onerror>`` become
    entities), no links, images or code spans made by the data, no table cell broken by ``|``, on one
    line. Names, descriptions and messages in a report come from study files and results folders
    that may be someone else's."""
    return "".join(_MD_ESCAPES.get(c, c) for c in " ".join(str(text).split()))


def _md_table(df: pd.DataFrame) -> str:
    align = ["left"] + ["right" if numeric_column(df[c]) else "left" for c in df.columns]
    shown = _display(df).map(_md)
    shown.columns = [_md(c) for c in shown.columns]
    shown.index = [_md(i) for i in shown.index]
    shown.index.name = None if df.index.name is None else _md(df.index.name)
    return shown.to_markdown(colalign=align, index=True)


def _link_target(path: str) -> str:
    """A relative link the report made (figures/..., tables/...), with the characters that would end a
    markdown link target percent-encoded."""
    from urllib.parse import quote
    return quote(path, safe="/._-")


def _files_md(files: dict[str, str]) -> str:
    return " ".join(f"[{_md(label)}]({_link_target(path)})" for label, path in files.items())


def _fence(text: str) -> str:
    """A code fence longer than any run of backticks in ``text``, so the text cannot close it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _toc(blocks: list) -> list[Heading]:
    return [b for b in blocks if isinstance(b, Heading) and b.level == 1]


def render_markdown(title: str, blocks: list) -> str:
    out = [f"# {_md(title)}", "",
           "Contents: " + " · ".join(f"[{_md(h.text)}](#{_slug(h.text)})" for h in _toc(blocks)), ""]
    for b in blocks:
        if isinstance(b, Heading):
            out += ["#" * (b.level + 1) + " " + _md(b.text), ""]
        elif isinstance(b, Lead):
            out += [(_md(b.text) + " " + " ".join(f"[{_md(k)}]({_link_target(v)})" for k, v in b.links.items())).strip(),
                    ""]
        elif isinstance(b, Text):
            out += [_md(b.text), ""]
        elif isinstance(b, Table):
            if b.caption or b.files:
                out += [(_md(b.caption) + " " + _files_md(b.files)).strip(), ""]
            out += [_md_table(b.frame), ""]
        elif isinstance(b, Figure):
            out += [f"![{_md(b.caption)}]({_link_target(b.path)})", "",
                    f"*{_md(b.caption)}* {_files_md(b.others)}".rstrip(), ""]
        elif isinstance(b, Code):
            fence = _fence(b.text)
            out += [fence, b.text.rstrip(), fence, ""]
    return "\n".join(out)


_CSS = """body{font-family:system-ui,sans-serif;max-width:80rem;margin:1.5rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:0.5rem 0 1.5rem;font-size:0.85rem;max-width:100%}
th,td{border:1px solid #ccc;padding:0.2rem 0.45rem;vertical-align:top;overflow-wrap:anywhere}
td.n,th.n{text-align:right}td.t,th.t{text-align:left}td small{color:#555;white-space:nowrap}
th{background:#f3f3f3;overflow-wrap:normal}figure{margin:1rem 0}img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-style:italic;font-size:0.9rem}pre{background:#f6f6f6;padding:0.8rem;white-space:pre-wrap;
overflow-wrap:anywhere}nav{background:#f8f8f8;padding:0.5rem 1rem;border:1px solid #e3e3e3}
p.rule{border-left:4px solid #888;padding-left:0.8rem}details{margin:0.5rem 0 1rem}
summary{cursor:pointer;color:#035}p.lead{font-size:1.05rem}"""


def _html_cell(text: str, tag: str, cls: str) -> str:
    e = html.escape
    m = re.match(r"^(.*) (\(.*\))$", text) if cls == "n" else None
    inner = f"{e(m.group(1))}<br><small>{e(m.group(2))}</small>" if m else e(text)
    return f'<{tag} class="{cls}">{inner}</{tag}>'


def _html_table(df: pd.DataFrame) -> str:
    classes = ["t"] + ["n" if numeric_column(df[c]) else "t" for c in df.columns]
    shown = _display(df)
    head = "".join(_html_cell(str(c), "th", k) for c, k in zip([df.index.name or ""] + list(df.columns), classes))
    body = "".join("<tr>" + "".join(_html_cell(v, "td", k) for v, k in zip([idx, *row], classes)) + "</tr>"
                   for idx, row in zip(shown.index, shown.itertuples(index=False)))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(title: str, blocks: list) -> str:
    e = html.escape
    toc = "".join(f'<a href="#{_slug(h.text)}">{e(h.text)}</a> · ' for h in _toc(blocks)).rstrip(" · ")
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">', f"<title>{e(title)}</title>",
           f"<style>{_CSS}</style></head><body>", f"<h1>{e(title)}</h1>", f"<nav>Contents: {toc}</nav>"]
    tables = 0
    for b in blocks:
        if isinstance(b, Heading):
            out.append(f'<h{b.level + 1} id="{_slug(b.text)}">{e(b.text)}</h{b.level + 1}>')
        elif isinstance(b, Text) and b.text.startswith("Accounting rule"):
            out.append(f'<details id="{RULE_ANCHOR}"><summary>Accounting rule: how every number here is counted '
                       f'</summary><p class="rule">{e(b.text)}</p></details>')
        elif isinstance(b, Lead):
            links = " ".join(f'<a href="{e(v)}">{e(k)}</a>' for k, v in b.links.items())
            out.append(f'<p class="lead">{e(b.text)} {links}</p>'.replace(" </p>", "</p>"))
        elif isinstance(b, Text):
            out.append(f"<p>{e(b.text)}</p>")
        elif isinstance(b, Table):
            links = " ".join(f'<a href="{e(p)}">{e(label)}</a>' for label, p in b.files.items())
            folded = len(b.frame) > FOLD_ROWS
            if folded:
                tables += 1
                out.append(f'<details id="table-{tables}"><summary>{e(b.caption)} ({len(b.frame)} rows)</summary>'
                           + (f"<p>{links}</p>" if links else ""))
            elif b.caption or links:
                out.append(f"<p>{e(b.caption)} {links}</p>")
            out.append(_html_table(b.frame) + ("</details>" if folded else ""))
        elif isinstance(b, Figure):
            links = " ".join(f'<a href="{e(p)}">{e(label)}</a>' for label, p in b.others.items())
            out.append(f'<figure><img src="{e(b.path)}" alt="{e(b.caption)}">'
                       f"<figcaption>{e(b.caption)} {links}</figcaption></figure>")
        elif isinstance(b, Code):
            out.append(f"<pre>{e(b.text)}</pre>")
    out.append("</body></html>")
    return "\n".join(out)


def write_pages(out: Path, title: str, blocks: list) -> Path:
    """Write ``out/index.md`` and ``out/index.html`` (atomically); the path of index.html."""
    from workbench.files import atomic_output
    for name, render in (("index.md", render_markdown), ("index.html", render_html)):
        with atomic_output(out / name) as tmp:
            tmp.write_text(render(title, blocks), encoding="utf-8")
    return out / "index.html"
