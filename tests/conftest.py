"""Shared pytest fixtures, and the reference-data rule: under CI (``CI=true``) a missing reference
folder stops the test run with a failure; elsewhere the tests that need it are skipped, saying why."""

import os
from pathlib import Path

import pytest

from workbench.shared_data import missing_reason, shared_data_dir

#: The read-only reference problems (Siconos, LMGC90), outside the repository (see workbench.shared_data).
SHARED_DATA = shared_data_dir()


def under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def pytest_sessionstart(session):
    if SHARED_DATA is None and under_ci():
        pytest.exit(f"CI=true but {missing_reason()}: the reference-data tests cannot run, so the run fails",
                    returncode=1)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The reference-data folder; the test is skipped (with the reason) when it is absent."""
    if SHARED_DATA is None:
        pytest.skip(missing_reason())
    return SHARED_DATA


@pytest.fixture(scope="session")
def samples(tmp_path_factory) -> dict[str, Path]:
    """Small problem files in every format, written by the workbench (factories.write_samples)."""
    from factories import write_samples
    return write_samples(tmp_path_factory.mktemp("samples"))
