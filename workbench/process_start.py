"""What the process found when it first imported the workbench: the start of any command or benchmark.

:data:`START_LOAD` is the load average (1, 5, 15 min) then, or None where the system has none; the
"load at the start" that :mod:`workbench.provenance` writes on a results page, which a run of an hour
writes at its end. Imported by the package's ``__init__`` so that it is read before any work.
"""

import os

try:
    START_LOAD: tuple[float, ...] | None = os.getloadavg()
except OSError:
    START_LOAD = None
