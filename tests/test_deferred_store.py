"""``overspill run`` opens its local store only for an output that must be stored.

``tools.bash.execute(None, ..., open_store=...)`` holds the output while it is
within the limits, as ``truncate_stream`` does, and opens the store only when
it goes over them (or is binary, or its tokens are over a token bound, counted
before anything is opened).  What the model
is shown is the same as with the store open from the start.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from overspill.config import resolve_limits
from overspill.errors import StorageError
from overspill.store import ToolOutputStore
from overspill.tools.bash import execute

SCRIPT = Path(sys.executable).with_name("overspill")

# (command, tool_output settings): each side of every rule that decides storing.
CASES = [
    ("true", {}),
    ("printf 'hi\\n'", {}),
    ("printf 'no final newline'", {}),
    ("seq 1 10", {"max_lines": 10}),  # ten whole lines: within
    ("seq 1 9; printf 10", {"max_lines": 10}),
    ("seq 1 11", {"max_lines": 10}),  # one line over
    ("seq 1 10; printf x", {"max_lines": 10}),  # an eleventh line without a newline
    ("head -c 100 /dev/zero | tr '\\0' a", {"max_bytes": 100}),  # exactly the bytes
    ("head -c 101 /dev/zero | tr '\\0' a", {"max_bytes": 100}),
    ("head -c 40 /dev/zero | tr '\\0' '\\377'", {"max_bytes": 100}),  # within as bytes, over as shown
    ("head -c 30 /dev/zero | tr '\\0' '\\377'", {"max_bytes": 100}),  # 90 bytes shown: within
    ("printf 'step 1\\rstep 2\\rdone\\n'", {"views": ["cr"]}),
    ("printf '\\033[31mred\\033[0m\\n'", {"views": ["ansi"]}),
    ("printf '\\000\\001\\002binary'", {}),  # binary: always stored
    ("seq 1 5000", {}),
    ("printf 'short\\n'", {"max_tokens": 100}),  # within a token bound: counted before any store is opened
    ("seq 1 60", {"max_tokens": 20}),  # within the bytes and lines, over the token bound: stored
]


def _ran(tmp_path: Path, name: str, command: str, settings: dict, *, deferred: bool):
    config = {"tool_output": settings}
    limits = resolve_limits(config)
    opened: list[ToolOutputStore] = []

    def open_store() -> ToolOutputStore:
        opened.append(ToolOutputStore(tmp_path / name, config=config, durable=False))
        return opened[-1]

    if deferred:
        ran = execute(None, "ses_deferred", "call-1", command, timeout=60, limits=limits, open_store=open_store)
    else:
        ran = execute(open_store(), "ses_deferred", "call-1", command, timeout=60, limits=limits)
    shown = ran.shown if ran.resource is None else ran.shown.replace(ran.resource.uri, "tool-output://ID")
    return ran, shown, bool(opened)


@pytest.mark.parametrize(("command", "settings"), CASES)
def test_what_is_shown_is_the_same_as_with_the_store_open(tmp_path, command, settings):
    if settings.get("max_tokens") is not None:
        pytest.importorskip("quicktok")
    eager, eager_shown, _ = _ran(tmp_path, "eager", command, settings, deferred=False)
    lazy, lazy_shown, opened = _ran(tmp_path, "lazy", command, settings, deferred=True)
    assert lazy_shown == eager_shown
    assert lazy.truncated == eager.truncated
    assert (lazy.resource is None) == (eager.resource is None)
    assert lazy.marker.keys() == eager.marker.keys()
    assert lazy.marker.get("next_offset") == eager.marker.get("next_offset")
    assert lazy.storage_error is None and lazy.process.exit_code == eager.process.exit_code
    # The store is opened exactly when something is stored (red team I12 #2: a token bound opened it
    # for an output shown whole too).
    assert opened == (eager.resource is not None)
    if lazy.resource is not None:
        assert lazy.resource.size == eager.resource.size
    if not opened:
        assert not (tmp_path / "lazy").exists()


def _unopenable() -> ToolOutputStore:
    raise StorageError(13, "the output folder /nowhere cannot be created")


def test_a_store_that_cannot_be_opened_matters_only_when_the_output_must_be_stored():
    limits = resolve_limits({"tool_output": {"max_lines": 10}})
    small = execute(None, "ses_deferred", "call-1", "seq 1 10", timeout=60, limits=limits, open_store=_unopenable)
    assert small.storage_error is None and small.shown == "\n".join(map(str, range(1, 11)))
    large = execute(None, "ses_deferred", "call-2", "seq 1 100", timeout=60, limits=limits, open_store=_unopenable)
    assert large.resource is None and large.truncated
    assert large.storage_error is not None and "/nowhere cannot be created" in large.storage_error
    assert large.shown.startswith("1\n2\n") and large.shown.endswith("100")
    assert large.lines == 100


def test_a_long_session_id_is_refused_by_the_store_even_for_a_small_output(tmp_path):
    # The store's own checks decide: a session id it would refuse opens it, and is refused.
    with pytest.raises(ValueError, match="session_id"):
        execute(None, "s" * 2000, "call-1", "true", timeout=60, limits=resolve_limits(None),
                open_store=lambda: ToolOutputStore(tmp_path / "data", durable=False))


def test_overspill_run_of_a_small_output_creates_no_folder(tmp_path, subprocess_env):
    import subprocess

    folder = tmp_path / "data"
    env = {**subprocess_env, "OVERSPILL_DATA_DIR": str(folder)}
    small = subprocess.run([str(SCRIPT), "run", "--", "echo hi"], capture_output=True, env=env, timeout=60)
    assert (small.returncode, small.stdout) == (0, b"hi\n")
    assert not folder.exists()
    large = subprocess.run([str(SCRIPT), "run", "--", "seq 1 100000"], capture_output=True, env=env, timeout=60)
    assert large.returncode == 0 and b"tool-output://" in large.stdout
    assert any(name.endswith(".txt") for name in os.listdir(folder / "tool-output" / "managed"))


def test_overspill_run_over_the_limits_with_an_unusable_folder_shows_the_preview_and_exits_4(tmp_path,
                                                                                               subprocess_env):
    import subprocess

    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the data folder should be")
    env = {**subprocess_env, "OVERSPILL_DATA_DIR": str(blocker)}
    small = subprocess.run([str(SCRIPT), "run", "--", "echo hi"], capture_output=True, env=env, timeout=60)
    assert (small.returncode, small.stdout) == (0, b"hi\n")
    large = subprocess.run([str(SCRIPT), "run", "--", "seq 1 100000"], capture_output=True, env=env, timeout=60)
    assert large.returncode == 4
    assert large.stdout.startswith(b"1\n2\n") and b"100000" in large.stdout
    assert large.stderr.decode().startswith("overspill: error: the output could not be kept: ")
