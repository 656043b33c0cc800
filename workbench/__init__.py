"""Frictional-contact workbench: the per-time-step problem of nonsmooth rigid multibody dynamics.

Notation follows the papers (Mazhar et al. 2014, Melanz et al.): M mass matrix, D contact Jacobian
(columns [n, u, w] per contact), k = M v + h f, b stabilisation term, N = D^T M^-1 D, r = b + D^T M^-1 k,
gamma the contact impulses.
"""

__version__ = "0.1.0"

from workbench.problem import TimeStepProblem  # noqa: E402

__all__ = ["TimeStepProblem", "__version__"]
