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

from overspill import ResourceNotFoundError

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
