"""Shared test settings: hypothesis without wall-clock deadlines (CI machines are shared and timing is
never what a test checks) and with a bounded number of examples."""
from hypothesis import HealthCheck, settings

settings.register_profile(
    "tiebreak", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True,
)
# mutation runs (docs/testing.md): fewer examples where a test does not set its own count
settings.register_profile("mutation", parent=settings.get_profile("tiebreak"), max_examples=20)
settings.load_profile("tiebreak")


import pytest  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def _no_run_time_cache():
    """No ``TIEBREAK_CACHE`` (the cache folder a deployment may name), here or in subprocesses: every test
    computes what it checks, and nothing is written into the user's folders. tests/test_store_derived.py sets it
    to check that nothing is written there either."""
    import os

    previous = {name: os.environ.get(name) for name in ("TIEBREAK_CACHE",)}
    os.environ.pop("TIEBREAK_CACHE", None)
    yield
    for name, value in previous.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def pytest_collection_modifyitems(config, items):
    """Browser and real-model tests are slow by definition: ``-m "not slow"`` (the fast run) leaves them out."""
    for item in items:
        if item.get_closest_marker("browser") or item.get_closest_marker("models"):
            item.add_marker(pytest.mark.slow)
