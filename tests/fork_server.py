"""Run many command lines of the workbench fast, each in its own process under memory and time caps.

    python tests/fork_server.py < cases.json > outcomes.json

Starting a fresh interpreter costs about a second of imports per command line, too much for
hundreds of fuzz cases on a CI machine of two cores. This server imports the workbench once
(commands, formulations, solvers, scenes, the study runner, the report; and it warms up the
methods the cases use, so no case compiles a kernel), then forks one child per case: the child
changes into the case's folder (its stdout and stderr go to the folder above), caps its address space at what the server has mapped plus
``memory_mb`` (RLIMIT_AS, inherited by any process it starts), runs ``workbench.cli.main(argv)`` as ``python -m workbench.cli`` would (an exception that
escapes prints its traceback and exits 1) and exits with its code. The server kills a child past
``timeout_s`` (a hang) and records, per case: the exit code or the signal, the wall time, the
child's peak resident memory beyond the server's at the fork, stdout and stderr.

Input: {"jobs": N, "memory_mb": M, "timeout_s": T, "warm": [[formulation, solver], ...],
"cases": [{"id": ..., "argv": [...], "cwd": DIR, "env": {...}}, ...]}; output: {id: outcome}.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time
import traceback


def _preload(warm) -> None:
    import workbench.cli
    import workbench.report  # noqa: F401
    import workbench.report.compare  # noqa: F401
    import workbench.study.problems  # noqa: F401
    import workbench.study.runner  # noqa: F401
    from workbench.method import Method
    workbench.cli.build_parser()  # imports every command module and the registries
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401  (simulate and the report draw)
    for formulation, solver in warm:
        Method(formulation, solver).warm_up()


def _rss_kb() -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))


def _mapped_bytes() -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmSize:")) * 1024


def _child(case: dict, memory_mb: float) -> None:
    """In the forked child: never returns."""
    code = 1
    try:
        os.setsid()  # its own process group: a kill reaches whatever it started
        os.chdir(case["cwd"])
        os.environ.update(case.get("env") or {})
        cap = _mapped_bytes() + int(memory_mb * 2**20)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        out = os.open(os.path.join("..", "stdout.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        err = os.open(os.path.join("..", "stderr.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, 1)
        os.dup2(err, 2)
        sys.argv = ["workbench", *case["argv"]]
        from workbench.cli import main
        code = main(case["argv"])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code if isinstance(code, int) else 1)


def _read(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read(200_000).decode("utf-8", "replace")
    except OSError:
        return ""


def serve(spec: dict) -> dict:
    _preload(spec.get("warm", []))
    base_rss = _rss_kb()
    pending = list(spec["cases"])
    running: dict[int, tuple[dict, float]] = {}
    outcomes = {}
    jobs, timeout = int(spec.get("jobs", 2)), float(spec["timeout_s"])
    while pending or running:
        while pending and len(running) < jobs:
            case = pending.pop(0)
            sys.stdout.flush()
            pid = os.fork()
            if pid == 0:
                _child(case, float(spec["memory_mb"]))
            running[pid] = (case, time.monotonic())
        pid, status, usage = os.wait4(-1, os.WNOHANG)
        if pid == 0:
            now = time.monotonic()
            for child, (case, started) in list(running.items()):
                if now - started > timeout:
                    try:
                        os.killpg(child, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    case["hung"] = True
            time.sleep(0.01)
            continue
        case, started = running.pop(pid)
        signalled = os.WIFSIGNALED(status)
        outcomes[case["id"]] = {
            "code": None if signalled else os.WEXITSTATUS(status),
            "signal": os.WTERMSIG(status) if signalled else None,
            "hung": bool(case.get("hung")),
            "seconds": time.monotonic() - started,
            "extra_rss_mb": max(0, usage.ru_maxrss - base_rss) / 1024,
            "stdout": _read(os.path.join(case["cwd"], "..", "stdout.txt")),
            "stderr": _read(os.path.join(case["cwd"], "..", "stderr.txt")),
        }
        try:  # a case's own process group, if anything of it outlived it
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    return outcomes


if __name__ == "__main__":
    request = json.load(sys.stdin)
    result = serve(request)
    sys.stdout.write(json.dumps(result))
