"""Where runs execute: a local pool of killable workers, or a Dask distributed cluster.

Both take tasks (plain dicts, see :mod:`workbench.study.runner`) and yield ``(task, result)`` as
runs finish, in completion order; the caller records each result at once. Every run goes through
:class:`~workbench.study.worker.WorkerProcess`, so its hard time limit holds everywhere: on a Dask
cluster each Dask worker keeps one such subprocess and the task waits on it.

Dask: ``--scheduler ADDR`` connects to a running cluster (start its workers with ``--nthreads 1``:
a Dask worker runs one solve at a time; problem files and the results directory must be on a file
system the workers share); without it a LocalCluster of ``jobs`` single-threaded worker processes
is started and closed again. What a cluster needs and what happens when workers are lost:
docs/studies.md, section Dask.
"""

from __future__ import annotations

import contextlib
import queue
import re
import socket
import threading
from typing import TYPE_CHECKING, Any, Iterator

from workbench.errors import InputError

if TYPE_CHECKING:  # imported where runs start: the command line's parser reads EXECUTORS without them
    from workbench.study.worker import WorkerProcess

__all__ = ["run_local", "run_dask", "check_scheduler", "reach_scheduler", "ClusterLost", "EXECUTORS"]

Task = dict[str, Any]


#: one GPU run at a time on this machine's device (the others queue): two would share its memory and
#: its time, and each one's seconds would measure the other
_GPU_LOCK = threading.Lock()


def on_gpu(task: Task) -> bool:
    """Whether the task's method runs on the GPU: its Method's answer (workbench.method.Method.device),
    given with the task when the run was planned."""
    return task.get("device") == "gpu"


def run_local(tasks: list[Task], jobs: int, log_path) -> Iterator[tuple[Task, dict]]:
    """Run ``tasks`` on ``jobs`` worker processes of this machine."""
    from workbench.study.worker import WorkerProcess, crash_result
    todo: queue.Queue = queue.Queue()
    for task in tasks:
        todo.put(task)
    done: queue.Queue = queue.Queue()
    stop = threading.Event()
    workers = [WorkerProcess(log_path, jobs=jobs) for _ in range(min(jobs, len(tasks)))]

    def slot(worker: WorkerProcess) -> None:
        try:
            while not stop.is_set():
                try:
                    task = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    with _GPU_LOCK if on_gpu(task) else contextlib.nullcontext():
                        result = worker.run(task, task["hard_limit"])
                except Exception as exc:  # never leave the consumer waiting for a lost run
                    result = crash_result(f"runner error: {type(exc).__name__}: {exc}")
                done.put((task, result))
        finally:
            worker.close()

    threads = [threading.Thread(target=slot, args=(w,), daemon=True) for w in workers]
    for t in threads:
        t.start()
    try:
        for _ in range(len(tasks)):
            while True:
                try:  # a timeout keeps the main thread responsive to Ctrl-C
                    yield done.get(timeout=0.5)
                    break
                except queue.Empty:
                    continue
    finally:
        stop.set()
        for w in workers:  # interrupted: runs in flight are abandoned (and redone on resume)
            w.interrupt()
        for t in threads:
            t.join()


# --------------------------------------------------------------------------- Dask

_DASK_WORKER: WorkerProcess | None = None
_DASK_LOCK = threading.Lock()


def _dask_task(task: Task) -> dict:
    """Executed on a Dask worker: the run, in that worker's killable subprocess."""
    from workbench.study.worker import WorkerProcess
    global _DASK_WORKER
    with _DASK_LOCK:
        if _DASK_WORKER is None:
            _DASK_WORKER = WorkerProcess(task["log"], jobs=task["jobs"])
        if not on_gpu(task):
            return _DASK_WORKER.run(task, task["hard_limit"])
        from dask.distributed import Lock
        with Lock(f"workbench-gpu-{socket.gethostname()}"):  # one GPU run at a time per machine
            return _DASK_WORKER.run(task, task["hard_limit"])


#: a scheduler address the workbench takes: tcp://HOST:PORT (or HOST:PORT), HOST a name, an IPv4 address
#: or a bracketed IPv6 one
_ADDRESS = re.compile(r"^(?:tcp://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]{1,253}):([0-9]{1,5})$")


def check_scheduler(address: str) -> str:
    """``address`` when it is a Dask scheduler address the workbench can reach (tcp://HOST:PORT, the
    port 1-65535); an InputError naming it otherwise. Other protocols are refused here, before Dask
    parses them (``ucx://`` needs UCX, ``tls://`` certificates the workbench does not pass, ``inproc://``
    is within one process), as are malformed addresses (``tcp://[::1`` made Dask raise a traceback)."""
    import ipaddress
    match = _ADDRESS.match(address) if isinstance(address, str) and len(address) <= 300 else None
    ok = match is not None and 1 <= int(match.group(2)) <= 65535
    if ok and match.group(1).startswith("["):
        try:
            ipaddress.IPv6Address(match.group(1)[1:-1])
        except ValueError:
            ok = False
    if not ok:
        from workbench.errors import printable
        raise InputError(f"--scheduler {printable(str(address)[:120])!r}: expected a Dask scheduler address "
                         "tcp://HOST:PORT (HOST a name, an IPv4 address or [an IPv6 one]; port 1-65535)")
    return address


def reach_scheduler(address: str, seconds: float = 3.0) -> str:
    """``address`` when something accepts a TCP connection there within ``seconds``; an InputError in
    one line otherwise, before anything is planned (Dask's own client would wait its whole timeout)."""
    match = _ADDRESS.match(address)
    host, port = (match.group(1).strip("[]"), int(match.group(2))) if match else (address, 0)
    try:
        socket.create_connection((host, port), timeout=seconds).close()
    except OSError as exc:
        why = ("connection refused" if isinstance(exc, ConnectionRefusedError) else
               f"no answer within {seconds:g} s" if isinstance(exc, TimeoutError) else
               " ".join((exc.strerror or str(exc)).split()).lower())
        raise InputError(f"cannot reach the Dask scheduler {address}: {why}; start it (docs/studies.md, Dask) or "
                         "check the address") from None
    return address


class ClusterLost(InputError):
    """No Dask worker for longer than the study waits: the study stops, resumable."""


def _no_workers_seconds() -> float:
    """How long a study waits with no Dask worker before it stops: ``WORKBENCH_DASK_NO_WORKERS``
    (seconds), else 60."""
    import os
    try:
        value = float(os.environ.get("WORKBENCH_DASK_NO_WORKERS", "60"))
    except ValueError:
        raise InputError(f"WORKBENCH_DASK_NO_WORKERS={os.environ['WORKBENCH_DASK_NO_WORKERS']!r}: expected "
                         "seconds (a positive number)") from None
    if not value > 0:
        raise InputError(f"WORKBENCH_DASK_NO_WORKERS={value:g}: expected a positive number of seconds")
    return value


#: seconds between two looks at the cluster's workers while runs are pending
_POLL = 1.0


def run_dask(tasks: list[Task], jobs: int, log_path, scheduler: str | None = None,
             no_workers_seconds: float | None = None) -> Iterator[tuple[Task, dict]]:
    """Run ``tasks`` on a Dask cluster (a LocalCluster of ``jobs`` processes when no scheduler): connects
    now (a scheduler that does not answer is an InputError here), then yields ``(task, result)`` as runs
    finish. A lost worker is one line on stderr naming the runs it had, which Dask runs again; a result
    is released once yielded, so a worker lost later makes Dask compute nothing recorded again; with
    no worker for ``no_workers_seconds`` (default :func:`_no_workers_seconds`) the stream stops with
    :class:`ClusterLost` (the runs recorded so far are kept; running the study again resumes)."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise InputError("--executor dask needs dask.distributed (pip install 'dask[distributed]')") from None
    wait_for = _no_workers_seconds() if no_workers_seconds is None else no_workers_seconds
    cluster = None
    if scheduler:
        reach_scheduler(check_scheduler(scheduler))
    try:
        if scheduler:
            client = Client(scheduler, timeout=10)
        else:
            cluster = LocalCluster(n_workers=min(jobs, len(tasks)) or 1, threads_per_worker=1, processes=True, host="127.0.0.1",
                                   dashboard_address=None)
            client = Client(cluster)
    except (OSError, ValueError, TypeError) as exc:  # refused, unreachable, or a reply Dask cannot parse
        raise InputError(f"cannot reach the Dask scheduler {scheduler}: {' '.join(str(exc).split())[:200]}") from None
    return _stream(client, cluster, tasks, jobs, log_path, scheduler or "the local cluster", wait_for)


def _stream(client, cluster, tasks: list[Task], jobs: int, log_path, where: str,
            wait_for: float) -> Iterator[tuple[Task, dict]]:
    """The results of ``tasks`` on ``client``'s cluster, as :func:`run_dask` describes; closes the client."""
    import sys
    import time

    from dask.distributed import wait

    from workbench.study.worker import crash_result
    try:
        futures = {client.submit(_dask_task, {**task, "log": str(log_path), "jobs": jobs}, key=f"run-{task['key']}"): task
                   for task in tasks}
        workers = set(client.scheduler_info()["workers"])
        running: dict[str, list[str]] = {}
        alone_since = None if workers else time.monotonic()
        done_count = 0
        while futures:
            try:
                done, _ = wait(list(futures), timeout=_POLL, return_when="FIRST_COMPLETED")
            except TimeoutError:
                done = set()
            for future in done:
                task = futures.pop(future)
                try:
                    result = future.result()
                except Exception as exc:  # the Dask worker itself was lost too often (KilledWorker, ...)
                    result = crash_result(f"Dask task failed: {type(exc).__name__}: {exc}")
                future.release()  # recorded: a worker lost later must not make Dask compute it again
                done_count += 1
                yield task, result
            now = set(client.scheduler_info()["workers"])
            pending = {f.key for f in futures}
            for worker in sorted(workers - now):
                again = sorted(k for k in running.get(worker, []) if k in pending)
                print(f"dask: worker {worker} lost; {len(again)} run(s) assigned to it re-queued"
                      + (f": {', '.join(again[:5])}{' ...' if len(again) > 5 else ''}" if again else "")
                      + f"; {len(now)} worker(s) left", file=sys.stderr, flush=True)
            workers = now
            running = {w: list(keys) for w, keys in client.processing().items()} if futures else {}
            if workers or not futures:
                alone_since = None
            elif alone_since is None:
                alone_since = time.monotonic()
            elif time.monotonic() - alone_since > wait_for:
                raise ClusterLost(f"dask: no worker at {where} for {wait_for:g} s; stopped with {done_count} run(s) "
                                  f"recorded and {len(futures)} not run: start workers and run the same command "
                                  "again to resume (WORKBENCH_DASK_NO_WORKERS sets the wait)")
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


EXECUTORS = ("local", "dask")
