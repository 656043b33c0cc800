"""How many threads the compiled kernels use: chosen once per process, never more than the cores.

The in-house solvers' loops over contacts, the products with N and the metrics run on numba's thread
pool (workbench.blocks); BLAS and OpenMP stay at one thread (workbench.THREAD_ENV: their vector
operations are memory-bound and were slower threaded). The count, first match wins:

1. ``--threads N`` on the command line (solve, compare, run, simulate, generate);
2. the environment variable ``WORKBENCH_THREADS``;
3. the command's default: every core for one process (``solve``, ``compare``, ``simulate``,
   ``generate``), ``cores // jobs`` (at least 1) for each worker of ``run --jobs J``.

It is applied before numba loads, as numba's pool size (NUMBA_NUM_THREADS), so a worker's pool never
holds more threads than its share; once numba is loaded, ``numba.set_num_threads`` lowers it. A count
above the cores is lowered to the cores: threads beyond them only wait for each other. Results do
not depend on it (workbench.blocks): the count changes the speed, never an iterate.
"""

from __future__ import annotations

import contextlib
import os
import sys

from workbench.errors import InputError

__all__ = ["ENV", "cores", "per_worker", "from_env", "choose", "use", "limited", "in_use"]

ENV = "WORKBENCH_THREADS"


def cores() -> int:
    """The cores this process may run on (its affinity mask where the system has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:       # macOS, Windows
        return max(1, os.cpu_count() or 1)


def per_worker(jobs: int) -> int:
    """Threads of each of ``jobs`` processes sharing the cores: cores // jobs, at least 1."""
    return max(1, cores() // max(1, int(jobs)))


def from_env() -> int | None:
    """WORKBENCH_THREADS as a positive integer, None when unset; InputError when it is not one."""
    text = os.environ.get(ENV, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise InputError(f"{ENV}: expected a positive integer, got {text!r}")
    return int(text)


def choose(requested: int | None = None, jobs: int = 1) -> int:
    """The thread count of the module docstring: ``requested`` (--threads), else WORKBENCH_THREADS, else
    :func:`per_worker` (``jobs`` processes), at most :func:`cores`."""
    n = requested or from_env() or per_worker(jobs)
    return max(1, min(int(n), cores()))


def use(n: int) -> int:
    """Make ``n`` the thread count of this process and of the processes it starts (the environment);
    returns the count in force (lower when numba was loaded with a smaller pool)."""
    os.environ[ENV] = str(n)
    if "numba" not in sys.modules:
        os.environ["NUMBA_NUM_THREADS"] = str(n)
        return n
    import numba
    n = min(n, numba.config.NUMBA_NUM_THREADS)
    numba.set_num_threads(n)
    return n


@contextlib.contextmanager
def limited(n: int):
    """Run the block on min(n, the pool's size) threads (this thread's setting), then restore it."""
    import numba
    if int(n) < 1:
        raise InputError(f"threads must be a positive integer, got {n}")
    before = numba.get_num_threads()
    numba.set_num_threads(min(int(n), numba.config.NUMBA_NUM_THREADS))
    try:
        yield
    finally:
        numba.set_num_threads(before)


def in_use() -> int:
    """The thread count of the compiled kernels in this process (the calling thread's)."""
    if "numba" in sys.modules:
        import numba
        return numba.get_num_threads()
    return int(os.environ.get("NUMBA_NUM_THREADS") or cores())
