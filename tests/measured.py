"""Run a command in a child whose peak memory is its own.

On Linux a child's ru_maxrss counts the resident pages it had between fork and exec: forked from a
pytest process that has grown to hundreds of MB, any child "peaks" there. So the command is started
by a small launcher (a fresh interpreter, forked from pytest but never measured), which forks and
execs the command from its own small image and reports the command's own wait4 rusage.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile

#: the launcher: waits for the command with wait4 (its own rusage), kills its process group past the timeout
_LAUNCHER = """
import json, os, subprocess, sys, time
argv, cwd, timeout = json.loads(sys.argv[1])
proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=sys.stderr, start_new_session=True)
deadline = time.monotonic() + timeout
while True:
    pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
    if pid:
        break
    if time.monotonic() > deadline:
        os.killpg(proc.pid, 9)
        os.wait4(proc.pid, 0)
        print(json.dumps({"hang": True}), flush=True)
        sys.exit(0)
    time.sleep(0.01)
print(json.dumps({"code": os.waitstatus_to_exitcode(status), "cpu": usage.ru_utime + usage.ru_stime,
                  "rss_mb": usage.ru_maxrss / 1024, "hang": False}), flush=True)
"""


def run_measured(argv: list[str], cwd, env: dict | None = None, timeout: float = 120.0) -> dict:
    """Run ``argv``: {"code", "stderr", "cpu" [s], "rss_mb", "hang"} of the command alone."""
    with tempfile.TemporaryFile() as err:
        out = subprocess.run([sys.executable, "-c", _LAUNCHER, json.dumps([argv, str(cwd), timeout])],
                             stdout=subprocess.PIPE, stderr=err, env=env, timeout=timeout + 60, check=True)
        err.seek(0)
        result = json.loads(out.stdout.decode().strip().splitlines()[-1])
        result["stderr"] = err.read().decode("utf-8", errors="replace")
    return result
