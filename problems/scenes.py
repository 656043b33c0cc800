"""Single time steps of the papers' small scenes, with analytic answers.

``rolling_ball_2d``: Melanz et al. 2015 section 3.1 (eqs. 41-47). A uniform sphere of radius 1 and mass 1 on
a horizontal plane, planar motion q = [x, y, theta], M = diag(1, 1, 2/5), one contact with normal y
and tangent x (d = 2), D = [[0, 1], [1, 0], [0, 1]] (columns [n, t]; the tangential slip velocity is
x' + R theta'), f = [0, -g, 0]. With h = 0.01, mu = 0.2, v0 = [2, 0, 0]: N = diag(1, 3.5),
r = [-0.0981, 2]. The exact (Coulomb) impulse of the first step is [g h, -mu g h] = [0.0981, -0.01962]
(sliding, full friction); the relaxed CCQO gives [0.43693, -0.087386] instead (the ball is launched:
u_n = mu ||u_t|| > 0).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from workbench.limits import fixed_work
from workbench.problem import TimeStepProblem

GRAVITY = 9.81


def rolling_ball_2d(h: float = 0.01, mu: float = 0.2, v0: float = 2.0, gap: float = 0.0) -> TimeStepProblem:
    """The first time step of the sliding-to-rolling ball (Melanz et al. 2015 section 3.1)."""
    M = sp.diags([1.0, 1.0, 0.4])
    D = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    v = np.array([v0, 0.0, 0.0])
    f = np.array([0.0, -GRAVITY, 0.0])
    return TimeStepProblem(M=M, D=D, k=M @ v + h * f, b=[gap / h, 0.0], mu=[mu], d=2, h=h,
                           name="rolling-ball-2d",
                           metadata={"scene": "rolling_ball_2d", "h": h, "mu": mu, "v0": v0,
                                     "reference": "Melanz et al. 2015 section 3.1"})


fixed_work(rolling_ball_2d, bodies=1, contacts=1)


def rolling_ball_2d_exact_impulse(h: float = 0.01, mu: float = 0.2) -> np.ndarray:
    """Analytic first-step impulse [g h, -mu g h] of :func:`rolling_ball_2d` while sliding."""
    return np.array([GRAVITY * h, -mu * GRAVITY * h])


def rolling_ball_2d_relaxed_impulse(h: float = 0.01, mu: float = 0.2, v0: float = 2.0) -> np.ndarray:
    """Analytic optimum of the relaxed CCQO for :func:`rolling_ball_2d` (on the cone boundary
    gamma_t = -mu gamma_n: minimise 1/2 (1 + 3.5 mu^2) g^2 - (g h - mu v0) g)."""
    gn = (GRAVITY * h + mu * v0) / (1.0 + 3.5 * mu * mu)
    return np.array([gn, -mu * gn])
