"""APGD and projected Jacobi on an array module ``xp``: numpy on the host, CuPy on an NVIDIA GPU.

One vectorised implementation of the iterations of :mod:`workbench.solvers.apgd` (Melanz et al. 2015
section 2.3: adaptive step, backtracking, restart, relaxed and anti-relaxed) and of
:mod:`workbench.solvers.jacobi` (the per-contact scaled step), written against the array module passed
in: with ``xp = numpy`` it runs in CI, where no GPU exists, and is tested against the compiled solvers
(the same iterates to round-off at equal iterations, tests/test_xp_first_order.py); with ``xp = cupy``
the same lines run on the device. The solver parameter ``device`` chooses (:data:`DEVICE_PARAM`):
"cpu" (default) is the compiled, threaded loop, "gpu" this code on CuPy, "numpy" this code on the host.

What runs where. The data go to the device once per solve: N as the CSR arrays of the compiled operator
(global problems with a diagonal M: A = M^-1 C and B = C^T, N x = B (A x), never N itself; local
problems: W, or its symmetric part for a relaxed non-symmetric W, as the compiled solvers iterate
with), mu, r, the shift a and Jacobi's step. Every vector of the iteration stays there; per iteration
a handful of scalars come back (the sums of the step test, the restart test and the stopping measure:
one transfer each), which is also the device synchronisation at which the clock is read, so time
limits hold. The best iterate comes back once, at the end (and every iterate with a history), and
the workbench judges it on the host with the same metrics as every other solver.

The projection onto the friction cones is vectorised over contacts (the three cases of
:func:`workbench.cones.project_friction_cone` with ``where``); on CuPy with d = 3 it is one fused
element-wise kernel over contacts instead of about fifteen array operations, each a pass over memory.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from workbench import metrics, threads
from workbench.params import Param
from workbench.solvers.iterative import CHECK_UNIT_STEP, HOLDS, IterativeRun, ccp_rule, scaled_error, unit_step_holds

__all__ = ["DEVICES", "DEVICE_PARAM", "THREADS_PARAM", "OnDevice", "array_module", "device_availability", "apgd", "jacobi"]

DEVICES = ("cpu", "gpu", "numpy")
DEVICE_PARAM = Param("device", str, "cpu", "where the iterations run: cpu (compiled loop, threaded), gpu (CuPy, "
                     "an NVIDIA GPU), numpy (the GPU code on the host)", DEVICES)
THREADS_PARAM = Param("threads", int, None, "cpu: threads of the compiled loop, at most the process's (None: the "
                      "process's, workbench.threads); the iterates do not depend on it")


@lru_cache(maxsize=None)
def device_availability(device: str) -> tuple[bool, str]:
    """(True, "") or (False, why not): "gpu" needs CuPy and a CUDA device."""
    if device != "gpu":
        return True, ""
    try:
        import cupy
    except Exception as exc:  # noqa: BLE001 - ImportError, or a CUDA library that fails to load
        return False, f"CuPy is not installed or does not load (pip install -e '.[gpu]'): {type(exc).__name__}"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - no driver, no device
        return False, f"no CUDA device: {' '.join(str(exc).split())}"
    return (True, "") if count > 0 else (False, "no CUDA device")


def array_module(device: str):
    """numpy for "numpy" (and "cpu"), cupy for "gpu"."""
    if device == "gpu":
        import cupy
        return cupy
    return np


class OnDevice:
    """What a solver with :data:`DEVICE_PARAM` and :data:`THREADS_PARAM` adds: availability and a name
    suffix that depend on the device, and a solve on fewer threads than the process has."""

    def solve(self, model, options):
        n = options.params.get("threads")
        if n is None:
            return super().solve(model, options)
        with threads.limited(n):
            return super().solve(model, options)

    def availability_for(self, params: dict[str, Any]) -> tuple[bool, str]:
        ok, why = self.availability()
        return device_availability(params.get("device", "cpu")) if ok else (ok, why)

    def variant(self, params: dict[str, Any]) -> str:
        device = params.get("device", "cpu")
        return "" if device == "cpu" else f"[{device}]"

    def device(self, params: dict[str, Any]) -> str:
        """"gpu" for the device gpu; cpu and numpy (the GPU code on the host) run in this process."""
        return "gpu" if params.get("device") == "gpu" else "cpu"


# --------------------------------------------------------------------------- the data on the device

class _Device:
    """The arrays of one solve on the device: the operator, mu, r_0, and the helpers of the iterations."""

    def __init__(self, run: IterativeRun, xp):
        self.xp, self.run = xp, run
        self.gpu = xp is not np
        self.d, self.n = run.d, run.n
        self.m = run.n_c * run.d
        a_ptr, a_idx, a_val, b_ptr, b_idx, b_val, chain = run.compiled_N
        self.A = self._csr(a_ptr, a_idx, a_val, run.n)
        self.B = self._csr(b_ptr, b_idx, b_val, self.A.shape[0]) if chain else None
        self.mu = xp.asarray(run.mu, dtype=float)
        self.r0 = xp.asarray(run.r0, dtype=float)
        self._kernel = _fused_projection() if self.gpu and self.d == 3 else None

    def _csr(self, indptr, indices, data, n_cols):
        if self.gpu:
            import cupyx.scipy.sparse as csp
            xp = self.xp
            return csp.csr_matrix((xp.asarray(data), xp.asarray(indices), xp.asarray(indptr)),
                                  shape=(indptr.shape[0] - 1, n_cols))
        import scipy.sparse as sp
        return sp.csr_matrix((data, indices, indptr), shape=(indptr.shape[0] - 1, n_cols))

    def N(self, x):
        """N x: B (A x) or A x, the products of the compiled operator (row by row in CSR)."""
        return self.A @ x if self.B is None else self.B @ (self.A @ x)

    def host(self, x) -> np.ndarray:
        return x.get() if self.gpu else np.array(x)

    def scalars(self, *values) -> list[float]:
        """Device scalars to Python floats in one transfer (the iteration's synchronisation)."""
        if self.gpu:
            return [float(v) for v in self.xp.stack(values).get()]
        return [float(v) for v in values]

    def project(self, x):
        """P onto K x R^{n_b} of x (a new array): contacts onto their cones, joints free."""
        xp, d, m = self.xp, self.d, self.m
        out = x.copy()
        if self._kernel is not None:
            self._kernel(self.mu, out[:m])
            return out
        c = x[:m].reshape(-1, d)
        xn, xt = c[:, 0], c[:, 1:]
        s = xp.sqrt(xp.sum(xt * xt, axis=1))
        mu = self.mu
        inside, polar = s <= mu * xn, mu * s <= -xn
        pn = (xn + mu * s) / (1.0 + mu * mu)
        factor = mu * pn / xp.where(s > 0, s, 1.0)
        oc = out[:m].reshape(-1, d)
        oc[:, 0] = xp.where(inside, xn, xp.where(polar, 0.0, pn))
        oc[:, 1:] = xp.where(inside[:, None], xt, xp.where(polar[:, None], 0.0, factor[:, None] * xt))
        return out

    def shift_into(self, u, a):
        """a_i = [mu_i ||u_t,i||, 0, 0] (the De Saxce shift, Melanz et al. 2015 eq. 28), in place."""
        c = u[:self.m].reshape(-1, self.d)
        a[:self.m:self.d] = self.mu * self.xp.sqrt(self.xp.sum(c[:, 1:] * c[:, 1:], axis=1))

    def natural_map(self, x, u, a, step):
        """x - P(x - step (u + a)), evaluated as workbench.metrics does."""
        z = x - step * u
        z -= step * a
        return x - self.project(z)

    def measure(self, x, u, a, inner: bool, step: float, target: float):
        """(err, scale, converged) of :func:`workbench.solvers.iterative.stopping_measure` on the device."""
        xp, run = self.xp, self.run
        if inner:
            self.shift_into(u, a)
        g = self.natural_map(x, u, a, step)
        err, scale = scaled_error(*self.scalars(xp.dot(x, x), xp.dot(u, u), xp.dot(g, g)), run.norm_r0, step)
        rule = ccp_rule(err, scale, inner, target)
        if rule != CHECK_UNIT_STEP:
            return err, scale, rule == HOLDS
        g = self.natural_map(x, u, a, 1.0)
        return err, scale, unit_step_holds(self.scalars(xp.dot(g, g))[0], scale, target)


@lru_cache(maxsize=None)
def _fused_projection():
    """P onto K_mu for every contact of a flat (3 n_c,) array, in place: one CuPy kernel over contacts
    (the three cases of workbench.cones.project_contact_at)."""
    import cupy
    return cupy.ElementwiseKernel(
        "float64 mu", "raw float64 x",
        """
        const ptrdiff_t o = 3 * i;
        const double x0 = x[o], x1 = x[o + 1], x2 = x[o + 2];
        const double s = sqrt(x1 * x1 + x2 * x2);
        if (s <= mu * x0) {
        } else if (mu * s <= -x0) {
            x[o] = 0.0; x[o + 1] = 0.0; x[o + 2] = 0.0;
        } else {
            const double pn = (x0 + mu * s) / (1.0 + mu * mu);
            x[o] = pn; x[o + 1] = mu * pn / s * x1; x[o + 2] = mu * pn / s * x2;
        }
        """, "workbench_project_cone3")


# --------------------------------------------------------------------------- the iterations

class _Loop:
    """The bookkeeping shared by both methods: best iterate, history, caps (as IterativeRun.drive does)."""

    def __init__(self, dev: _Device, run: IterativeRun):
        self.dev, self.run, self.rec = dev, run, run.rec
        self.best, self.best_err = None, run.rec.best_err
        self.max_iter = -1 if run.rec.max_iter is None else run.rec.max_iter
        self.inner = run.mode == "inner"

    def account(self, x, u, a, k: int) -> bool:
        """One iteration done with iterate x, u = N x + r_0: measure, best iterate, history, caps (the
        clock read after the measure's transfer). Returns True when the run stops."""
        run, rec = self.run, self.rec
        err, scale, converged = self.dev.measure(x, u, a, self.inner, run.measure_step, run.target)
        if err < self.best_err or converged:
            self.best, self.best_err = x.copy(), err
        run.k, run.converged = k, converged
        if rec.keep:
            if self.inner:
                run.a[:] = self.dev.host(a)
            run._record(self.dev.host(x), self.dev.host(u), err, scale, rec.elapsed())
        if converged:
            return True
        run.stopped = rec.capped(k)
        return run.stopped is not None

    def finish(self) -> None:
        if self.best is not None:
            self.rec.best_x, self.rec.best_err = self.dev.host(self.best), self.best_err
        if self.inner:
            self.run.a[:] = self.dev.host(self._a)


def apgd(run: IterativeRun, x0: np.ndarray, device: str) -> None:
    """Melanz et al. 2015 algorithm 1, lines 1-37, as :func:`workbench.solvers.apgd._iterations`
    computes them (the same tests, products and order of operations), on ``device``."""
    xp = array_module(device)
    dev = _Device(run, xp)
    loop = _Loop(dev, run)
    a = loop._a = xp.asarray(run.a, dtype=float)
    r0, N = dev.r0, dev.N
    gamma = xp.asarray(x0, dtype=float)
    r = r0 + a                                                                        # (1-5)
    N_gamma = N(gamma)
    y, N_y = gamma.copy(), N_gamma.copy()
    diff = gamma - 1.0                                                                # (6-7)
    den, num = (float(v) for v in dev.scalars(xp.linalg.norm(diff), xp.linalg.norm(N(diff))))
    ratio = num / den if den > 0 else math.nan
    L = ratio if 0 < ratio < math.inf else metrics.lipschitz_start(run.problem, math.nan)
    theta, k, backtracks, restarts = 1.0, run.k, 0, 0
    while True:
        new = dev.project(y - (1.0 / L) * (N_y + r))                                  # (9-10)
        N_new = N(new)
        curvature, length, g_step = _test_terms(dev, new, y, gamma, N_new, N_y, r)
        while curvature > L * length:                                                 # (11)
            L *= 2.0                                                                  # (12-14)
            new = dev.project(y - (1.0 / L) * (N_y + r))
            N_new = N(new)
            curvature, length, g_step = _test_terms(dev, new, y, gamma, N_new, N_y, r)
            backtracks += 1
        theta_new = 0.5 * (-theta * theta + theta * math.sqrt(theta * theta + 4.0))   # (16)
        beta = theta * (1.0 - theta) / (theta * theta + theta_new)                    # (17)
        y = new + beta * (new - gamma)                                                # (18)
        N_y = N_new + beta * (N_new - N_gamma)
        u = N_new + r0
        k += 1
        if loop.account(new, u, a, k):                                               # (19-26)
            break
        if g_step > 0:                                                                # (27-30)
            y, N_y, theta_new = new, N_new, 1.0
            restarts += 1
        L *= 0.9                                                                      # (31-32)
        if loop.inner:                                                                # (33-37)
            r = r0 + a
        theta = theta_new
        gamma, N_gamma = new, N_new
    loop.finish()
    run.info.update(backtracks=run.info.get("backtracks", 0) + backtracks,
                    restarts=run.info.get("restarts", 0) + restarts, lipschitz=L, device=device)


def _test_terms(dev: _Device, new, y, gamma, N_new, N_y, r) -> list[float]:
    """delta^T (N new - N y), delta^T delta (delta = new - y) and g^T (new - gamma): tests (11), (27)."""
    xp = dev.xp
    delta = new - y
    return dev.scalars(xp.dot(delta, N_new - N_y), xp.dot(delta, delta), xp.dot(N_y + r, new - gamma))


def jacobi(run: IterativeRun, x0: np.ndarray, step: np.ndarray, device: str) -> None:
    """x <- P(x - step (N x + r_0 + a)) (workbench.solvers.jacobi), on ``device``."""
    xp = array_module(device)
    dev = _Device(run, xp)
    loop = _Loop(dev, run)
    a = loop._a = xp.asarray(run.a, dtype=float)
    step = xp.asarray(step, dtype=float)
    x = xp.asarray(x0, dtype=float)
    u = dev.N(x) + dev.r0
    k = run.k
    while True:
        x = dev.project(x - step * (u + a))
        u = dev.N(x) + dev.r0
        k += 1
        if loop.account(x, u, a, k):
            break
    loop.finish()
    run.info["device"] = device
