"""A report as a list of blocks, rendered twice from the same content: markdown and a standalone HTML
page (relative links to the figures and tables next to it, no scripts, no network)."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

import pandas as pd

__all__ = ["Heading", "Text", "Table", "Figure", "Code", "render_markdown", "render_html", "cell"]


@dataclass
class Heading:
    level: int
    text: str


@dataclass
class Text:
    text: str


@dataclass
class Table:
    """A table with its downloadable files (label -> relative path)."""
    frame: pd.DataFrame
    caption: str = ""
    files: dict[str, str] = field(default_factory=dict)


@dataclass
class Figure:
    path: str
    caption: str


@dataclass
class Code:
    text: str


def cell(x) -> str:
    """A value as a table shows it: 4 significant digits, '-' for missing."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if isinstance(x, float):
        return "inf" if math.isinf(x) else f"{x:.4g}"
    return str(x)


def _md_table(df: pd.DataFrame) -> str:
    header = [str(df.index.name or "")] + [str(c) for c in df.columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * len(df.columns)) + "|"]
    for idx, row in df.iterrows():
        cells = [cell(idx)] + [cell(v).replace("|", "\\|") for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _files_md(files: dict[str, str]) -> str:
    return " ".join(f"[{label}]({path})" for label, path in files.items())


def render_markdown(title: str, blocks: list) -> str:
    out = [f"# {title}", ""]
    for b in blocks:
        if isinstance(b, Heading):
            out += ["#" * (b.level + 1) + " " + b.text, ""]
        elif isinstance(b, Text):
            out += [b.text, ""]
        elif isinstance(b, Table):
            if b.caption:
                out += [b.caption + (" " + _files_md(b.files) if b.files else ""), ""]
            out += [_md_table(b.frame), ""]
        elif isinstance(b, Figure):
            out += [f"![{b.caption}]({b.path})", "", f"*{b.caption}*", ""]
        elif isinstance(b, Code):
            out += ["```", b.text.rstrip(), "```", ""]
    return "\n".join(out)


_CSS = """body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:0.5rem 0 1.5rem;font-size:0.9rem}
th,td{border:1px solid #ccc;padding:0.2rem 0.5rem;text-align:right}th:first-child,td:first-child{text-align:left}
th{background:#f3f3f3}figure{margin:1rem 0}img{max-width:100%;border:1px solid #eee}
figcaption{font-style:italic;font-size:0.9rem}pre{background:#f6f6f6;padding:0.8rem;overflow-x:auto}"""


def _html_table(df: pd.DataFrame) -> str:
    e = html.escape
    head = "".join(f"<th>{e(str(c))}</th>" for c in [df.index.name or ""] + list(df.columns))
    body = "".join("<tr>" + f"<td>{e(cell(idx))}</td>" + "".join(f"<td>{e(cell(v))}</td>" for v in row) + "</tr>"
                   for idx, row in df.iterrows())
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(title: str, blocks: list) -> str:
    e = html.escape
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', f"<title>{e(title)}</title>",
           f"<style>{_CSS}</style></head><body>", f"<h1>{e(title)}</h1>"]
    for b in blocks:
        if isinstance(b, Heading):
            out.append(f"<h{b.level + 1}>{e(b.text)}</h{b.level + 1}>")
        elif isinstance(b, Text):
            out.append(f"<p>{e(b.text)}</p>")
        elif isinstance(b, Table):
            links = " ".join(f'<a href="{e(p)}">{e(label)}</a>' for label, p in b.files.items())
            if b.caption or links:
                out.append(f"<p>{e(b.caption)} {links}</p>")
            out.append(_html_table(b.frame))
        elif isinstance(b, Figure):
            out.append(f'<figure><img src="{e(b.path)}" alt="{e(b.caption)}">'
                       f"<figcaption>{e(b.caption)}</figcaption></figure>")
        elif isinstance(b, Code):
            out.append(f"<pre>{e(b.text)}</pre>")
    out.append("</body></html>")
    return "\n".join(out)
