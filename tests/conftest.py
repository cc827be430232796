"""Every test runs once per implementation of the kernels, in one pytest run.

The session fixture below rebinds the kernels (as MarkupSafe's suite does), so
tests written against the public API exercise the compiled module and the
pure-Python twin alike.  Setting OVERSPILL_IMPLEMENTATION runs only that one.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

import overspill
from overspill import _kernels

settings.register_profile("default", max_examples=100, deadline=None)
settings.register_profile(
    "ci", max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("quick", max_examples=20, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# Tests choose their stores explicitly; a developer's own store URL must not redirect them.
os.environ.pop("OVERSPILL_STORE_URL", None)

_FORCED = os.environ.get("OVERSPILL_IMPLEMENTATION", "auto").strip().lower()
IMPLEMENTATIONS = [_FORCED] if _FORCED in ("python", "cython") else ["python", "cython"]
# Release builds and CI must not silently lose the compiled half of the suite.
_EXTENSION_REQUIRED = os.environ.get("OVERSPILL_REQUIRE_EXTENSION", "") not in ("", "0")

_PUBLIC_KERNELS = [name for name in _kernels.KERNEL_NAMES if name in overspill.__all__]


def activate(name: str) -> None:
    """Make ``name`` the implementation behind every public kernel."""
    _kernels.use(name)
    for kernel in _PUBLIC_KERNELS:
        setattr(overspill, kernel, getattr(_kernels, kernel))
    overspill.IMPLEMENTATION = _kernels.IMPLEMENTATION


@pytest.fixture(scope="session", params=IMPLEMENTATIONS, autouse=True)
def implementation(request: pytest.FixtureRequest):
    """The name of the kernel implementation this test runs against."""
    previous = _kernels.IMPLEMENTATION
    try:
        activate(request.param)
    except ImportError as error:
        if _EXTENSION_REQUIRED:
            raise
        pytest.skip(f"compiled extension unavailable: {error}")
    yield request.param
    activate(previous)


@pytest.fixture(scope="module")
def compiled():
    """The compiled module itself, for tests that call it beside the twin
    (skipped without it, unless ``OVERSPILL_REQUIRE_EXTENSION`` is set)."""
    try:
        from overspill import _speedups
    except ImportError as error:
        if _EXTENSION_REQUIRED:
            raise
        pytest.skip(f"compiled extension unavailable: {error}")
    return _speedups


@pytest.fixture
def subprocess_env(implementation: str) -> dict[str, str]:
    """Environment for a child Python process that uses the same implementation."""
    env = dict(os.environ)
    env["OVERSPILL_IMPLEMENTATION"] = implementation
    return env


# ------------------------------------------------------------------ real Redis servers
# Started once per test session, on free loopback ports, and stopped by pid.
# OVERSPILL_REQUIRE_REDIS=1 (CI) turns "cannot run here" into a failure.
_REDIS_REQUIRED = os.environ.get("OVERSPILL_REQUIRE_REDIS", "") not in ("", "0")


def _redis_or_skip() -> None:
    from redis_servers import missing_reason

    reason = missing_reason()
    if reason is not None:
        if _REDIS_REQUIRED:
            pytest.fail(f"OVERSPILL_REQUIRE_REDIS is set, but {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory):
    """One ``redis-server`` (no persistence) for the whole run: a ``RedisServer``."""
    _redis_or_skip()
    from redis_servers import start_server

    server = start_server(parent=tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory):
    """A 3-master Redis Cluster for the whole run: a list of ``RedisServer``."""
    _redis_or_skip()
    from redis_servers import start_cluster

    servers = start_cluster(3, parent=tmp_path_factory.mktemp("redis-cluster"))
    yield servers
    for server in servers:
        server.stop()
