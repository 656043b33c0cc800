"""Frictional-contact workbench: the per-time-step problem of nonsmooth rigid multibody dynamics.

Notation follows the papers (Mazhar et al. 2014, Melanz et al.): M mass matrix, D contact Jacobian
(columns [n, u, w] per contact), k = M v + h f, b stabilisation term, N = D^T M^-1 D, r = b + D^T M^-1 k,
gamma the contact impulses.
"""

import os

from workbench.process_start import START_LOAD  # noqa: F401 - taken now, at the run's start
from workbench.kernel_cache import keep_true as _keep_true

__version__ = "0.1.0"

#: BLAS/OpenMP threads: one, unless the user's environment says otherwise. Set here, before numpy loads
#: (when the workbench is imported first: the CLI, the study workers), because the in-house solvers'
#: vector operations are memory-bound: on a loaded 2-core machine OpenBLAS's threads made each dot
#: product of 30,000 entries about 1.5 ms instead of 20 us, and BB 20x slower on a 10,000-contact
#: packing. The compiled kernels' threads are numba's and are chosen apart (workbench.threads):
#: WORKBENCH_THREADS, when set, becomes numba's pool size here, before numba loads.
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
for _name in THREAD_ENV:
    os.environ.setdefault(_name, "1")
#: numba's OpenMP pool sleeps at a barrier instead of spinning: on a loaded machine (more runnable
#: processes than cores) a spinning thread burns the time slice its partner needs to reach the barrier.
#: Measured 2026-11-28 at load 14 on 2 cores, APGD at 100,208 contacts: 2 threads 307-322 ms/iteration
#: spinning, 115-120 passive (1 thread: 133-161).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
_threads = os.environ.get("WORKBENCH_THREADS", "").strip()
if _threads.isdigit() and int(_threads) > 0:     # a bad value is reported by workbench.threads.from_env
    os.environ["NUMBA_NUM_THREADS"] = str(min(int(_threads), len(os.sched_getaffinity(0))
                                              if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))

# the compiled kernels' on-disk cache cleared when the sources changed since it was made (numba checks
# only each kernel's own file): before any kernel is loaded (workbench.kernel_cache)
_keep_true(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

__all__ = ["TimeStepProblem", "THREAD_ENV", "START_LOAD", "__version__"]


def __getattr__(name: str):
    """``workbench.TimeStepProblem`` on first use (PEP 562): importing the package alone (the command
    line's start, ``workbench --version``) must not load numpy, scipy and numba."""
    if name == "TimeStepProblem":
        from workbench.problem import TimeStepProblem
        return TimeStepProblem
    raise AttributeError(f"module 'workbench' has no attribute {name!r}")
