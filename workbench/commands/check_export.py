"""``workbench check-export``: solve an exported model file with an independent solver at its default
settings and print how far its optimum is from the workbench's.

    workbench check-export FILE PROBLEM

FILE is a model file ``workbench export PROBLEM FILE -f FORMULATION`` wrote (``.cbf``, ``.lp``, ``.mps``),
PROBLEM the problem it was written from. The file is read by a reader that is not the workbench's writer
(:mod:`workbench.export.readers`): a CBF file by a parser written from the CBF specification, an LP or MPS
file by HiGHS's reader (highspy; pyramid models only: HiGHS takes no quadratic constraints, so a cone
model's LP/MPS file is refused, and its ``.cbf`` export checked instead); either model is solved by
Clarabel at its default settings. The file's optimum is mapped back with the file's own header
(``objective: formulation objective = S * (file objective) + O``) to the optimal relaxed dual objective
[J], and compared with the workbench's, found apart from the file (:func:`reference`, as
``python -m benchmarks.timing.bench_export --readers`` does). Exit code 0 when they agree within
:data:`RTOL` relative, 1 when not (or the reader did not solve it), 2 bad input.
"""

from __future__ import annotations

import re
from pathlib import Path

from workbench.commands._args import EXIT_NOT_SOLVED
from workbench.commands.solve import PROBLEM_HELP
from workbench.errors import InputError, printable

__all__ = ["RTOL", "reference", "dual_value", "file_map"]

#: agreement asked of an independent reader: relative distance of the mapped optimum from the workbench's
RTOL = 1e-6
#: the formats this command reads, and the reader of each
READ = {"cbf": "Clarabel (CBF parsed from the specification)", "lp": "HiGHS's reader, then Clarabel",
        "mps": "HiGHS's reader, then Clarabel"}
_MAP = re.compile(r"formulation objective = ([-+0-9.eE]+) \* \(file objective\) \+ ([-+0-9.eE]+)")
_FORMULATION = re.compile(r"^\W*\s*formulation: ([a-z-]+):", re.M)


def file_map(path: Path) -> tuple[str, float, float]:
    """(formulation, S, O) from the file's header: formulation objective = S * (file objective) + O."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            head = fh.read(1 << 16)  # the header is the file's first lines
    except OSError as exc:
        raise InputError(f"{printable(path)}: cannot read it ({exc.strerror or exc})") from None
    formulation, scale = _FORMULATION.search(head), _MAP.search(head)
    if not (formulation and scale):
        raise InputError(f"{printable(path)}: no workbench export header (its 'formulation:' and 'objective:' lines); "
                         "give a file written by workbench export")
    return formulation.group(1), float(scale.group(1)), float(scale.group(2))


def dual_value(formulation: str, scale: float, offset: float, file_optimum: float) -> float:
    """The optimal dual objective [J] a file optimum stands for, by the header's map: a dual's objective is
    ``scale * value + offset``; a primal's 1/2 w^T M w = ``scale * value`` is minus the dual objective
    (strong duality; the primal's constant term aside)."""
    if formulation.endswith("primal"):
        return -scale * file_optimum
    return scale * file_optimum + offset


def reference(problem, family: str) -> tuple[float, str]:
    """(the workbench's optimal dual objective for a formulation family, how it was found), accurate to
    far below RTOL: "cone": the relaxed dual by the workbench's ipm at tol 1e-10 (its judged relaxed error
    at most 1e-8); "pyramid": the pyramid primal QP (15) of Anitescu and Hart 2003 through the workbench's
    cvxpy model by Clarabel at tolerances 1e-11 (status optimal), the negated primal optimum."""
    if family == "cone":
        from workbench.method import solve
        from workbench.solvers import SolveOptions
        res = solve(problem, "dual", "ipm", SolveOptions(tol=1e-10))
        if res.nu is None or not res.metrics.get("judged_error", 1.0) <= 1e-8:
            raise RuntimeError(f"{problem.name}: the reference dual solve did not converge ({res.status})")
        return float(res.metrics["dual_objective"]), f"ipm, tol 1e-10 (relaxed error {res.metrics['judged_error']:.1e})"
    import cvxpy as cp

    from formulations.lcp_pyramid import describe_primal
    from formulations.qp import to_cvxpy
    from workbench.export.model import export_scale
    qp = describe_primal(problem, scaled=export_scale(problem))
    form = to_cvxpy(qp)
    form.problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11, max_iter=400)
    if form.problem.status != "optimal":
        raise RuntimeError(f"{problem.name}: the reference pyramid solve ended {form.problem.status}")
    return -float(form.problem.value) * qp.objective_scale, "pyramid primal by Clarabel through cvxpy, tolerances 1e-11"


def cmd_check_export(args) -> int:
    import importlib.util

    from workbench.export import format_from_path
    from workbench.export.readers import clarabel_cbf, highs_clarabel
    from workbench.sources import load

    path = Path(args.file)
    if not path.is_file():
        raise InputError(f"FILE {printable(path)}: {'a folder, not a file' if path.is_dir() else 'no such file'}")
    fmt = format_from_path(path)
    if fmt not in READ:
        raise InputError(f"FILE {printable(path)}: a .{fmt} file; check-export reads {', '.join('.' + f for f in READ)}")
    formulation, scale, offset = file_map(path)
    pyramid = formulation.startswith("lcp-")
    if fmt != "cbf":
        if not pyramid:
            raise InputError(f"FILE {printable(path)}: an {fmt.upper()} file of the {formulation} model has quadratic "
                             "constraints, which HiGHS's reader does not take: export it as .cbf and check that")
        if importlib.util.find_spec("highspy") is None:
            raise InputError("reading LP/MPS files needs HiGHS's reader: pip install highspy (or the extra [test])")
    problem = load(args.problem)
    reading = clarabel_cbf(path) if fmt == "cbf" else highs_clarabel(path)
    optimum, how = reference(problem, "pyramid" if pyramid else "cone")
    print(f"{path.name}: {formulation} model, read by {READ[fmt]} at its default settings: {reading.status} "
          f"in {reading.seconds:.2f} s")
    print(f"workbench optimum (relaxed dual objective, {how}): {optimum:.12g} J")
    if reading.value is None:
        print(f"the reader did not solve the file ({reading.status}): no optimum to compare")
        return EXIT_NOT_SOLVED
    mapped = dual_value(formulation, scale, offset, reading.value)
    gap = abs(mapped - optimum)
    rel = gap / abs(optimum) if optimum else gap
    print(f"file optimum mapped back with its header: {mapped:.12g} J")
    print(f"difference: {gap:.2e} J, {rel:.2e} relative: {'within' if rel <= RTOL else 'NOT within'} {RTOL:g}")
    return 0 if rel <= RTOL else EXIT_NOT_SOLVED


def register(sub) -> None:
    s = sub.add_parser("check-export", help="solve an exported model file with an independent solver at its "
                                            "defaults and print its distance from the workbench's optimum")
    s.add_argument("file", metavar="FILE", help="a .cbf, .lp or .mps file written by workbench export")
    s.add_argument("problem", metavar="PROBLEM", help="the problem it was written from; " + PROBLEM_HELP)
    s.set_defaults(func=cmd_check_export)
