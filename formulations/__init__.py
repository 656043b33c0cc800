"""Formulations of the time-step problem, one per module, found through one registry.

Adding a formulation is one module and one line in ``FORMULATIONS``.
"""

from __future__ import annotations

import importlib

from workbench.errors import unknown

#: name -> "module:Class"
FORMULATIONS: dict[str, str] = {
    "primal": "formulations.relaxed_primal:RelaxedPrimal",
    "dual": "formulations.relaxed_dual:RelaxedDual",
    "anti-relaxed": "formulations.anti_relaxed:AntiRelaxed",
    "dual-fixed-point": "formulations.dual_fixed_point:DualFixedPoint",
    "primal-fixed-point": "formulations.primal_fixed_point:PrimalFixedPoint",
    "ncp": "formulations.ncp:NCP",
    "lcp-pyramid": "formulations.lcp_pyramid:LCPPyramid",
}


def get_formulation(name: str):
    """An instance of the formulation called ``name``."""
    try:
        target = FORMULATIONS[name]
    except KeyError:
        raise unknown("formulation", name, FORMULATIONS) from None
    module, cls = target.split(":")
    return getattr(importlib.import_module(module), cls)()


def list_formulations():
    """Instances of every registered formulation, in registry order."""
    return [get_formulation(n) for n in FORMULATIONS]
