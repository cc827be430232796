"""The public surface is explicit and pinned: adding a name is a decision."""

from __future__ import annotations

import subprocess
import sys

import pytest

import overspill
from overspill import errors

PUBLIC_NAMES = {
    "IMPLEMENTATION",
    "MAX_BYTES",
    "MAX_CAPTURE_BYTES",
    "Collected",
    "ProcessResult",
    "arun",
    "collect_stream",
    "run",
    "MAX_LINES",
    "MAX_READ_BYTES",
    "RETENTION",
    "CleanupReport",
    "Limits",
    "Page",
    "Record",
    "Resource",
    "ToolOutputStore",
    "TruncateResult",
    "AccessDeniedError",
    "BackgroundLimitError",
    "ConfigError",
    "InvalidResourceError",
    "OverspillError",
    "PatternTooSlowError",
    "Preview",
    "ResourceCorruptError",
    "ResourceNotFoundError",
    "SearchError",
    "StorageError",
    "UnsupportedError",
    "StreamCap",
    "count_lines",
    "page_bounds",
    "preview",
    "utf8_length",
}


def test_public_names_are_pinned():
    assert set(overspill.__all__) == PUBLIC_NAMES
    for name in overspill.__all__:
        assert hasattr(overspill, name), name


def test_implementation_in_use(implementation):
    assert overspill.IMPLEMENTATION == implementation
    module = "overspill._speedups" if implementation == "cython" else "overspill._native"
    assert overspill.count_lines.__module__ == module
    assert overspill.StreamCap.__module__ == module


@pytest.mark.parametrize(
    ("error", "builtin"),
    [(errors.InvalidResourceError, ValueError), (errors.ResourceNotFoundError, LookupError),
     (errors.ResourceCorruptError, LookupError), (errors.AccessDeniedError, PermissionError),
     (errors.ConfigError, ValueError), (errors.StorageError, OSError),
     (errors.SearchError, RuntimeError), (errors.PatternTooSlowError, RuntimeError),
     (errors.BackgroundLimitError, RuntimeError), (errors.UnsupportedError, NotImplementedError)],
)
def test_each_error_is_also_the_builtin_it_means(error, builtin):
    assert issubclass(error, errors.OverspillError) and issubclass(error, builtin)
    assert getattr(overspill, error.__name__) is error


def test_store_constants():
    from datetime import timedelta

    assert (overspill.MAX_LINES, overspill.MAX_BYTES, overspill.MAX_READ_BYTES) == (2000, 51200, 51200)
    assert overspill.RETENTION == timedelta(days=7)


def test_corrupt_is_a_not_found():
    assert issubclass(errors.ResourceCorruptError, errors.ResourceNotFoundError)


def run_python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)


def test_environment_selects_the_implementation(subprocess_env, implementation):
    result = run_python("import overspill; print(overspill.IMPLEMENTATION)", subprocess_env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == implementation


def test_unknown_implementation_is_a_config_error(subprocess_env):
    subprocess_env["OVERSPILL_IMPLEMENTATION"] = "fortran"
    # The import itself never fails on the environment (so the command line can report it in one line);
    # the first use of a kernel does.
    assert run_python("import overspill, overspill.tools, overspill.cli", subprocess_env).returncode == 0
    for use in ("overspill.IMPLEMENTATION", "overspill.count_lines(b'')",
                "overspill.ToolOutputStore(__import__('tempfile').mkdtemp()).truncate('s', 'c', 'x')"):
        result = run_python(f"import overspill; {use}", subprocess_env)
        assert result.returncode != 0
        assert "ConfigError" in result.stderr and "OVERSPILL_IMPLEMENTATION" in result.stderr


def test_forcing_a_missing_extension_fails_loudly(subprocess_env, tmp_path):
    # A stand-in package directory whose compiled module is absent.
    import shutil

    package = tmp_path / "overspill"
    shutil.copytree(overspill.__path__[0], package, ignore=shutil.ignore_patterns("_speedups*", "__pycache__"))
    subprocess_env["OVERSPILL_IMPLEMENTATION"] = "cython"
    subprocess_env["PYTHONPATH"] = str(tmp_path)
    result = run_python("import overspill; overspill.count_lines(b'')", subprocess_env)
    assert result.returncode != 0
    assert "ImportError" in result.stderr and "OVERSPILL_IMPLEMENTATION=cython" in result.stderr
    subprocess_env["OVERSPILL_IMPLEMENTATION"] = "auto"
    fallback = run_python("import overspill; print(overspill.IMPLEMENTATION)", subprocess_env)
    assert fallback.stdout.strip() == "python", fallback.stderr


def test_tool_names_are_pinned():
    from overspill import tools

    assert set(tools.__all__) == {
        "MAX_LINE_LENGTH", "MAX_READ_LINES", "MAX_RESPONSE_BYTES", "MAX_SEARCH_BYTES", "ToolResult",
        "bash", "call", "grep", "read", "schemas", "skill", "webfetch", "websearch", "wait", "kill", "jobs",
    }
    assert (tools.MAX_READ_LINES, tools.MAX_LINE_LENGTH) == (2000, 2000)
    assert (tools.MAX_RESPONSE_BYTES, tools.MAX_SEARCH_BYTES) == (5 * 1024 * 1024, 256 * 1024)
