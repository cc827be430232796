"""The public surface is explicit and pinned: adding a name is a decision."""

from __future__ import annotations

import inspect
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


def test_preview_keywords_keep_the_old_result_by_default():
    parameters = inspect.signature(overspill.preview).parameters
    assert list(parameters) == ["content", "max_lines", "max_bytes", "line_slack", "runs"]
    for name in ("line_slack", "runs"):
        assert parameters[name].kind is inspect.Parameter.KEYWORD_ONLY and parameters[name].default == 0


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


# ------------------------------------------------------------------ the README says what is true
README = __import__("pathlib").Path(__file__).resolve().parent.parent / "README.md"


def test_readme_examples_and_promises_agree_with_the_package(tmp_path):
    """Regression (issue 19, items 12 and 23): the README's two example markers
    disagreed (588,890 vs 588,889 bytes), it did not say ``view()`` is a context
    manager, and its first promise implied CRC-32 stops tampering, which it does
    not: a same-user edit that keeps the CRC (4 patched bytes) is served."""
    import re
    import zlib

    text = README.read_text()
    markers = re.findall(r"\.\.\. output truncated \((\d+) bytes, (\d+) lines in all\); the omitted part starts "
                         r"at byte offset (\d+)", text)
    assert len(markers) == 2 and markers[0] == markers[1]
    size = sum(len(f"{i}\n") for i in range(100000))  # the quick start's command
    assert int(markers[0][0]) == size and int(markers[0][1]) == 100000
    assert "`view` (a context manager: `with store.view(" in text
    promise = text.split("2. Never readable-but-wrong")[1].split("\n3. ")[0]
    assert "CRC-32 detects accidents, not" in " ".join(promise.split()) and "forgery" in promise
    threat = text.split("## Threat model")[1].split("\n## ")[0]
    assert "CRC-32 detects accidents, not forgery" in " ".join(threat.split())
    assert "against the same user there is no defence" in " ".join(threat.split())
    # What the README now says is what happens: four bytes chosen to keep the
    # chunk's CRC-32 make a same-size edit that every read serves as correct.
    from overspill import ToolOutputStore

    with ToolOutputStore(tmp_path, durable=False) as store:
        original = b"the build passed\n" + b"." * 100
        uri = store.write("s", "c", original).uri
        payload = store.directory / f"{uri[len('tool-output://'):]}.txt"
        forged = bytearray(b"the build FAILED\n" + b"." * 100)
        forged[-4:] = _crc_patch(bytes(forged[:-4]), zlib.crc32(original))
        assert zlib.crc32(bytes(forged)) == zlib.crc32(original)
        payload.chmod(0o600)
        payload.write_bytes(bytes(forged))
    with ToolOutputStore(tmp_path, durable=False) as reader:
        assert reader.read("s", uri).content.startswith("the build FAILED")


def _crc_patch(prefix: bytes, target: int) -> bytes:
    """Four bytes that, appended to ``prefix``, give a CRC-32 of ``target``
    (the standard inversion of the reflected CRC register)."""
    import zlib

    table = []
    for byte in range(256):
        value = byte
        for _ in range(8):
            value = (value >> 1) ^ 0xEDB88320 if value & 1 else value >> 1
        table.append(value)
    top = {entry >> 24: index for index, entry in enumerate(table)}
    register = target ^ 0xFFFFFFFF
    indices = []
    for _ in range(4):  # walk the register back over four unknown bytes
        index = top[register >> 24]
        indices.append(index)
        register = ((register ^ table[index]) << 8) & 0xFFFFFFFF
    state = zlib.crc32(prefix) ^ 0xFFFFFFFF
    patch = bytearray()
    for index in reversed(indices):
        byte = (state ^ index) & 0xFF
        patch.append(byte)
        state = (state >> 8) ^ table[(state ^ byte) & 0xFF]
    return bytes(patch)
