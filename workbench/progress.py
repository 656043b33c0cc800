"""Progress of a long command on stderr, so that no phase is silent for more than a few seconds.

On a terminal, a tqdm bar that a heartbeat thread refreshes even while one step takes long (its
elapsed time keeps moving); elsewhere (a pipe, a log file, CI) a plain line every :data:`PERIOD`
seconds, ``LABEL: DONE/TOTAL UNIT, now WHAT, ELAPSED s``, also from the heartbeat, so a step that
compiles or settles for minutes still prints. Off (``enabled=False``: ``--quiet``, ``--no-progress``)
it prints nothing but what :meth:`Progress.write` is given.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import TextIO

from workbench.errors import printable

__all__ = ["Progress", "PERIOD"]


def _period() -> float:
    """Seconds between plain lines: ``WORKBENCH_PROGRESS_SECONDS`` (a positive number), else 5."""
    try:
        value = float(os.environ.get("WORKBENCH_PROGRESS_SECONDS", "5"))
    except ValueError:
        return 5.0
    return value if 0.05 <= value <= 3600 else 5.0


#: seconds between two progress lines when nothing else was printed
PERIOD = _period()
#: when any Progress last printed (a line or a bar refresh): an outer phase's heartbeat stays quiet
#: while an inner one speaks
_LAST = [time.monotonic()]
#: the Progress objects open now, oldest first: an outer phase stays silent while one opened inside it is
#: open, so that the inner one's counted lines ("study: 3/12 runs") are what a reader sees
_OPEN: list = []


class Progress:
    """A counted phase (``total`` steps of ``unit``; None: uncounted) shown as described above.

    Use as a context manager; :meth:`update` counts steps, :meth:`doing` names the step under way,
    :meth:`write` prints a line of the command's own without breaking the bar. ``bar=False``: plain
    lines only, also on a terminal (an outer phase around inner bars: it speaks only when they are
    silent, as every heartbeat does while any other Progress printed within the period)."""

    def __init__(self, label: str, total: int | None = None, unit: str = "step", *, initial: int = 0,
                 enabled: bool = True, stream: TextIO | None = None, period: float | None = None, bar: bool = True):
        # a label may be a user's name (a study's): printed escaped, as every name that reaches a terminal
        self.label, self.total, self.unit, self.done = printable(label), total, unit, initial
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.period = PERIOD if period is None else period
        self.what = ""
        self.start = self.last = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._bar = None
        tty = bar and enabled and getattr(self.stream, "isatty", lambda: False)()
        if tty:
            from tqdm import tqdm
            self._bar = tqdm(total=total, initial=initial, desc=self.label, unit=unit, file=self.stream, leave=False,
                             dynamic_ncols=True)
        self._thread = None
        if enabled:
            _OPEN.append(self)
            self._thread = threading.Thread(target=self._beat, daemon=True, name=f"progress {label}")
            self._thread.start()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _line(self) -> str:
        parts = [f"{self.done}/{self.total} {self.unit}s" if self.total is not None else
                 f"{self.done} {self.unit}s" if self.done else "", self.what,
                 f"{time.monotonic() - self.start:.0f} s"]
        return f"{self.label}: " + ", ".join(p for p in parts if p)

    def _beat(self) -> None:
        while not self._stop.wait(min(self.period, 1.0) if self._bar is not None else self.period / 4):
            with self._lock:
                if self._bar is not None:
                    self._bar.refresh()
                    _LAST[0] = time.monotonic()
                elif _OPEN and _OPEN[-1] is not self and self in _OPEN:
                    continue    # an inner Progress is open: it speaks for both
                elif time.monotonic() - max(self.last, _LAST[0]) >= self.period:
                    self._print(self._line())

    def _print(self, line: str) -> None:
        try:
            print(line, file=self.stream, flush=True)
        except (OSError, ValueError):  # a closed pipe: nothing more can reach it
            self._stop.set()
        self.last = _LAST[0] = time.monotonic()

    def update(self, n: int = 1, postfix: str | None = None) -> None:
        """``n`` more steps done (``postfix``: a short note on the bar, e.g. the statuses so far)."""
        with self._lock:
            self.done += n
            if self._bar is not None:
                if postfix is not None:
                    self._bar.set_postfix_str(postfix, refresh=False)
                self._bar.update(n)

    def set_total(self, total: int | None) -> None:
        """The count of steps, once it is known."""
        with self._lock:
            self.total = total
            if self._bar is not None:
                self._bar.total = total
                self._bar.refresh()

    def doing(self, what: str) -> None:
        """Name the step under way (shown on the bar and in the plain lines)."""
        with self._lock:
            self.what = what
            if self._bar is not None:
                self._bar.set_description_str(f"{self.label} ({what})" if what else self.label, refresh=False)

    def write(self, line: str) -> None:
        """Print a line of the command's own (above the bar on a terminal); it counts as a sign of life."""
        with self._lock:
            if self._bar is not None:
                self._bar.write(line, file=self.stream)
                self.last = time.monotonic()
            else:
                self._print(line)

    def close(self) -> None:
        self._stop.set()
        if self in _OPEN:
            _OPEN.remove(self)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        if self._bar is not None:
            self._bar.close()
            self._bar = None
