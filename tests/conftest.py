"""Shared pytest fixtures."""

from pathlib import Path

import pytest

#: The read-only reference problems (Siconos, LMGC90), outside the repository: ../shared/data.
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path of ../shared/data; the test is skipped when the folder is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"reference data not found at {SHARED_DATA}")
    return SHARED_DATA
