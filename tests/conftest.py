"""Shared pytest fixtures."""

from pathlib import Path

import pytest

from workbench.shared_data import shared_data_dir

#: The read-only reference problems (Siconos, LMGC90), outside the repository (see workbench.shared_data).
SHARED_DATA = shared_data_dir()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The reference-data folder; the test is skipped when it is absent."""
    if SHARED_DATA is None or not SHARED_DATA.is_dir():
        pytest.skip("reference data not found (set WORKBENCH_SHARED_DATA)")
    return SHARED_DATA
