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
