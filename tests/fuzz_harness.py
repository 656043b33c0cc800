"""Runs many command lines of the workbench CLI quickly and safely, for the fuzz suites.

A case is ``{"id": str, "argv": [...]}``. :func:`run_cases` splits the cases into batches; each
batch runs in one child process (this file run as a script) under an address-space cap (RLIMIT_AS,
1 GiB: the CLI maps ~620 MB) that
calls ``workbench.cli.main(argv)`` for one case after another, with a per-case alarm, and reports
per case: the exit code main returned, what the case wrote on stderr (file descriptor 2 too, so that
a C library's messages count), the warnings raised, and the traceback of anything that escaped
main. Before each case the child says which case it starts, so when the child dies (a signal: a
native crash) or stops answering (a hang in compiled code that the alarm cannot interrupt), the
parent knows the case in flight: it runs that case alone in a fresh child to confirm it (heap
damage from an earlier case can kill a later one: when the case alone passes, the cases the batch
had finished are run alone too, to find the culprit) and goes on with the rest of the batch.

An outcome is a dict ``{"id", "code", "stderr", "warnings", "traceback", "seconds"}``; ``code`` is
main's exit code, or ``"signal N"`` (died on signal N), ``"hang"`` (no answer within the time
cap), ``"exception"`` (escaped main: ``traceback`` says what), ``"memory"`` (MemoryError).

A child's peak memory is what it says of itself (VmHWM, the high-water mark of its own address space
since exec), never the parent's ``wait4`` rusage: Linux keeps in ru_maxrss the resident pages a child
had between fork and exec, so a child forked from a pytest process that has grown to 560 MB "peaks"
at 560 MB whatever it does (tests/measured.py).
"""

from __future__ import annotations

import json
import os
import queue
import resource
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the address space of one child: the CLI with its libraries maps ~620 MB (of which ~200 MB resident),
#: so a case can allocate ~400 MB more before it gets a MemoryError (a failure of the case)
MEMORY_BYTES = 1 << 30
#: the resident memory a child may peak at (its peak RSS is the largest of any of its cases)
RSS_MB = 500
CASE_SECONDS = 10.0             # per case, measured by the child's alarm
START_SECONDS = 60.0            # the child's imports, on a loaded machine
#: one thread in every child, whatever an earlier in-process test left in os.environ (threads.use sets
#: WORKBENCH_THREADS, which the workbench's __init__ turns into numba's pool size over NUMBA_NUM_THREADS)
ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1",
       "WORKBENCH_THREADS": "1"}


# --------------------------------------------------------------------------- the child
class _Timeout(Exception):
    pass


def _own_peak_mb() -> float:
    """This process's resident high-water mark since exec [MB] (Linux /proc; 0 where there is none)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _child() -> None:
    import contextlib
    import io
    import signal
    import tempfile
    import time
    import traceback
    import warnings

    cases = json.loads(sys.stdin.read())
    report = os.fdopen(os.dup(1), "w")       # the protocol channel: fds 1 and 2 go to a file per case

    def alarm(signum, frame):
        raise _Timeout()

    signal.signal(signal.SIGALRM, alarm)
    from workbench.cli import main  # imported before the first case: the alarm times the case only
    for case in cases:
        report.write(json.dumps({"start": case["id"]}) + "\n")
        report.flush()
        code, tb = None, ""
        with tempfile.TemporaryFile() as sink, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            saved = os.dup(1), os.dup(2)
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            text_out, text_err = io.StringIO(), io.StringIO()
            t0 = time.perf_counter()
            try:
                with contextlib.redirect_stdout(text_out), contextlib.redirect_stderr(text_err):
                    signal.setitimer(signal.ITIMER_REAL, CASE_SECONDS)
                    try:
                        code = main(case["argv"])
                    finally:
                        signal.setitimer(signal.ITIMER_REAL, 0)
            except _Timeout:
                code = "hang"
            except MemoryError:
                code, tb = "memory", traceback.format_exc()
            except BaseException:  # noqa: BLE001 -- anything escaping main is the finding
                code, tb = "exception", traceback.format_exc()
            seconds = time.perf_counter() - t0
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            sink.seek(0)
            native = sink.read().decode("utf-8", errors="replace")
        report.write(json.dumps({"id": case["id"], "code": code, "stderr": text_err.getvalue() + native,
                                 "warnings": [str(w.message)[:300] for w in caught], "traceback": tb[-4000:],
                                 "seconds": seconds, "rss_mb": _own_peak_mb()}) + "\n")
        report.flush()


# --------------------------------------------------------------------------- the parent
def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))


def _spawn(cases: list[dict], env: dict) -> tuple[dict[str, dict], str | None, str, float]:
    """Run ``cases`` in one child. Returns (outcomes of the cases it finished, the case in flight
    when it died or hung or None, how it ended, its peak RSS in MB as it reported it after its last case)."""
    proc = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=ROOT, preexec_fn=_limit_memory, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout] + [lines.put(None)],
                     daemon=True).start()
    errors: list[str] = []
    threading.Thread(target=lambda: errors.append(proc.stderr.read()), daemon=True).start()
    proc.stdin.write(json.dumps(cases))
    proc.stdin.close()
    done: dict[str, dict] = {}
    inflight, ended, wait, peak = None, "", START_SECONDS, 0.0
    while True:
        try:
            line = lines.get(timeout=wait)
        except queue.Empty:
            proc.kill()
            ended = "hang"
            break
        if line is None:
            break
        message = json.loads(line)
        if "start" in message:
            inflight, wait = message["start"], CASE_SECONDS + 20.0
        else:
            peak = max(peak, message.pop("rss_mb"))
            done[message["id"]] = message
            inflight = None
    _, status = os.waitpid(proc.pid, 0)
    if not ended:
        ended = (f"signal {-os.waitstatus_to_exitcode(status)}" if os.WIFSIGNALED(status)
                 else f"child exit {os.waitstatus_to_exitcode(status)}: {''.join(errors)[-2000:]}")
    if inflight is None and len(done) < len(cases):   # died between cases (import failure)
        inflight = next(c["id"] for c in cases if c["id"] not in done)
    return done, inflight, ended, peak


def _run_batch(cases: list[dict], env: dict) -> tuple[dict[str, dict], float]:
    outcomes: dict[str, dict] = {}
    peak = 0.0
    pending = list(cases)
    while pending:
        done, inflight, ended, rss = _spawn(pending, env)
        peak = max(peak, rss)
        outcomes.update(done)
        if inflight is None:
            break
        case = next(c for c in pending if c["id"] == inflight)
        alone, again, ended_alone, rss = _spawn([case], env)
        peak = max(peak, rss)
        if again is None:
            outcomes.update(alone)
            # the case passes alone: a case finished earlier in the batch damaged the process
            for earlier in (c for c in pending if c["id"] in done):
                one, culprit, how, rss = _spawn([earlier], env)
                peak = max(peak, rss)
                if culprit is not None:
                    outcomes[earlier["id"]] = {"id": earlier["id"], "code": how, "stderr": "", "warnings": [],
                                               "traceback": "", "seconds": 0.0}
        else:
            outcomes[inflight] = {"id": inflight, "code": ended_alone, "stderr": "", "warnings": [],
                                  "traceback": "", "seconds": 0.0}
        pending = pending[pending.index(case) + 1:]
    return outcomes, peak


def run_cases(cases: list[dict], env: dict | None = None, workers: int | None = None) -> tuple[dict[str, dict], float]:
    """Every case's outcome (module docstring) and the largest peak RSS of a child, in MB; the cases
    run in ``workers`` batches side by side (default: the number of cores)."""
    from concurrent.futures import ThreadPoolExecutor

    full_env = dict(os.environ, **ENV, **(env or {}))
    full_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    workers = max(1, min(workers or os.cpu_count() or 2, len(cases)))
    batches = [cases[k::workers] for k in range(workers)]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(lambda batch: _run_batch(batch, full_env), batches))
    outcomes: dict[str, dict] = {}
    for one, _ in results:
        outcomes.update(one)
    return outcomes, max(peak for _, peak in results)


def problems(outcome: dict) -> list[str]:
    """What is wrong with one outcome: a code other than 0, 1, 2, a traceback, a warning, or for
    exit 2 anything but one line ``workbench: error: ...`` on stderr."""
    found = []
    if outcome["code"] not in (0, 1, 2):
        found.append(f"ended with {outcome['code']}: {outcome['traceback'][-1500:]}")
    if "Traceback" in outcome["stderr"]:
        found.append(f"traceback on stderr: {outcome['stderr'][-1500:]}")
    if outcome["warnings"]:
        found.append(f"warnings: {outcome['warnings']}")
    lines = outcome["stderr"].strip().splitlines()
    if outcome["code"] == 2 and (len(lines) != 1 or not lines[0].startswith("workbench: error: ")):
        found.append(f"exit 2 without exactly one error line: {outcome['stderr'][-1500:]!r}")
    if outcome["seconds"] > CASE_SECONDS:
        found.append(f"took {outcome['seconds']:.1f} s")
    return found


if __name__ == "__main__":
    _child()
