"""Problem generators a study can name: ``generator = "NAME"`` with ``params`` (and ``sweep``).

A generator is a function ``f(**params)`` returning one :class:`~workbench.problem.TimeStepProblem`
or a sequence of them (a dataset). Generators must be deterministic given their parameters (give
them a ``seed``): a study regenerates its problems at every ``workbench run`` and keys results by
the data hash, so a generator whose output changed yields new runs instead of silently mixing old
and new data.

Adding a generator (e.g. the dynamics work's dataset generator) is one line in ``GENERATORS``.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any, Callable

from workbench.errors import InputError

#: name -> "module:function"
GENERATORS: dict[str, str] = {
    "sphere_packing": "problems.synthetic:sphere_packing",
    # seed 003 (Anitescu and Hart): the 2D cannonball arrangements and the hexagonal pyramid
    "cannonball": "problems.lcp_scenes:cannonball",
    "hexagonal_pyramid": "problems.lcp_scenes:hexagonal_pyramid",
}


def get_generator(name: str) -> Callable[..., Any]:
    """The generator function called ``name``; InputError when unknown or its module is missing."""
    if name not in GENERATORS:
        raise InputError(f"unknown generator {name!r}; known: {', '.join(GENERATORS)}")
    module, func = GENERATORS[name].split(":")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise InputError(f"generator {name!r} needs the module {module}, which is not available here "
                         f"({exc})") from None
    return getattr(mod, func)


def check_params(name: str, func: Callable[..., Any], params: dict[str, Any]) -> None:
    """InputError when ``params`` do not fit the generator's signature (typo'd or missing names)."""
    try:
        inspect.signature(func).bind(**params)
    except TypeError as exc:
        raise InputError(f"generator {name!r}: {exc}") from None
