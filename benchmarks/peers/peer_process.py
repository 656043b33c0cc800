"""The Siconos process of benchmarks.peers.bench_peers: benchmarks/peers/siconos_peer.py under the system interpreter,
kept running across requests (its imports and first calls are paid once, outside every timed interval),
ending itself when a solve runs past its time limit (and killed if it does not answer at all), and
started again for the next request."""

from __future__ import annotations

import json
import os
import select
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from workbench.solvers.siconos import SICONOS_PYTHON

SCRIPT = Path(__file__).with_name("siconos_peer.py")
PLAIN = Path(__file__).with_name("siconos_plain.py")
#: seconds allowed for reading a problem and the untimed first solve (the script's own limit)
READ_SECONDS = 120.0
#: Siconos's iteration cap (the time limit is what stops a slow method)
MAX_ITER = 100_000


class SiconosProcess:
    """One long-lived ``siconos_peer.py serve``; :meth:`solve` sends a request and waits for its answer."""

    def __init__(self, python: str = SICONOS_PYTHON):
        self.python = python
        self.proc: subprocess.Popen | None = None
        self.buffer = b""
        self.tmp = tempfile.TemporaryDirectory(prefix="bench_peers_")
        self.restarts = 0

    def _start(self) -> None:
        self.proc = subprocess.Popen([self.python, "-I", str(SCRIPT), "serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.buffer = b""

    def _readline(self, timeout: float) -> str | None:
        """The next line of the process's output; None after ``timeout`` seconds or when it died."""
        end = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            left = end - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode()

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
            self.restarts += 1

    def close(self) -> None:
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
            self.proc = None
        self.tmp.cleanup()

    def request(self, req: dict, timeout: float) -> str | None:
        if self.proc is None:
            self._start()
        self.proc.stdin.write((json.dumps(req) + "\n").encode())
        self.proc.stdin.flush()
        return self._readline(timeout)

    def methods(self) -> dict[str, list[str]]:
        line = self.request({"op": "methods"}, READ_SECONDS)
        if line is None:
            raise RuntimeError(f"{self.python} {SCRIPT.name} gave no list of methods")
        return json.loads(line)

    def solve(self, path: str, problem, method: str, tol: float, time_limit: float, warm: bool,
              inner: int = 1) -> dict:
        """Siconos's solve of the file ``path`` (``problem``: the workbench's reading of it, for its kind,
        dimension and dof count) by ``method``, after an untimed short solve when ``warm``, ``inner`` times
        (medians of the times): its answer
        (info, iterations, error, solver_s, call_s, r) or {"status": "timeout" | "crash ..." | "error: ..."}
        when it ran past ``time_limit``, its process died or Siconos raised."""
        out = os.path.join(self.tmp.name, "out.npz")
        req = {"path": path, "kind": problem.kind, "d": problem.d, "n_dof": problem.n_dof or 0, "method": method,
               "tol": tol, "max_iter": MAX_ITER, "out": out, "warm": warm, "time_limit": time_limit,
               "inner": inner}
        line = self.request(req, 2 * READ_SECONDS + time_limit)
        if line is None:
            try:
                code = self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = None
            self.kill()
            return {"status": "timeout" if code in (1, None) else f"crash (exit {code})"}
        answer = json.loads(line)
        if "failure" in answer:
            return {"status": f"error: {answer['failure']}"}
        answer["r"] = np.load(out)["r"]
        return answer


def plain(path: str, method: str, repetitions: int, python: str = SICONOS_PYTHON, timeout: float = 300.0) -> dict:
    """benchmarks/peers/siconos_plain.py's answer (median, min, max, info) for ``path`` and ``method``."""
    proc = subprocess.run([python, "-I", str(PLAIN), path, method, str(repetitions)], capture_output=True,
                          text=True, timeout=timeout, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])
