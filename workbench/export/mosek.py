"""MOSEK's own formats, ``.ptf`` (text) and ``.task`` (binary), written by the mosek package.

The model goes through the CBF writer (workbench.export.cbf) into a MOSEK Task with
``Task.readdata``, which then writes the requested format with ``Task.writedata``: the file holds the
same problem as the CBF export, with MOSEK's names added (variables as in the LP/MPS exports, g0_n,
g0_t1, ... / y0, u0_n, ...; affine conic constraints cone0, cone1, ... then the linear-row blocks
and ``epigraph``; the task is named after the problem and formulation).

Licensing (mosek 11.2, checked): creating a Task, reading and writing files needs no licence; only
``optimize`` does. The .ptf gets the model's header as ``#`` comment lines after its ``Task`` line
(MOSEK's PTF reader skips comments there but rejects them before ``Task``); the binary .task cannot
hold comments, so its header goes to ``PATH.json``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from formulations.qp import ConicQP
from workbench.errors import FileFormatError, UnsupportedError
from workbench.export import cbf
from workbench.export.model import file_header
from workbench.export.text import comments, one_line, sidecar, write_lines


def write(model: ConicQP, path: os.PathLike | str) -> list[Path]:
    """Write ``model`` as a MOSEK task file, the format chosen by the suffix (.ptf or .task)."""
    try:
        import mosek
    except ImportError:
        raise UnsupportedError("MOSEK formats need the mosek Python package (pip install mosek; "
                               "writing files needs no licence)") from None
    p = Path(path)
    header = file_header(model, p.suffix.lstrip(".") or "task")
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "model.cbf"
        write_lines(source, cbf.cbf_lines(model))
        try:
            with mosek.Task() as task:
                task.readdata(str(source))
                task.puttaskname(f"{model.problem.name or 'problem'} {model.formulation}")
                for j, name in enumerate(model.names.tolist()):
                    task.putvarname(j, name)
                task.putvarname(model.n, "t_epigraph")
                for i, name in enumerate(model.cone_names.tolist()):
                    task.putaccname(i, name)
                task.putaccname(task.getnumacc() - 1, "epigraph")
                task.writedata(str(p))
        except mosek.Error as exc:
            raise FileFormatError(one_line(f"{p}: MOSEK could not write the file: {exc}")) from None
    if p.suffix.lower() == ".ptf":
        # MOSEK's PTF reader takes comments only after the Task line (it rejects them before it)
        body = p.read_text(encoding="utf-8").splitlines()
        return [write_lines(p, body[:1] + comments(header, "    #") + body[1:])]
    return [p, sidecar(p, header)]
