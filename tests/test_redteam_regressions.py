"""Regressions found by the red-team pass over issues 8, 9 and 10: each test
names the promise it protects and failed on main before its fix.

Contract tests run on every backing (local folder, Redis, Redis Cluster)
through the contract suite's fixture.
"""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import timedelta

import pytest

from overspill import ResourceNotFoundError, ToolOutputStore, tools

from test_store_contract import Backing, backing, session  # noqa: F401  (fixtures)


def _rewrite_record(backing: Backing, resource_id: str, change) -> None:
    """Replace the stored record of ``resource_id`` by ``change(old bytes)``."""
    if backing.kind == "local":
        path = backing.data_dir / "tool-output" / "managed" / f"{resource_id}.json"
        path.write_bytes(change(path.read_bytes()))
        return
    client = backing.client()
    try:
        key = f"ovs:{{{resource_id}}}:meta".encode()
        ttl = client.pttl(key)
        client.set(key, change(client.get(key)), px=ttl if ttl > 0 else None)
    finally:
        client.close()


def test_a_record_whose_created_overflows_a_float_is_invalid_not_a_crash(backing, session):
    """Issue 9 item 5 (on every backend): a record whose ``created`` is a 401-digit
    integer is an invalid record: a typed error for a read, skipped by listings,
    removed by cleanup after the grace period; the CLI prints no traceback."""
    store = backing.store(grace=timedelta(0))
    kept = store.truncate(session, "kept", "a\n" * 40_000).resource
    bad = store.truncate(session, "bad", "b\n" * 40_000).resource
    _rewrite_record(backing, bad.id,
                    lambda data: re.sub(rb'"created":\d+', b'"created":1' + b"0" * 400, data))
    store.close()
    fresh = backing.store(grace=timedelta(0))
    with pytest.raises(ResourceNotFoundError):
        fresh.read(session, bad.uri)
    assert [record.resource for record in fresh.records(session)] == [kept]
    assert [record.resource for record in fresh.records()] == [kept]
    for command in (["ls", "--session", session], ["stats"], ["read", bad.uri, "--session", session]):
        option = ["--store-url", backing.url] if backing.url else ["--data-dir", str(backing.data_dir)]
        ran = subprocess.run([sys.executable, "-m", "overspill", *command, *option],
                             capture_output=True, text=True, timeout=60)
        assert "Traceback" not in ran.stderr, (command, ran.stderr)
        assert ran.returncode in (0, 3), (command, ran.returncode, ran.stderr)
    report = fresh.cleanup()
    assert bad.id in report.removed_ids
    assert fresh.read(session, kept.uri).content.startswith("a\n")
    fresh.close()


def test_run_whose_output_fits_needs_no_store_and_keeps_the_commands_exit_code(tmp_path):
    """Issue 8 item 8: exit 4 is for a failure to store. An output under the limits
    needs no storing, so an unusable data folder (or an unreachable Redis) does
    not turn `overspill run`'s answer into a storage failure: the output is
    printed whole and the command's own exit code comes back."""
    blocker = tmp_path / "a-file"
    blocker.write_bytes(b"")
    unusable = blocker / "data"  # below a regular file: it can never be created
    ran = subprocess.run([sys.executable, "-m", "overspill", "run", "--data-dir", str(unusable), "--",
                          "echo small; exit 3"], capture_output=True, text=True, timeout=60)
    assert (ran.returncode, ran.stdout, ran.stderr) == (3, "small\n[exit code 3]\n", "")
    # Over the limits the output must be stored: that is still a storage failure.
    ran = subprocess.run([sys.executable, "-m", "overspill", "run", "--data-dir", str(unusable),
                          "--max-lines", "3", "--", "seq 1 100"], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 4 and ran.stdout.startswith("1\n2\n") and "could not be stored" in ran.stdout
    assert ran.stderr.count("\n") == 1 and "could not be kept" in ran.stderr


def test_a_capped_binary_output_is_described_with_its_true_size(tmp_path):
    """Issue 8 items 3 and 5: a binary output past max_stored_bytes is described
    with the bytes the command wrote, and says the stored copy holds only the
    first S of T bytes (as the text marker does), not the stored size as if it
    were the whole output."""
    store = ToolOutputStore(tmp_path, durable=False,
                            config={"tool_output": {"max_stored_bytes": 100_000}})
    result = tools.bash(store, "s", "c", "head -c 300000 /dev/urandom | tr '\\000' '\\001'; printf '\\0'")
    assert result.resource is not None and result.resource.size == 100_000
    assert result.metadata["output_bytes"] == 300_001 and result.metadata["stored_bytes"] == 100_000
    assert result.output.startswith("[binary output, 300001 bytes")
    assert "the stored copy holds the first 100000 of 300001 bytes" in result.output


@pytest.mark.parametrize("password", ["Pq9z@Zx7k/Wk3m", "Sx4t@Rv8w/Q2?y7Lm", "Aa1x@Bb2y@Cc3z/Dd4w"])
def test_a_password_with_reserved_characters_never_shows(password):
    """Issue 10 item 3: a URL with a password never appears in an error message or
    repr. A password with an unencoded '@' and '/' splits the URL elsewhere than
    its writer meant (urlsplit takes the host from inside the password), so
    part of the password lands in the host or path: such a URL is refused as
    malformed before any connection, and the message holds no part of it."""
    from overspill import ConfigError

    url = f"redis://user:{password}@127.0.0.1:1/0"
    with pytest.raises(ConfigError) as raised:
        ToolOutputStore(url=url)
    message = str(raised.value)
    for piece in re.split(r"[@/?#]", password):
        assert piece not in message, (piece, message)
    ran = subprocess.run([sys.executable, "-m", "overspill", "ls", "--store-url", url],
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 2 and ran.stderr.count("\n") == 1, ran.stderr
    for piece in re.split(r"[@/?#]", password):
        assert piece not in ran.stderr + ran.stdout, (piece, ran.stderr)


def _preview_lines_are_the_outputs(content: str, count: int) -> tuple[str, str]:
    """Every numbered line a preview shows is a whole line of the output, and
    the lines on each side of the marker run on without a jump."""
    head, _, rest = content.partition("\n\n... output truncated")
    head = head.removesuffix("\n")  # a head cut by bytes keeps its last newline
    tail = rest.partition("\n\n")[2].removesuffix("\n")
    for part in (head, tail):
        lines = part.split("\n")
        assert all(re.fullmatch(r"line \d{8}", line) for line in lines), [
            line for line in lines if not re.fullmatch(r"line \d{8}", line)][:3]
        numbers = [int(line[5:]) for line in lines]
        assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    assert int(tail.split("\n")[-1][5:]) == count - 1  # the true end
    return head, tail


@pytest.mark.parametrize("cap, limits", [
    (3 * 1024 * 1024, {"max_lines": 10**7, "max_bytes": 4 * 1024 * 1024}),  # the tail wants more than 1 MiB
    (1000, {}),  # the head wants more than the stored copy holds
    (1000, {"max_lines": 10**6}),
])
def test_a_capped_preview_never_splices_the_stored_start_onto_the_true_end(tmp_path, cap, limits):
    """Issue 8 item 3: past max_stored_bytes the preview's head comes from the
    stored copy and its tail from the true end; when a preview wants more than
    either holds, it shows less, never bytes glued across the gap between them
    (``...277\\n204\\n150205`` from ``seq``) that the command never wrote."""
    count = 300_000
    chunks = [b"".join(b"line %08d\n" % i for i in range(first, min(first + 1000, count)))
              for first in range(0, count, 1000)]
    store = ToolOutputStore(tmp_path, config={"tool_output": {"max_stored_bytes": cap, **limits}}, durable=False)
    result = store.truncate_stream("s", "c", iter(chunks))
    assert result.truncated and f"the stored copy holds the first {cap} of {count * 14} bytes" in result.content
    head, tail = _preview_lines_are_the_outputs(result.content, count)
    assert len(head) + len(tail) <= limits.get("max_bytes", 51200)
    assert head.count("\n") + tail.count("\n") + 2 <= limits.get("max_lines", 2000)
    assert result.next_offset <= cap  # the marker's offset is one the stored copy has


@pytest.mark.parametrize("cap", [100, 1000, 40_000])
def test_a_capped_output_kept_whole_in_memory_never_points_past_the_stored_copy(tmp_path, cap):
    """Issue 8 item 3, below 1 MiB: the true end kept in memory is the whole
    output, so the stored start and it overlap; the preview's head still comes
    from the stored copy alone, and the marker's ``read`` offset is one that
    copy has (``OVERSPILL_MAX_STORED_BYTES=100 overspill run -- 'seq 1 20000'``
    offered ``offset=3892`` of a 100-byte copy)."""
    count = 20_000
    chunks = [b"".join(b"line %08d\n" % i for i in range(first, min(first + 1000, count)))
              for first in range(0, count, 1000)]
    store = ToolOutputStore(tmp_path, config={"tool_output": {"max_stored_bytes": cap}}, durable=False)
    result = store.truncate_stream("s", "c", iter(chunks))
    assert result.truncated and f"the stored copy holds the first {cap} of {count * 14} bytes" in result.content
    head, _ = _preview_lines_are_the_outputs(result.content, count)
    assert result.next_offset <= cap and len(head) <= cap
    assert f"offset={result.next_offset})" in result.content


@pytest.mark.parametrize("cap", [100, 100_000])
def test_a_capped_output_whose_view_fits_is_shown_whole(tmp_path, cap):
    """Over the limits as stored, within them once its ``\\r`` redraws are
    collapsed: the view is what the model gets, capped or not (a cut of the
    stored start showed a redraw that never appeared, ``progress 00``, and
    dropped the real last line)."""
    chunks = [b"\rprogress %06d%%" % i for i in range(10_000)] + [b"\ndone\n"]
    store = ToolOutputStore(tmp_path, config={"tool_output": {"max_stored_bytes": cap}}, durable=False)
    result = store.truncate_stream("s", "c", iter(chunks))
    # Issue 19 item 1 reversed "and not stored": the raw bytes are over the limits, so they are
    # stored (capped) and the marker after the whole view says what it stands for.
    assert result.truncated and result.resource is not None and result.resource.size == min(cap, 170_006)
    assert result.content.startswith(f"progress 009999%\ndone\n\n... output stored ({cap} of 170006 bytes kept, "
                                     "2 lines in all)")
