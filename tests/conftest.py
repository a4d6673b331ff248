"""Fixtures shared by the tests; helpers are in tests/utils.py."""

import pytest

from .utils import POSITION_TYPES


@pytest.fixture(params=POSITION_TYPES)
def position_type(request) -> str:
    return request.param
