"""Vectorised text building shared by the text writers (CBF, LP, MPS, NL) and the provenance sidecar.

Numbers are written with ``repr`` (the shortest string that reads back to the same double), built
from numpy arrays with ``map`` and ``str.join`` (no Python loop over nonzeros).
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np

from workbench.errors import FileFormatError
from workbench.io.common import one_line

#: longest comment line written (CPLEX LP lines may not exceed 510 characters)
LINE_WIDTH = 200


def floats(values) -> list[str]:
    """Each value as its shortest exact decimal string."""
    return list(map(repr, np.asarray(values, dtype=float).ravel().tolist()))


def ints(values) -> list[str]:
    return list(map(str, np.asarray(values, dtype=np.int64).ravel().tolist()))


def prefixed(prefix: str, strings: Iterable[str]) -> list[str]:
    """``prefix + s`` for each string."""
    return list(map(prefix.__add__, strings))


def signed(values) -> list[str]:
    """'+ 1.5' / '- 2.0' terms, as LP files write coefficients."""
    v = np.asarray(values, dtype=float).ravel()
    return [s + a for s, a in zip(np.where(v < 0, "- ", "+ ").tolist(), floats(np.abs(v)))]


def join_columns(*columns: Iterable[str], sep: str = " ") -> list[str]:
    """Row-wise join of equally long string columns."""
    return list(map(sep.join, zip(*columns)))


def grouped(heads: list[str], counts: np.ndarray, body: list[str], tails: list[str] | None = None) -> list[str]:
    """Lines head_0, body[0:counts[0]], [tail_0], head_1, ... for consecutive groups of ``body``."""
    counts = np.asarray(counts, dtype=np.int64)
    per = counts + 1 + (tails is not None)
    ends = np.cumsum(per)
    out = np.empty(int(ends[-1]) if per.size else 0, dtype=object)
    head_pos = ends - per
    out[head_pos] = heads
    if tails is not None:
        out[ends - 1] = tails
    mask = np.ones(out.shape[0], dtype=bool)
    mask[head_pos] = False
    if tails is not None:
        mask[ends - 1] = False
    out[mask] = body
    return out.tolist()


def comments(header: Mapping[str, str], prefix: str) -> list[str]:
    """``prefix key: value`` lines, long values wrapped onto continuation lines."""
    lines = []
    for key, value in header.items():
        wrapped = textwrap.wrap(one_line(f"{key}: {value}"), LINE_WIDTH, break_long_words=False,
                                break_on_hyphens=False, subsequent_indent="    ")
        lines += [f"{prefix} {w}" for w in wrapped]
    return lines


def write_lines(path: os.PathLike | str, lines: Iterable[str]) -> Path:
    """Write the lines (newline-terminated) to ``path``; an OSError becomes a one-line FileFormatError."""
    p = Path(path)
    try:
        with open(p, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines))
            fh.write("\n")
    except OSError as exc:
        raise FileFormatError(one_line(f"{p}: cannot write the file: {exc.strerror or exc}")) from None
    return p


def sidecar(path: os.PathLike | str, header: Mapping[str, str]) -> Path:
    """``PATH.json`` next to a file whose format has no room for comments, holding the header."""
    p = Path(f"{path}.json")
    return write_lines(p, [json.dumps(dict(header), indent=1, ensure_ascii=False)])
