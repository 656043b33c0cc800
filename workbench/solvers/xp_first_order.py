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
with), mu, r, the shift a and Jacobi's step. Every vector of the iteration stays there, in buffers
allocated once per solve and updated in place (``out=`` products and in-place SpMV: no array of size n
is allocated per iteration by APGD's or Jacobi's step). The host reads scalars only at two points:

- APGD's step test (11) and restart test (27) need three sums every iteration (and again after each
  backtrack): one transfer, which is also the device synchronisation;
- the stopping measure (:func:`workbench.solvers.iterative.stopping_measure`: ||x||, ||u||, the
  natural map) is computed every ``check_every`` iterations only (:data:`CHECK_PARAM`): one transfer
  (two in the last iterations of a relaxed run, where the step-1 natural map is tested too). The
  clock, the best iterate, the caps and the history are handled at those checks; the anti-relaxation
  shift a(u) of inner runs, part of the iteration, is updated on the device every iteration.

Why checking every k iterations leaves the answer unchanged within the tolerance: the returned iterate
is one that passed the same stopping test as the CPU's (err <= tol, judged again on the host by
workbench.metrics), so the accuracy reached is the one asked; the run does at most k - 1 iterations
more than a test at every iteration would. Under a cap, the best iterate is the best of the checked
ones, the iteration cap is checked at its exact count, and a time limit is overrun by at most k
iterations. k = :data:`CHECK_EVERY` ["gpu"] (10) keeps that overrun a few per cent of the hundreds of
iterations of the problems the GPU is for, and removes 9 of every 10 measure transfers; on numpy and
whenever a history is kept (a row per iteration) k = 1, so the numpy path stops where the compiled
loop does.

GPU iterates differ from CPU ones by round-off: cuSPARSE and cuBLAS sum in another order than the
CPU's fixed blocks, so the iterates drift apart by round-off and a test near its threshold may flip
(a restart, a backtrack, the stop) an iteration earlier or later. The GPU target is therefore the same
relaxed error (<= tol, judged on the host) with iterations within :func:`iteration_margin` of the
CPU's, not the same iterates; the projection itself is bit-for-bit the CPU's (below).

The projection onto the friction cones: on numpy the compiled one of workbench.cones, in place; on CuPy
with d = 2 the three cases of :func:`workbench.cones.project_friction_cone` with ``where``; on CuPy
with d = 3 one CUDA kernel over contacts, in place, generated from the reference :func:`cone3` (:func:`cone3_source`, the same
operations in the same order as workbench.cones.project_contact_at, compiled without fused
multiply-adds so that it rounds as the CPU does). The tests execute the reference against
workbench.cones and compile the generated C source with the host's C compiler and run it there,
so the kernel's source is tested on the CPU; `python -m benchmarks.timing.bench_scale --device gpu --check`
runs it on a GPU.
"""

from __future__ import annotations

import ast
import inspect
import math
import textwrap
from functools import lru_cache
from math import sqrt
from typing import Any

import numpy as np

from workbench import metrics, threads
from workbench.cones import _project_rows
from workbench.errors import InputError
from workbench.params import Param
from workbench.problem import apply_operator, intermediate_length
from workbench.solvers.iterative import CHECK_UNIT_STEP, HOLDS, IterativeRun, ccp_rule, scaled_error, unit_step_holds

__all__ = ["DEVICES", "DEVICE_PARAM", "THREADS_PARAM", "CHECK_PARAM", "CHECK_EVERY", "OnDevice", "array_module",
           "device_availability", "iteration_margin", "cone3", "cone3_source", "apgd", "jacobi"]

DEVICES = ("cpu", "gpu", "numpy")
DEVICE_PARAM = Param("device", str, "cpu", "where the iterations run: cpu (compiled loop, threaded), gpu (CuPy, "
                     "an NVIDIA GPU), numpy (the GPU code on the host)", DEVICES)
THREADS_PARAM = Param("threads", int, None, "cpu: threads of the compiled loop, at most the process's (None: the "
                      "process's, workbench.threads); the iterates do not depend on it")
#: iterations between two stopping tests on the device, by device (module docstring: why 10 on the GPU)
CHECK_EVERY = {"gpu": 10, "numpy": 1}
CHECK_PARAM = Param("check_every", int, None, "gpu, numpy: iterations between two stopping tests on the device "
                    f"(None: {CHECK_EVERY['gpu']} on gpu, 1 on numpy; 1 whenever a history is kept)")
#: the GPU target's margin on iterations (:func:`iteration_margin`): this fraction of the CPU's count
#: for round-off's flips of the restart and step tests, plus the checking interval
ITERATION_MARGIN = 0.05
#: the name of the generated projection kernel, and threads per block of its launch
KERNEL_NAME, KERNEL_BLOCK = "workbench_project_cone3", 256


def iteration_margin(cpu_iterations: int, check_every: int = CHECK_EVERY["gpu"]) -> int:
    """How many iterations a GPU run may differ from the CPU's on the same problem and tolerance and
    still meet the GPU target (module docstring): ceil(ITERATION_MARGIN x the CPU's) + check_every - 1
    (the checking interval's overrun)."""
    return math.ceil(ITERATION_MARGIN * cpu_iterations) + check_every - 1


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


# --------------------------------------------------------------------------- the projection kernel

def cone3(x0, x1, x2, mu):
    """P onto K_mu of one contact [x0, x1, x2] (normal first): workbench.cones.project_contact_at with
    d = 3, the same operations in the same order. The reference the CUDA kernel is generated from
    (:func:`cone3_source`): straight-line float arithmetic, sqrt, and ifs that return the result."""
    s = sqrt(x1 * x1 + x2 * x2)
    if s <= mu * x0:
        return x0, x1, x2
    if mu * s <= -x0:
        return 0.0, 0.0, 0.0
    pn = (x0 + mu * s) / (1.0 + mu * mu)
    return pn, mu * pn / s * x1, mu * pn / s * x2


_C_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.USub, ast.LtE, ast.Lt, ast.GtE, ast.Gt)


def _c_expression(node: ast.expr, names: set[str]) -> str:
    """``node`` as C: its Python text, which for these nodes (names bound before, float constants,
    + - * /, unary minus, one comparison, sqrt) is C with the same precedence and order of operations."""
    for sub in ast.walk(node):
        ok = (isinstance(sub, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.Load, *_C_OPERATORS))
              or (isinstance(sub, ast.Name) and (sub.id in names or sub.id == "sqrt"))
              or (isinstance(sub, ast.Constant) and type(sub.value) is float)
              or (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "sqrt"
                  and len(sub.args) == 1 and not sub.keywords)
              or (isinstance(sub, ast.Compare) and len(sub.ops) == 1))
        if not ok or (isinstance(sub, ast.Compare) and len(sub.ops) != 1):
            raise ValueError(f"cone3_source: {ast.unparse(sub)!r} has no C translation here")
    return ast.unparse(node)


def _c_statements(body: list[ast.stmt], outputs: tuple[str, ...], names: set[str], indent: str) -> list[str]:
    lines = []
    for st in body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            lines.append(f"{indent}const double {st.targets[0].id} = {_c_expression(st.value, names)};")
            names.add(st.targets[0].id)
        elif isinstance(st, ast.If) and not st.orelse:
            lines.append(f"{indent}if ({_c_expression(st.test, names)}) {{")
            lines += _c_statements(st.body, outputs, set(names), indent + "    ")
            lines.append(f"{indent}}}")
        elif isinstance(st, ast.Return) and isinstance(st.value, ast.Tuple) and len(st.value.elts) == len(outputs):
            for out, value in zip(outputs, st.value.elts):
                if not (isinstance(value, ast.Name) and value.id == out.split("=")[0]):  # unchanged: no store
                    lines.append(f"{indent}{out.split('=')[1]} = {_c_expression(value, names)};")
            lines.append(f"{indent}return;")
        elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):  # the docstring
            continue
        else:
            raise ValueError(f"cone3_source: the statement {ast.unparse(st)!r} has no C translation here")
    return lines


def cone3_source(target: str = "cuda", reference=cone3, name: str = KERNEL_NAME) -> str:
    """C source of the projection of every contact of a flat (3 n_c,) array x, in place, generated from
    ``reference`` (:func:`cone3`): a function ``name``_contact(x, mu, o) with the reference's statements,
    and ``name``(mu, x, n_c) that applies it to contact i at offset 3 i: a CUDA kernel, a thread per
    contact (``target`` "cuda", for cupy.RawKernel), or a loop over contacts (``target`` "c", for the
    host's C compiler: how the tests run this source on the CPU)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(reference))).body[0]
    x0, x1, x2, mu = (a.arg for a in tree.args.args)
    outputs = (f"{x0}=x[o]", f"{x1}=x[o + 1]", f"{x2}=x[o + 2]")
    device = "__device__ " if target == "cuda" else ""
    lines = ["/* generated by workbench.solvers.xp_first_order.cone3_source from cone3: do not edit */",
             *([] if target == "cuda" else ["#include <math.h>"]),
             f"static {device}void {name}_contact(double* __restrict__ x, const double {mu}, const long long o) {{",
             f"    const double {x0} = x[o], {x1} = x[o + 1], {x2} = x[o + 2];",
             *_c_statements(tree.body, outputs, {x0, x1, x2, mu}, "    "), "}", ""]
    if target == "cuda":
        lines += [f'extern "C" __global__ void {name}(const double* __restrict__ mu, double* __restrict__ x, '
                  "const long long n_c) {",
                  "    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;",
                  f"    if (i < n_c) {name}_contact(x, mu[i], 3 * i);", "}"]
    elif target == "c":
        lines += [f"void {name}(const double* mu, double* x, const long long n_c) {{",
                  f"    for (long long i = 0; i < n_c; ++i) {name}_contact(x, mu[i], 3 * i);", "}"]
    else:
        raise ValueError(f"cone3_source: target is cuda or c, not {target!r}")
    return "\n".join(lines) + "\n"


@lru_cache(maxsize=None)
def _fused_projection():
    """The kernel of :func:`cone3_source` on CuPy, compiled without fused multiply-adds (--fmad=false:
    each product and sum rounded as on the CPU, so the projection is bit-for-bit workbench.cones')."""
    import cupy
    return cupy.RawKernel(cone3_source("cuda"), KERNEL_NAME, options=("--fmad=false",))


# --------------------------------------------------------------------------- the data on the device

class _Device:
    """The arrays of one solve on the device: the operator, mu, r_0, work buffers, and the helpers of the
    iterations (every helper writes into arrays it is given: nothing of size n allocated per call)."""

    def __init__(self, run: IterativeRun, xp):
        self.xp, self.run = xp, run
        self.gpu = xp is not np
        self.d, self.n = run.d, run.n
        self.m = run.n_c * run.d
        self.op = run.compiled_N
        a_ptr, a_idx, a_val, b_ptr, b_idx, b_val, chain = self.op
        if self.gpu:
            self.A = self._csr(a_ptr, a_idx, a_val, run.n)
            self.B = self._csr(b_ptr, b_idx, b_val, self.A.shape[0]) if chain else None
        self._tmp = xp.empty(intermediate_length(self.op) if not self.gpu else (self.A.shape[0] if chain else 0))
        self.mu = xp.asarray(run.mu, dtype=float)
        self.r0 = xp.asarray(run.r0, dtype=float)
        self._z, self._t = xp.empty(self.n), xp.empty(self.n)   # the natural map's work arrays
        self._kernel = _fused_projection() if self.gpu and self.d == 3 else None

    def _csr(self, indptr, indices, data, n_cols):
        import cupyx.scipy.sparse as csp
        xp = self.xp
        return csp.csr_matrix((xp.asarray(data), xp.asarray(indices), xp.asarray(indptr)),
                              shape=(indptr.shape[0] - 1, n_cols))

    def N_into(self, x, out):
        """out = N x: B (A x) or A x, the products of the compiled operator (row by row in CSR), in place
        (numpy: workbench.problem.apply_operator; CuPy: cuSPARSE's SpMV into ``out``)."""
        if not self.gpu:
            apply_operator(self.op, self._tmp, x, out)
            return out
        from cupyx import cusparse
        if self.B is None:
            return cusparse.spmv(self.A, x, y=out)
        return cusparse.spmv(self.B, cusparse.spmv(self.A, x, y=self._tmp), y=out)

    def empty(self):
        return self.xp.empty(self.n)

    def host(self, x) -> np.ndarray:
        return x.get() if self.gpu else np.array(x)

    def scalars(self, *values) -> list[float]:
        """Device scalars to Python floats in one transfer (the iteration's synchronisation)."""
        if self.gpu:
            return [float(v) for v in self.xp.stack(values).get()]
        return [float(v) for v in values]

    def project(self, x):
        """x <- P(x) onto K x R^{n_b}, in place: contacts onto their cones, joints free. numpy: the
        compiled projection of workbench.cones; CuPy: the generated kernel (d = 3, bit for bit the same),
        else the three cases with ``where`` (temporaries of size n_c: the GPU's d = 2 path)."""
        xp, d, m = self.xp, self.d, self.m
        if not self.gpu:                 # the CPU's projection, in place (the kernel's reference)
            return _project_rows(x, self.mu, d, x)
        if self._kernel is not None:
            n_c = m // 3
            self._kernel(((n_c + KERNEL_BLOCK - 1) // KERNEL_BLOCK,), (KERNEL_BLOCK,), (self.mu, x, np.int64(n_c)))
            return x
        c = x[:m].reshape(-1, d)
        xn, xt = c[:, 0], c[:, 1:]
        s = xp.sqrt(xp.sum(xt * xt, axis=1))
        mu = self.mu
        inside, polar = s <= mu * xn, mu * s <= -xn
        pn = (xn + mu * s) / (1.0 + mu * mu)
        factor = mu * pn / xp.where(s > 0, s, 1.0)
        new_t = xp.where(inside[:, None], xt, xp.where(polar[:, None], 0.0, factor[:, None] * xt))
        c[:, 0] = xp.where(inside, xn, xp.where(polar, 0.0, pn))
        c[:, 1:] = new_t
        return x

    def shift_into(self, u, a):
        """a_i = [mu_i ||u_t,i||, 0, 0] (the De Saxce shift, Melanz et al. 2015 eq. 28), in place."""
        c = u[:self.m].reshape(-1, self.d)
        a[:self.m:self.d] = self.mu * self.xp.sqrt(self.xp.sum(c[:, 1:] * c[:, 1:], axis=1))

    def natural_map(self, x, u, a, step):
        """x - P(x - step (u + a)), evaluated as workbench.metrics does, into a work array (returned)."""
        xp, z, t = self.xp, self._z, self._t
        xp.multiply(u, step, out=t)
        xp.subtract(x, t, out=z)
        xp.multiply(a, step, out=t)
        z -= t
        self.project(z)
        return xp.subtract(x, z, out=z)

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


# --------------------------------------------------------------------------- the iterations

class _Loop:
    """The bookkeeping shared by both methods: best iterate, history, caps (as IterativeRun.drive does), the
    stopping test every ``every`` iterations (module docstring)."""

    def __init__(self, dev: _Device, run: IterativeRun, device: str):
        self.dev, self.run, self.rec = dev, run, run.rec
        self.best, self.best_err, self.kept = dev.empty(), run.rec.best_err, False
        self.max_iter = -1 if run.rec.max_iter is None else run.rec.max_iter
        self.inner = run.mode == "inner"
        every = run.params.get("check_every")
        every = CHECK_EVERY[device] if every is None else int(every)
        if every < 1:
            raise InputError(f"check_every must be at least 1, got {every}")
        self.every = 1 if run.rec.keep else every
        run.info["check_every"] = self.every

    def account(self, x, u, a, k: int) -> bool:
        """One iteration done with iterate x, u = N x + r_0: at a check (every ``every`` iterations and at
        the iteration cap) measure, best iterate, history, caps (the clock read after the measure's
        transfer). Returns True when the run stops."""
        run, rec = self.run, self.rec
        run.k = k
        if k % self.every and k != self.max_iter:
            if self.inner:              # the shift a(u) is the algorithm's (lines 33-37): every iteration
                self.dev.shift_into(u, a)
            return False
        err, scale, converged = self.dev.measure(x, u, a, self.inner, run.measure_step, run.target)
        if err < self.best_err or converged:
            self.best[...] = x
            self.best_err, self.kept = err, True
        run.converged = converged
        if rec.keep:
            if self.inner:
                run.a[:] = self.dev.host(a)
            run._record(self.dev.host(x), self.dev.host(u), err, scale, rec.elapsed())
        if converged:
            return True
        run.stopped = rec.capped(k)
        return run.stopped is not None

    def finish(self) -> None:
        if self.kept:
            self.rec.best_x, self.rec.best_err = self.dev.host(self.best), self.best_err
        if self.inner:
            self.run.a[:] = self.dev.host(self._a)


def apgd(run: IterativeRun, x0: np.ndarray, device: str) -> None:
    """Melanz et al. 2015 algorithm 1, lines 1-37, as :func:`workbench.solvers.apgd._iterations`
    computes them (the same tests, products and order of operations), on ``device``; every vector in a
    buffer of this solve, updated in place (the products' roundings are those of the expressions in the
    comments)."""
    xp = array_module(device)
    dev = _Device(run, xp)
    loop = _Loop(dev, run, device)
    a = loop._a = xp.asarray(run.a, dtype=float)
    r0, N_into = dev.r0, dev.N_into
    gamma, N_gamma, new, N_new = xp.asarray(x0, dtype=float).copy(), dev.empty(), dev.empty(), dev.empty()
    y, N_y, g, u, work = dev.empty(), dev.empty(), dev.empty(), dev.empty(), dev.empty()
    r = r0 + a                                                                        # (1-5)
    N_into(gamma, N_gamma)
    y[...], N_y[...] = gamma, N_gamma
    xp.subtract(gamma, 1.0, out=work)                                                 # (6-7): diff = gamma - 1
    den, num = (float(v) for v in dev.scalars(xp.linalg.norm(work), xp.linalg.norm(N_into(work, u))))
    ratio = num / den if den > 0 else math.nan
    L = ratio if 0 < ratio < math.inf else metrics.lipschitz_start(run.problem, math.nan)
    theta, k, backtracks, restarts = 1.0, run.k, 0, 0

    def step(L: float) -> list[float]:
        """new = P(y - (1/L) (N y + r)), N new, and the terms of tests (11) and (27) in one transfer."""
        xp.add(N_y, r, out=g)                                                         # g = N y + r
        xp.multiply(g, 1.0 / L, out=new)
        xp.subtract(y, new, out=new)                                                  # (9-10)
        dev.project(new)
        N_into(new, N_new)
        xp.subtract(new, y, out=work)                                                 # delta = new - y
        xp.subtract(N_new, N_y, out=u)
        curvature, length = xp.dot(work, u), xp.dot(work, work)                      # delta^T (N new - N y)
        xp.subtract(new, gamma, out=u)
        return dev.scalars(curvature, length, xp.dot(g, u))                           # g^T (new - gamma)

    while True:
        curvature, length, g_step = step(L)
        while curvature > L * length:                                                 # (11)
            L *= 2.0                                                                  # (12-14)
            curvature, length, g_step = step(L)
            backtracks += 1
        theta_new = 0.5 * (-theta * theta + theta * math.sqrt(theta * theta + 4.0))   # (16)
        beta = theta * (1.0 - theta) / (theta * theta + theta_new)                    # (17)
        xp.subtract(new, gamma, out=y)                                                # (18): y = new + beta (new - gamma)
        y *= beta
        y += new
        xp.subtract(N_new, N_gamma, out=N_y)                                          # N y = N new + beta (N new - N gamma)
        N_y *= beta
        N_y += N_new
        xp.add(N_new, r0, out=u)                                                      # u = N new + r_0
        k += 1
        if loop.account(new, u, a, k):                                               # (19-26)
            break
        if g_step > 0:                                                                # (27-30)
            y[...], N_y[...], theta_new = new, N_new, 1.0
            restarts += 1
        L *= 0.9                                                                      # (31-32)
        if loop.inner:                                                                # (33-37)
            xp.add(r0, a, out=r)
        theta = theta_new
        gamma, new = new, gamma                                                       # gamma <- new (buffers swapped)
        N_gamma, N_new = N_new, N_gamma
    loop.finish()
    run.info.update(backtracks=run.info.get("backtracks", 0) + backtracks,
                    restarts=run.info.get("restarts", 0) + restarts, lipschitz=L, device=device)


def jacobi(run: IterativeRun, x0: np.ndarray, step: np.ndarray, device: str) -> None:
    """x <- P(x - step (N x + r_0 + a)) (workbench.solvers.jacobi), on ``device``, in place."""
    xp = array_module(device)
    dev = _Device(run, xp)
    loop = _Loop(dev, run, device)
    a = loop._a = xp.asarray(run.a, dtype=float)
    step = xp.asarray(step, dtype=float)
    x, u, work = xp.asarray(x0, dtype=float).copy(), dev.empty(), dev.empty()
    xp.add(dev.N_into(x, u), dev.r0, out=u)
    k = run.k
    while True:
        xp.add(u, a, out=work)                                                        # x - step (u + a)
        work *= step
        xp.subtract(x, work, out=x)
        dev.project(x)
        xp.add(dev.N_into(x, u), dev.r0, out=u)
        k += 1
        if loop.account(x, u, a, k):
            break
    loop.finish()
    run.info["device"] = device
