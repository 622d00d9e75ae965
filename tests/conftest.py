"""Shared fixtures: a seeded rng, and a private module cache so tests never touch ~/.cache."""
import numpy as np
import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("YOTA_S2S_CACHE", str(tmp_path_factory.mktemp("yota_cache")))
    yield
    mp.undo()


@pytest.fixture
def rng():
    return np.random.default_rng(0)
