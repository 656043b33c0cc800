"""LCP2 of Anitescu and Hart 2003: one convex QP (15) with Gamma = 0 (section 4, Theorem 4.2).

The first iterate of LCP1 (workbench.solvers.lcp1, same compiled QP and solver choice). Its z
satisfies every condition of the LCP (6)-(7) except the normal one at active contacts: there
u_n = mu lambda instead of 0 (the pyramid analogue of the relaxed cone problem, Mazhar et al. 2014), which is
the normal-velocity error Anitescu and Hart 2003 reports in Table 1. The velocity error is bounded by
L ||mu Lambda(v*)||_inf (Theorem 4.2); configurations with a no-slip solution are solved exactly.
"""

from __future__ import annotations

from workbench.solvers.base import SolveOptions
from workbench.solvers.lcp1 import LCP1Solver


class LCP2Solver(LCP1Solver):
    name = "lcp2"
    summary = "Anitescu and Hart 2003 LCP2: one QP (15) with Gamma = 0 (approximate: u_n = mu lambda at active contacts)"

    def max_iter(self, options: SolveOptions) -> int:
        """One QP solve, whatever options.max_iter says."""
        return 1
