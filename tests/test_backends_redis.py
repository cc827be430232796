"""The Redis backend against damage and hangs (issue 19, items 15 and 21): a
key of the wrong type, a chunk changed under a writer, a stopped server, a
hung Cluster node.  Each test starts its own servers (it damages or stops
them) and stops them by pid."""

from __future__ import annotations

import contextlib
import os
import signal
import threading

import pytest

from overspill import AccessDeniedError, ResourceNotFoundError, StorageError, ToolOutputStore

# A liveness bound for calls into a hung server, not a timing claim: before
# the fix they took 60 s (a stopped server) to 660 s (a hung Cluster node).
_RETURNS_WITHIN = 45.0


@pytest.fixture
def server(tmp_path):
    from conftest import _redis_or_skip

    _redis_or_skip()
    from redis_servers import start_server

    started = start_server(parent=tmp_path)
    yield started
    started.stop()


def returns(call):
    """``call()``'s outcome (its value or the exception it raised), once it returns in time."""
    outcome: list = []

    def target() -> None:
        try:
            outcome.append(call())
        except BaseException as error:  # handed to the test
            outcome.append(error)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(_RETURNS_WITHIN)
    assert not thread.is_alive(), f"the call did not return within {_RETURNS_WITHIN} s"
    return outcome[0]


def test_wrong_typed_keys_are_skipped_by_listings_and_removed_by_cleanup(server):
    """Regression (issue 19, item 21): one wrong-typed key made listing and cleanup
    fail for every session, and cleanup could never remove it."""
    with ToolOutputStore(url=server.url) as store:
        good = {session: store.write(session, "c", f"output of {session}\n").uri for session in ("a", "b")}
        raw = store._backend.client
        bad_id = "1a23bf000000AAAAAAAAAAAAAA"
        raw.rpush(f"ovs:{{{bad_id}}}:meta", "not a record")
        raw.zadd("ovs:session:a", {bad_id: 1})
        raw.set("ovs:session:ghost", "not a sorted set")
        raw.zadd("ovs:sessions", {"ghost": 1})
        raw.set("ovs:{usage}:bytes", "not a number")
        assert [r.resource.uri for r in store.records("a")] == [good["a"]]
        assert sorted(r.resource.uri for r in store.records()) == sorted(good.values())
        assert store.records("ghost") == []
        with pytest.raises(ResourceNotFoundError, match="damaged record"):
            store.read("a", f"tool-output://{bad_id}")
        later = store.write("a", "c2", "x" * 100)  # the quota's total was recounted, not a failure
        assert store.read("a", later.uri).content == "x" * 100
        raw.set("ovs:{usage}:bytes", "again not a number")
        raw.delete("ovs:{usage}:by-id")
        raw.set("ovs:{usage}:by-id", "not a hash")
        dry = store.cleanup(dry_run=True)
        assert bad_id in dry.removed_ids and raw.type("ovs:session:ghost") == b"string"
        report = store.cleanup()
        assert bad_id in report.removed_ids and report.temporaries >= 1
        assert not raw.exists(f"ovs:{{{bad_id}}}:meta") and not raw.exists("ovs:session:ghost")
        assert raw.type("ovs:{usage}:by-id") in (b"hash", b"none") and int(raw.get("ovs:{usage}:bytes") or 0) >= 0
        for session, uri in good.items():
            assert store.read(session, uri).content == f"output of {session}\n"
        assert store.cleanup().removed == 0


@pytest.mark.parametrize("change", ["shorter", "same length, other bytes"])
def test_publish_refuses_a_chunk_changed_under_the_writer(server, change):
    """Regression (issue 19, item 21): publish checked only that chunk keys existed,
    so a chunk altered mid-stream was published and "stored" was not readable."""
    from overspill.backends.redis import CHUNK_BYTES

    with ToolOutputStore(url=server.url) as store:
        raw = store._backend.client
        data = bytes(range(256)) * (CHUNK_BYTES // 256)

        def chunks():
            yield data
            yield data  # the first chunk is in Redis once this is asked for
            (key,) = [k for k in raw.keys("ovs:{*}:c:0")]
            raw.set(key, data[:100] if change == "shorter" else data[:-1] + b"\x00", keepttl=True)
            if change != "shorter":
                (last,) = [k for k in raw.keys("ovs:{*}:c:1")]
                raw.set(last, data[:-1] + b"\x00", keepttl=True)

        with pytest.raises(StorageError, match="changed by someone else"):
            store.write_stream("s", "c", chunks())
        assert store.records("s") == []
        assert store.write("s", "c", b"fine").size == 4  # the store goes on


def test_a_stopped_server_and_tls_to_a_plain_server_fail_in_seconds(server):
    """Regression (issue 19, item 15): a stopped server failed after 60 s, and
    ``rediss://`` to a plain server took 60 s to fail."""
    with ToolOutputStore(url=server.url) as store:
        uri = store.write("s", "c", "before the stop").uri
        os.kill(server.pid, signal.SIGSTOP)
        try:
            failed = returns(lambda: store.read("s", uri))
            assert isinstance(failed, StorageError) and server.address in str(failed)
            assert isinstance(returns(store.ping), StorageError)
        finally:
            os.kill(server.pid, signal.SIGCONT)
        assert store.read("s", uri).content == "before the stop"  # and it recovers
    tls = returns(lambda: ToolOutputStore(url=f"rediss://{server.address}/0"))
    assert isinstance(tls, StorageError) and "\n" not in str(tls)
    quick = returns(lambda: ToolOutputStore(url=f"redis://{server.address}/0?socket_timeout=0.5"))
    assert isinstance(quick, ToolOutputStore)
    quick.close()


def test_a_hung_cluster_node_is_one_error_and_the_others_serve_on(tmp_path):
    """Regression (issue 19, item 15): SIGSTOP on one node stalled a read for ~11
    minutes, and a read on a healthy node by the same store for 6."""
    from conftest import _redis_or_skip

    _redis_or_skip()
    from redis_servers import start_cluster

    # Partial coverage on, as a deployment that wants the other nodes to serve sets it.
    servers = start_cluster(3, parent=tmp_path, options=("--cluster-require-full-coverage", "no"))
    try:
        with ToolOutputStore(url=f"redis+cluster://{servers[0].address}") as store:
            client = store._backend.client
            by_port: dict[int, list[str]] = {}
            while len(by_port) < 3 or min(len(uris) for uris in by_port.values()) < 2:
                uri = store.write("s", "c", "some output\n").uri
                node = client.get_node_from_key(f"ovs:{{{uri[len('tool-output://'):]}}}:meta")
                by_port.setdefault(node.port, []).append(uri)
            victim = servers[1]
            os.kill(victim.pid, signal.SIGSTOP)
            try:
                for attempt in range(2):
                    failed = returns(lambda: store.read("s", by_port[victim.port][attempt]))
                    assert isinstance(failed, StorageError) and "\n" not in str(failed)
                    for port, uris in by_port.items():
                        if port != victim.port:
                            assert returns(lambda: store.read("s", uris[attempt]).content) == "some output\n"
            finally:
                os.kill(victim.pid, signal.SIGCONT)
    finally:
        for node in servers:
            node.stop()


def test_a_recount_during_a_publish_keeps_its_bytes_counted(server):
    """Regression (red team f11): the writer counted its bytes one round trip
    before the publish script and was not in ovs:pending (outputs under one
    chunk never were), so another process's recount in between dropped the
    count of a resource that was then published: counted nowhere, for good."""
    with ToolOutputStore(url=server.url) as writer, ToolOutputStore(url=server.url) as evictor:
        backend = writer._backend
        real = backend.publish_script

        def script_after_a_recount(*args, **kwargs):
            with evictor._backend.eviction_lock():
                evictor._backend.recount()  # what the eviction does first
            return real(*args, **kwargs)

        backend.publish_script = script_after_a_recount
        resource = writer.write("s", "c", b"x" * 500_000)
        backend.publish_script = real
        writer.cleanup()
        with evictor._backend.eviction_lock():
            assert evictor._backend.recount() >= resource.size
        assert backend.client.zcard("ovs:pending") == 0  # the publish's entry went with it


def test_a_member_that_names_no_id_is_skipped_and_cleaned(server):
    """Regression (red team f01): one non-ASCII member of a session's set,
    ovs:pending or ovs:{usage}:by-id made listings, cleanup and every evicting
    write raise a raw UnicodeEncodeError (the member decoded with "replace",
    then encoded to ASCII for its key)."""
    with ToolOutputStore(url=server.url, config={"tool_output": {"max_total_bytes": 3_000_000}}) as store:
        first = store.write("s1", "c1", b"x" * 1_000_000)
        raw = store._backend.client
        raw.zadd(b"ovs:session:s1", {b"\xc3\xa9": 1})
        raw.hset(b"ovs:{usage}:by-id", b"\xc3\xa9", 5)
        raw.zadd(b"ovs:pending", {b"\xc3\xa9": 1})
        assert [record.id for record in store.records("s1")] == [first.id]
        assert [record.id for record in store.records()] == [first.id]
        later = store.write("s1", "c2", b"y" * 2_500_000)  # evicts the first
        assert [record.id for record in store.records("s1")] == [later.id]
        store.cleanup()
        assert raw.zscore(b"ovs:session:s1", b"\xc3\xa9") is None
        assert raw.zscore(b"ovs:pending", b"\xc3\xa9") is None
        assert not raw.hexists(b"ovs:{usage}:by-id", b"\xc3\xa9")


_FORGED_SIZE_CLEANUP = r'''
import json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))  # far more than a sweep of two records needs
from overspill import ToolOutputStore
from overspill.records import new_id
store = ToolOutputStore(url=sys.argv[1])
raw = store._backend.client
now = int(time.time() * 1000)
forged = []
for created in (now - 8 * 86400 * 1000, now - 3600 * 1000):  # expired, and not
    rid = new_id()
    document = {"version": 1, "id": rid, "uri": "tool-output://" + rid, "sessionID": "s", "toolCallID": "c",
                "mime": "text/plain", "size": 10**12, "created": created, "chunkBytes": 16384}
    raw.set(f"ovs:{{{rid}}}:meta", json.dumps(document))
    raw.set(f"ovs:{{{rid}}}:c:0", b"x" * 16384)
    raw.zadd(b"ovs:session:s", {rid: created})
    forged.append(rid)
raw.zadd(b"ovs:sessions", {b"s": now})
good = store.write("s", "c", b"kept")
report = store.cleanup()
assert sorted(report.removed_ids) == sorted(forged), report
assert not any(raw.exists(f"ovs:{{{rid}}}:meta", f"ovs:{{{rid}}}:c:0") for rid in forged)
assert [record.id for record in store.records("s")] == [good.id]
print("ok")
'''


def test_a_record_claiming_a_huge_size_is_removed_in_bounded_work(server):
    """Regression (red team f05): a damaged record claiming 10**12 bytes made
    every sweep build one key name per claimed chunk (61 million) and end in
    MemoryError.  Now its last chunk is looked at first: missing, the record is
    broken and goes with the chunk keys that exist."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _FORGED_SIZE_CLEANUP, server.url], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stdout + done.stderr


def test_a_dead_writers_bytes_leave_the_quota_at_the_recount(server, monkeypatch):
    """Regression (red team C f01): a writer killed mid-write kept counting against
    the quota as long as its ovs:pending entry lived (a sweep's grace, an hour; for
    ever without cleanup), so live outputs were evicted for memory Redis had freed.
    Its heartbeat older than PARTIAL_TTL and its chunk 0 gone, the recount drops it;
    a writer whose chunks are still there is kept however old its heartbeat looks."""
    import time
    from datetime import timedelta

    from overspill.backends import _redis_keys
    from overspill.backends import redis as backend_module
    from overspill.records import new_id

    monkeypatch.setattr(backend_module, "_HEARTBEAT_SECONDS", 3600.0)  # one beat, at the first chunk
    chunk = backend_module.CHUNK_BYTES
    with ToolOutputStore(url=server.url) as writing, ToolOutputStore(url=server.url) as evicting:
        raw = writing._backend.client
        kept = writing.write("s", "kept", b"k" * 1000)
        baseline = evicting._backend.usage()

        def counted_writer():
            writer = writing._backend.create(new_id())
            writer.write(memoryview(b"x" * (9 * chunk)))  # past ACCOUNT_STEP: counted in Redis
            assert evicting._backend.usage() >= baseline + 8 * chunk
            return writer

        def recount():
            with evicting._backend.eviction_lock():
                return evicting._backend.recount()

        # Chunks written with the full partial expiry, then a heartbeat that looks a
        # minute old (a skewed clock, a starved heartbeat thread): still alive.
        alive = counted_writer()
        monkeypatch.setattr(_redis_keys, "PARTIAL_TTL", timedelta(milliseconds=300))
        time.sleep(0.5)
        assert raw.exists(f"ovs:{{{alive.id}}}:c:0".encode())
        assert recount() >= baseline + 8 * chunk and raw.zscore(b"ovs:pending", alive.id) is not None
        alive.abort()
        assert recount() == baseline

        # A writer that stops beating: its chunks expire, and its count goes with them.
        dead = counted_writer()
        writing._backend.delist(dead)  # as in a process that was killed: nothing of it left here
        deadline = time.monotonic() + 30
        while raw.exists(f"ovs:{{{dead.id}}}:c:0".encode()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert recount() == baseline
        assert raw.zscore(b"ovs:pending", dead.id) is None
        assert evicting.read("s", kept.uri).content == "k" * 1000


def test_a_plain_url_at_a_cluster_node_says_to_use_the_cluster_form(tmp_path):
    """Regression (red team C, minor): ``redis://`` at a Cluster node failed the
    calls whose keys live on other nodes with a bare MOVED reply ("6852
    127.0.0.1:46333"); the error now says the server is a Cluster node and
    names the URL form to use."""
    from conftest import _redis_or_skip

    _redis_or_skip()
    from redis_servers import start_cluster

    servers = start_cluster(3, parent=tmp_path)
    try:
        with ToolOutputStore(url=f"redis://{servers[0].address}/0") as store:
            failures = []
            for index in range(12):  # keys of several slots: some on other nodes
                try:
                    store.write("s", f"c{index}", f"output {index}\n")
                except StorageError as error:
                    failures.append(str(error))
            assert failures
            assert all("Redis Cluster node" in failure and "redis+cluster://" in failure for failure in failures)
        with ToolOutputStore(url=f"redis+cluster://{servers[0].address}") as store:
            assert store.read("s", store.write("s", "c", "fine\n").uri).content == "fine\n"
    finally:
        for node in servers:
            node.stop()


@contextlib.contextmanager
def _damageable(tmp_path, topology):
    """A store on servers of its own (one, or a 3-node Cluster), and its raw client to damage
    keys with; the servers are stopped after."""
    from conftest import _redis_or_skip

    _redis_or_skip()
    from redis_servers import start_cluster, start_server

    servers = [start_server(parent=tmp_path)] if topology == "server" else start_cluster(3, parent=tmp_path)
    url = servers[0].url if topology == "server" else f"redis+cluster://{servers[0].address}"
    try:
        with ToolOutputStore(url=url) as store:
            yield store, store._backend.client
    finally:
        for node in servers:
            node.stop()


@pytest.mark.parametrize("topology", ["server", "cluster"])
def test_a_damaged_sessions_key_is_rebuilt_not_hiding_sessions_nor_failing_writes(tmp_path, topology):
    """Regression (issue 19 item 21, red team E f06): ``ovs:sessions`` set to a string made
    ``ls --all-sessions`` and ``stats`` show nothing though every output was stored, failed
    every write ("WRONGTYPE"), and cleanup deleted it as "1 unfinished write" without
    rebuilding it, so sessions that did not write again stayed unlisted. It is only a cache of
    the ``ovs:session:*`` sets: rebuilt from them (SCAN), by a listing, a write or cleanup."""
    with _damageable(tmp_path, topology) as (store, raw):
        written = {session: store.write(session, "c", f"output of {session}\n").uri for session in "abc"}

        def damage() -> None:
            raw.delete("ovs:sessions")
            raw.set("ovs:sessions", "not a sorted set")

        damage()  # a listing rebuilds it
        assert sorted(r.resource.uri for r in store.records()) == sorted(written.values())
        assert raw.type("ovs:sessions") == b"zset"
        assert sorted(raw.zrange("ovs:sessions", 0, -1)) == [b"a", b"b", b"c"]
        damage()  # a write goes through and rebuilds it
        written["d"] = store.write("d", "c", "output of d\n").uri
        assert sorted(raw.zrange("ovs:sessions", 0, -1)) == [b"a", b"b", b"c", b"d"]
        damage()  # a dry run writes nothing; cleanup rebuilds it and reports no leftover
        dry = store.cleanup(dry_run=True)
        assert dry.temporaries == 0 and dry.removed == 0 and raw.type("ovs:sessions") == b"string"
        report = store.cleanup()
        assert report.temporaries == 0 and report.removed == 0
        assert sorted(raw.zrange("ovs:sessions", 0, -1)) == [b"a", b"b", b"c", b"d"]
        assert sorted(r.resource.uri for r in store.records()) == sorted(written.values())
        for session, uri in written.items():
            assert store.read(session, uri).content == f"output of {session}\n"


def test_run_with_spill_to_a_server_gone_away_does_not_start_the_command(server, tmp_path):
    """Regression (red team V f04): ``run``/``arun`` with ``spill=`` on a Redis store whose server
    had stopped ran the command to its end, then raised StorageError when the output first
    spilled (its effects done, its exit code and output lost).  As the bash tool does, the
    store is pinged first: StorageError, and the command is not run."""
    import asyncio

    from overspill import arun, run

    with ToolOutputStore(url=server.url) as store:
        store.truncate("s", "warm", "the store was reached once")
        server.stop()
        for name, call in (("run", lambda command: run(command, spill=(store, "s", "c1"))),
                           ("arun", lambda command: asyncio.run(arun(command, spill=(store, "s", "c2"))))):
            marker = tmp_path / name
            failed = returns(lambda: call(f"touch {marker}; seq 1 100000"))
            assert isinstance(failed, StorageError) and server.address in str(failed), (name, failed)
            assert not marker.exists(), f"{name} ran the command on a store it could not reach"
        kept = run(f"touch {tmp_path / 'unspilled'}; seq 1 10")  # without spill nothing needs the store
        assert kept.exit_code == 0 and (tmp_path / "unspilled").exists()


@pytest.mark.parametrize("topology", ["server", "cluster"])
def test_a_damaged_pending_key_is_replaced_not_failing_small_writes(tmp_path, topology):
    """Regression (red team W f02): ``ovs:pending`` holding another type made every output
    smaller than one chunk fail to store ("WRONGTYPE": the publish's ZADD to it was raised,
    on one server from its pipeline, on a Cluster as a call of its own) until a cleanup
    ran.  It only lists writes in flight: a damaged one is replaced, as ``ovs:sessions``
    is rebuilt, and the write goes through."""
    with _damageable(tmp_path, topology) as (store, raw):
        raw.set("ovs:pending", "not a sorted set")
        small = store.write("s", "c1", "small output\n" * 1000)
        assert store.read("s", small.uri).content == "small output\n" * 1000
        assert raw.type("ovs:pending") in (b"zset", b"none")
        raw.delete("ovs:pending")
        raw.set("ovs:pending", "not a sorted set")
        big = store.write("s", "c2", "x" * (3 * 1024 * 1024))  # listed by its heartbeat first
        assert store.read("s", big.uri).content[:10] == "x" * 10
        assert raw.type("ovs:pending") in (b"zset", b"none")
        raw.set("ovs:pending", "not a sorted set")
        report = store.cleanup()
        assert report.removed == 0 and raw.type("ovs:pending") == b"none"
        assert sorted(r.resource.uri for r in store.records("s")) == sorted([small.uri, big.uri])


def test_status_of_an_output_another_process_removed_is_not_found(server):
    """Regression (red team W f03): ``status`` on Redis served the record it had cached for an
    output another process's cleanup (or eviction) had since removed, so ``wait``, ``kill``
    and grep's running check answered as if it still existed; the folder raises
    ResourceNotFoundError, as status's docstring says ("as read")."""
    from overspill.records import parse_uri

    with ToolOutputStore(url=server.url) as agent, ToolOutputStore(url=server.url) as other:
        uri = agent.write("s", "c", "kept\n" * 1000).uri
        assert agent.status("s", uri).resource.size == 5000  # cached by the write
        gone = agent.write("s", "c2", "removed\n" * 1000).uri
        agent.status("s", gone)
        other._backend.delete(parse_uri(gone))  # another process removes it
        with pytest.raises(ResourceNotFoundError):
            agent.status("s", gone)
        with pytest.raises(ResourceNotFoundError):
            agent.status("s", gone)  # and stays so
        assert agent.status("s", uri).resource.size == 5000
        other.cleanup(now=10**11)
        with pytest.raises(ResourceNotFoundError):
            agent.status("s", uri)


@pytest.mark.parametrize("topology", ["server", "cluster"])
def test_a_chunk_key_of_the_wrong_type_reads_as_not_found_not_a_storage_failure(tmp_path, topology):
    """Regression (red team W f04): a chunk key holding another type made ``read`` and
    ``grep`` raise StorageError (EIO, the CLI's exit 4 "storage failure"), while the same
    damage to the record key is ResourceNotFoundError ("a damaged record"): WRONGTYPE is
    damage, not an outage. Now both say the resource cannot be found as stored."""

    from overspill.backends._redis_keys import CHUNK_BYTES, chunk_key
    from overspill.records import parse_uri

    with _damageable(tmp_path, topology) as (store, raw):
        uri = store.write("s", "c", "".join(f"{i:08d}\n" for i in range(400_000))).uri
        damaged = chunk_key(parse_uri(uri), 1)
        raw.delete(damaged)
        raw.hset(damaged, "a", "b")
        assert store.read("s", uri, offset=0).content.startswith("00000000\n")  # chunk 0 is whole
        with pytest.raises(ResourceNotFoundError, match="damaged payload"):
            store.read("s", uri, offset=CHUNK_BYTES + 5)
        with pytest.raises(ResourceNotFoundError), store.view("s", uri):
            pass  # the whole payload, as grep scans it


@pytest.mark.parametrize("topology", ["server", "cluster"])
@pytest.mark.parametrize("damage", ["another type", "no expiry"])
def test_a_damaged_cleanup_lock_is_cleared_not_busy_for_ever(tmp_path, topology, damage):
    """Regression (red team W f05): ``ovs:cleanup-lock`` holding another type, or a value
    with no expiry, was never cleared (SET NX PX fails on any key): every cleanup reported
    busy for ever and every write needing an eviction waited a minute, then failed. A
    holder always sets it with an expiry: such a key is damage, removed as the lock is taken;
    a lock held by another process (a string with an expiry) is still respected."""
    with _damageable(tmp_path, topology) as (store, raw):
        if damage == "another type":
            raw.hset("ovs:cleanup-lock", "a", "b")
        else:
            raw.set("ovs:cleanup-lock", "left without an expiry")
        report = returns(store.cleanup)
        assert not isinstance(report, BaseException), report
        assert not report.busy
        assert raw.exists("ovs:cleanup-lock") == 0  # released after the cleanup
        raw.set("ovs:cleanup-lock", "another holder", px=60_000)
        assert store.cleanup().busy  # a live holder's lock stays
        assert raw.get("ovs:cleanup-lock") == b"another holder"


def test_an_empty_range_of_a_removed_output_is_not_found(tmp_path):
    """A read of no bytes (every page of an empty output, a page at the end) asked nothing of
    the server, so an output another process removed still read back as there."""
    from overspill.records import parse_uri

    with _damageable(tmp_path, "server") as (store, raw):
        empty = store.write("s", "c", "")
        full = store.write("s", "c", "whole\n")
        assert store.read("s", empty.uri).content == "" and store.read("s", full.uri, offset=6).content == ""
        for uri in (empty.uri, full.uri):
            raw.delete(*raw.keys(f"*{parse_uri(uri)}*"))
            with pytest.raises(ResourceNotFoundError):
                store.read("s", uri, offset=0 if uri == empty.uri else 6)


# Each is text Lua's tonumber() reads as a number and INCRBY/DECRBY refuse.
_NOT_REDIS_INTEGERS = ["nan", "inf", "1.5", "0x10", "1e3", " 5", "007", "99999999999999999999999",
                       "9223372036854775808"]


def test_a_usage_value_incrby_refuses_is_repaired_not_failing_writes_and_cleanups(server):
    """Regression (red team L8 f02, H8 f01): ``ovs:{usage}:bytes`` holding text Lua's
    tonumber() accepts but INCRBY refuses ("1.5", "nan", "0x10", "1e3", " 5", past 64 bits)
    was taken for a number, so every write and every cleanup failed ("value is not an
    integer") for every session, for ever.  The same for one id's bytes in
    ``ovs:{usage}:by-id`` ("1.5": a fractional DECRBY).  Damage is now what INCRBY refuses:
    the total is recounted from the per-id bytes, a bad per-id value counts as nothing."""
    with ToolOutputStore(url=server.url) as store:
        raw = store._backend.client
        kept = store.write("s", "c", b"x" * 100)

        def consistent() -> None:
            held = [int(value) for value in raw.hvals("ovs:{usage}:by-id")]
            assert int(raw.get("ovs:{usage}:bytes") or 0) == sum(held)

        for value in _NOT_REDIS_INTEGERS:
            raw.set("ovs:{usage}:bytes", value)
            written = store.write("s", "c", b"y" * 10)
            assert store.read("s", written.uri).content == "y" * 10, value
            consistent()
            raw.set("ovs:{usage}:bytes", value)
            assert not store.cleanup().busy, value
            consistent()
        # One id's bytes that DECRBY refuses, the id's output gone behind the store's back:
        # the cleanup that unaccounts it no longer fails, nor do the writes after it.
        gone = store.write("s", "c", b"z" * 10)
        gone_id = gone.uri.split("//")[1]
        raw.delete(f"ovs:{{{gone_id}}}:meta", f"ovs:{{{gone_id}}}:c:0")
        raw.hset("ovs:{usage}:by-id", gone_id, "1.5")
        store.cleanup()
        assert not raw.hexists("ovs:{usage}:by-id", gone_id)
        consistent()
        assert store.read("s", store.write("s", "c", b"w" * 10).uri).content == "w" * 10
        assert store.read("s", kept.uri).content == "x" * 100
        consistent()


@pytest.mark.parametrize("name", ["a%20b", "a+b", "x%0Ay", "tab%09", "%C3%A9t%C3%A9", "del%7F"])
def test_a_client_name_redis_refuses_is_a_config_error_before_connecting(name, subprocess_env):
    """Regression (red team H8 f04): ``?client_name=`` was only checked to be non-empty, so a
    name with a space, a control character or non-ASCII text (which the server's CLIENT SETNAME
    refuses) connected first and failed as StorageError "cannot connect" (CLI exit 4) instead
    of a ConfigError naming the option (exit 2), as for every other part of the URL.  The
    port has no server: the error comes before anything connects."""
    import socket
    import subprocess
    import sys

    from overspill import ConfigError
    from overspill.backends._redis_url import parse_redis_url

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"redis://127.0.0.1:{port}/0?client_name={name}"
    with pytest.raises(ConfigError, match="client_name"):
        ToolOutputStore(url=url)
    result = subprocess.run([sys.executable, "-m", "overspill", "ls", "--store-url", url], capture_output=True,
                            timeout=120, env=subprocess_env)
    assert result.returncode == 2 and b"client_name" in result.stderr, result
    # A name the server takes (printable ASCII, no spaces) is accepted as it is.
    assert parse_redis_url(f"redis://127.0.0.1:{port}/0?client_name=agent-7_{{x}}~!").options["client_name"] \
        == "agent-7_{x}~!"


@pytest.mark.parametrize("topology", ["server", "cluster"])
def test_a_damaged_session_set_is_replaced_by_the_next_write_and_leaves_no_pending_entry(tmp_path, topology):
    """Regression (red team L8 f05): ``ovs:session:S`` holding another type made every write
    of session S fail ("WRONGTYPE", raised on purpose by the publish) until a cleanup ran,
    and each failed write left its entry in ``ovs:pending`` (the abort's first failing step
    skipped the rest), while the same damage to ``ovs:sessions`` or ``ovs:pending`` was
    repaired by the write.  The write now removes it by cleanup's rule and starts a new set
    with its own entry; an abort's steps no longer depend on one another."""
    from datetime import timedelta

    with _damageable(tmp_path, topology) as (store, raw):
        before = store.write("S", "c", "before the damage\n").uri
        other = store.write("T", "c", "another session\n").uri
        for size in (100, 3 * 1024 * 1024):  # published in one round trip, and after a heartbeat
            raw.delete("ovs:session:S")
            raw.set("ovs:session:S", "not a sorted set")
            written = store.write("S", "c", b"y" * size)
            assert store.read("S", written.uri).content[:10] == "y" * 10
            assert raw.type("ovs:session:S") == b"zset"
            # The damaged key listed nothing; the new set lists what was written after it.
            assert [r.resource.uri for r in store.records("S")] == [written.uri]
            assert sorted(r.resource.uri for r in store.records()) == sorted([written.uri, other])
            assert raw.zcard("ovs:pending") == 0
        assert store.read("S", before).content == "before the damage\n"  # unlisted, not lost
        report = store.cleanup()
        assert report.removed == 0 and raw.type("ovs:session:S") == b"zset"
        assert [r.resource.uri for r in store.records("S")] == [written.uri]
        # A publish that fails (its quota count refused: a per-id value that would overflow was
        # the trigger, until such a value became damage the count drops) with its session's set
        # damaged before the abort: the abort still drops the pending entry.
        import redis as redis_client

        writer = store._backend.create("1a23bf000000BBBBBBBBBBBBBB")
        writer.write(memoryview(b"z" * 100))

        def refused(**_: object) -> None:
            raise redis_client.exceptions.ResponseError("increment or decrement would overflow")

        counting, store._backend._account_script = store._backend._account_script, refused
        try:
            with pytest.raises(StorageError):
                writer.publish("S", "c", "text/plain", None, retention=timedelta(days=1))
        finally:
            store._backend._account_script = counting
        assert raw.zscore("ovs:pending", writer.id) is not None
        raw.delete("ovs:session:S")
        raw.set("ovs:session:S", "damaged again")
        writer.abort()
        assert raw.zscore("ovs:pending", writer.id) is None


def test_a_usage_value_near_two_to_the_63_is_repaired_not_failing_writes(server):
    """Regression (review of red team L8 f02's fix): a total INCRBY takes but cannot add to
    ("9223372036854775807": it overflows; read back through Lua it wrapped negative, so no
    eviction recounted it) failed every write until a cleanup, and per-id values that large
    summed into a total no integer command takes.  A value past 2**53 is damage too."""
    with ToolOutputStore(url=server.url) as store:
        raw = store._backend.client
        for value in ["9223372036854775807", "9223372036854775500", "-9223372036854775808", "9007199254740993"]:
            raw.set("ovs:{usage}:bytes", value)
            written = store.write("s", "c", b"y" * 2000)
            assert store.read("s", written.uri).content == "y" * 2000, value
            assert 0 <= int(raw.get("ovs:{usage}:bytes")) < 2**53, value
        raw.hset("ovs:{usage}:by-id", mapping={"huge1": "9223372036854775807", "huge2": "9007199254740992",
                                               "huge3": "9007199254740992"})
        raw.set("ovs:{usage}:bytes", "damaged")
        written = store.write("s", "c", b"z" * 10)
        assert store.read("s", written.uri).content == "z" * 10
        store.cleanup()
        assert store.read("s", store.write("s", "c", b"w" * 10).uri).content == "w" * 10


_HOLDS_THE_CLEANUP_LOCK = r'''
import sys, time
from overspill import ToolOutputStore
from overspill.backends import _redis_sweep


def a_long_sweep(self):  # stands for a sweep of a large store, under the cleanup lock
    print("holding", flush=True)
    time.sleep(600)


_redis_sweep.RedisSweep.run = a_long_sweep
ToolOutputStore(url=sys.argv[1]).cleanup()
'''


def test_a_cleanup_lock_holder_killed_blocks_evictions_only_until_the_short_expiry(server, subprocess_env):
    """Regression (red team D f01): a process killed (kill -9, OOM) while it held
    ``ovs:cleanup-lock`` left it for its 10-minute expiry: every write needing room
    under ``max_total_bytes`` waited a minute and failed with StorageError, every
    cleanup was busy.  The lock now expires within ``LOCK_MS`` (20 s) unless its
    holder, alive, renews it."""
    import subprocess
    import sys

    from overspill.backends import _redis_keys

    config = {"tool_output": {"max_total_bytes": 1_000_000}}
    with ToolOutputStore(url=server.url, config=config) as store:
        for index in range(3):
            store.write("s", f"c{index}", b"x" * 300_000)
        child = subprocess.Popen([sys.executable, "-c", _HOLDS_THE_CLEANUP_LOCK, server.url], env=subprocess_env,
                                 stdout=subprocess.PIPE, text=True)
        try:
            assert child.stdout.readline().strip() == "holding"
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
            child.stdout.close()
        raw = store._backend.client
        assert 0 < raw.pttl("ovs:cleanup-lock") <= _redis_keys.LOCK_MS <= 30_000
        assert store.cleanup().busy  # still held, by nobody, for now
        outcome = returns(lambda: store.write("s", "big", b"y" * 300_000))  # needs the oldest evicted
        assert not isinstance(outcome, BaseException), outcome
        assert outcome.size == 300_000 and set(store.read("s", outcome.uri).content) == {"y"}


def test_the_cleanup_lock_is_renewed_while_held_and_a_lost_one_stops_the_work(server, monkeypatch):
    """Regression (red team D f01's fix): the short expiry is renewed by its holder, so
    work longer than it keeps the lock; a holder whose lock was lost (another token
    there) stops at its next step with a typed error, never deletes unlocked.  A take
    whose reply was lost is recognised by its own token when tried again."""
    import time

    from overspill.backends import _redis_keys

    monkeypatch.setattr(_redis_keys, "LOCK_MS", 4000)  # renewed every second
    with ToolOutputStore(url=server.url) as store, ToolOutputStore(url=server.url) as other:
        kept = store.write("s", "c", b"kept" * 1000)
        backend = store._backend
        raw = backend.client
        with backend.eviction_lock():
            token = raw.get("ovs:cleanup-lock")
            time.sleep(6)  # past the expiry: renewed meanwhile
            assert raw.get("ovs:cleanup-lock") == token
            assert other.cleanup().busy
            backend.still_locked()
            raw.set("ovs:cleanup-lock", "another holder", px=60_000)  # lost (as after a stall), then taken
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    backend.still_locked()
                except StorageError:
                    break
                time.sleep(0.1)
            with pytest.raises(StorageError, match="was lost"):
                backend.delete(kept.id)
        assert store.read("s", kept.uri).content == "kept" * 1000  # nothing removed unlocked
        assert raw.get("ovs:cleanup-lock") == b"another holder"  # not released: not this holder's
        raw.delete("ovs:cleanup-lock")
        assert backend._take("token of a take whose reply was lost")
        assert backend._take("token of a take whose reply was lost")  # tried again: its own lock
        assert not other._backend._take("another token")
        backend._release(keys=[_redis_keys.LOCK], args=["token of a take whose reply was lost"])


def _used_memory(client) -> int:
    return int(client.info("memory")["used_memory"])


@pytest.mark.parametrize("topology", ["server", "cluster"])
def test_cleanup_and_eviction_free_a_full_noeviction_server_red_team_y9_f01(tmp_path, topology):
    """Regression (red team Y9 f01): on a ``noeviction`` server over its ``maxmemory`` (the
    README's second guard, tripped), a write was refused as it should be, but cleanup failed
    too ("command not allowed when used memory > 'maxmemory'"), dry run included, and so did
    the quota's eviction: the cleanup lock's script (SET NX PX) and the recount's (SET) were
    refused, so the store could not free the memory that blocked it.  The sweep's and the
    eviction's scripts now declare ``allow-oom``; a writer's still do not."""
    import time
    from datetime import timedelta

    import redis

    from conftest import _redis_or_skip
    from overspill._quota import make_room

    _redis_or_skip()
    from redis_servers import start_cluster, start_server

    policy = ("--maxmemory-policy", "noeviction")
    servers = [start_server(*policy, parent=tmp_path)] if topology == "server" else start_cluster(
        3, parent=tmp_path, options=policy)
    url = servers[0].url if topology == "server" else f"redis+cluster://{servers[0].address}"
    nodes = [redis.Redis(port=node.port) for node in servers]
    try:
        with ToolOutputStore(url=url) as store, \
                ToolOutputStore(url=url, retention=timedelta(seconds=1)) as short:
            for index in range(6):
                store.write("s", f"c{index}", b"%06d line\n" % index * 300_000)  # 3.6 MB each
            for node in nodes:  # every node (the lock's and the total's too) well over its limit
                node.config_set("maxmemory", str(_used_memory(node) // 2))
            for size in (3_000_000, 100):  # the second guard holds: streamed, and published by the script
                with pytest.raises(StorageError, match="maxmemory"):
                    store.write("s", "refused", b"x" * size)
            assert len(store.records("s")) == 6
            later = time.time() + 60
            dry = short.cleanup(now=later, dry_run=True)
            assert dry.removed == 6 and not dry.busy and len(store.records("s")) == 6
            evicted = make_room(store._backend, 8_000_000)  # the quota's eviction, under the cleanup lock
            assert evicted.removed == 4 and len(store.records("s")) == 2
            report = short.cleanup(now=later)
            assert report.removed == 2 and not report.busy and store.records("s") == []
            assert not store._backend.client.exists("ovs:cleanup-lock")  # released
            if topology == "server":  # the memory was freed: writes work again
                assert _used_memory(nodes[0]) < int(nodes[0].config_get("maxmemory")["maxmemory"])
                written = store.write("s", "after", b"y" * 3_000_000)
                assert store.read("s", written.uri, limit=10).content == "y" * 10
    finally:
        for client in nodes:
            client.close()
        for node in servers:
            node.stop()


def test_freeing_scripts_fall_back_on_a_server_that_refuses_their_shebang_red_team_y9_f01(server):
    """Regression (red team Y9 f01's fix): the ``allow-oom`` shebang is Redis 7's; a
    server before it reads '#' as a Lua syntax error, and a later one may refuse a flag.
    Such a server runs the same script without the shebang, as before; any other error
    of the script is still raised."""
    import redis

    from overspill.backends._redis_keys import RELEASE, FreeingScript

    client = redis.Redis(port=server.port)
    try:
        # '#lua' is no shebang to Redis 7: the Lua compile error a server before 7 gives for '#!lua'.
        for refused in ("#lua flags=allow-oom\n", "#!lua flags=allow-oom,no-such-flag\n"):
            script = FreeingScript(client, RELEASE, shebang=refused)
            client.set("lock", "mine")
            assert script(keys=["lock"], args=["not mine"]) == 0
            assert script(keys=["lock"], args=["mine"]) == 1 and not client.exists("lock")
        client.hset("lock", "a", "b")
        with pytest.raises(redis.exceptions.ResponseError, match="WRONGTYPE"):
            FreeingScript(client, RELEASE)(keys=["lock"], args=["mine"])
    finally:
        client.close()


def test_a_dry_run_cleanup_takes_no_lock_and_works_for_a_read_only_user_red_team_y9_f01(server, subprocess_env):
    """Regression (red team Y9 f01): ``cleanup --dry-run`` took the cleanup lock (a script
    that writes), so a read-only ACL user's dry run failed ("no permissions to run the
    'evalsha' command", exit 4) and one beside a running sweep said busy.  A dry run
    only reads: it takes no lock now.  A real cleanup by that user still fails, typed."""
    import subprocess
    import sys
    import time

    with ToolOutputStore(url=server.url) as store:
        uri = store.write("s", "c", b"z" * 100_000).uri
        raw = store._backend.client
        raw.execute_command("ACL", "SETUSER", "reader", "on", ">secret", "~*", "&*", "+@read", "+@connection",
                            "-@write", "-@scripting")
        reader_url = f"redis://reader:secret@{server.address}/0"
        later = time.time() + 30 * 86400
        with ToolOutputStore(url=reader_url) as reader:
            dry = reader.cleanup(now=later, dry_run=True)
            assert dry.removed == 1 and dry.removed_ids[0] in uri and not dry.busy
            with pytest.raises(StorageError, match="no permissions"):
                reader.cleanup(now=later)
        result = subprocess.run([sys.executable, "-m", "overspill", "cleanup", "--dry-run", "--store-url", reader_url],
                                capture_output=True, text=True, timeout=120, env=subprocess_env)
        assert result.returncode == 0, result.stderr
        raw.set("ovs:cleanup-lock", "another holder", px=60_000)  # a sweep running elsewhere
        dry = store.cleanup(now=later, dry_run=True)
        assert dry.removed == 1 and not dry.busy
        assert store.cleanup(now=later).busy  # a real one still waits its turn
        assert store.read("s", uri, limit=5).content == "zzzzz"


@pytest.mark.parametrize("topology", ["server", "cluster"])
def test_a_refused_password_is_a_permission_error_not_a_refused_connection_red_team_h11(tmp_path, topology):
    """Regression (red team H11): a wrong password was told as ``[Errno 111]`` (ECONNREFUSED),
    though the server answered and refused the credentials: it is EACCES now, the password
    still shown as ``***``; on a Cluster too (review R5: its client raises its own exception,
    the refusal as the cause, and the error said EIO)."""
    import errno

    import redis as redis_client
    from conftest import _redis_or_skip

    _redis_or_skip()
    from redis_servers import start_cluster, start_server

    servers = [start_server(parent=tmp_path)] if topology == "server" else start_cluster(3, parent=tmp_path)
    try:
        for node in servers:
            with redis_client.Redis(host=node.address.rpartition(":")[0],
                                    port=int(node.address.rpartition(":")[2])) as raw:
                raw.execute_command("ACL", "SETUSER", "h11user", "on", ">right", "~*", "&*", "+@all")
        scheme = "redis" if topology == "server" else "redis+cluster"
        suffix = "/0" if topology == "server" else ""
        with ToolOutputStore(url=f"{scheme}://h11user:right@{servers[0].address}{suffix}") as store:
            assert store.records() == []  # the right password is let in
        with pytest.raises(StorageError) as caught:
            with ToolOutputStore(url=f"{scheme}://h11user:wrong@{servers[0].address}{suffix}") as store:
                store.records()
        assert caught.value.errno == errno.EACCES, caught.value
        assert "wrong" not in str(caught.value) and "***" in str(caught.value)
    finally:
        for node in servers:
            node.stop()


def test_a_surrogate_pair_session_is_refused_and_lone_surrogates_stay_their_own_session(server):
    """Regression (red team B10 f01), on Redis: session "\\ud83d\\ude00" (a high then a low
    surrogate) was written; a fresh store (another process) denied the writer its own output
    and let session "\\U0001F600" read it, and neither listed it. The write is refused as
    on a folder; a lone surrogate stays a session of its own, readable by it alone."""
    with ToolOutputStore(url=server.url) as writer:
        with pytest.raises(ValueError, match="session_id holds a surrogate pair"):
            writer.write("\ud83d\ude00", "c", b"secret\n" * 10)
        with pytest.raises(ValueError, match="tool_call_id holds a surrogate pair"):
            writer.truncate("s", "\ud83d\ude00", b"secret\n" * 100_000)
        assert writer.records() == []
        uri = writer.write("\udc80", "\ud800", b"secret\n" * 10, name="\ude00\ud83d").uri
    with ToolOutputStore(url=server.url) as fresh:  # no cached record
        assert fresh.read("\udc80", uri, limit=7).content == "secret\n"
        (record,) = fresh.records("\udc80")
        assert (record.session_id, record.tool_call_id, record.resource.name) == ("\udc80", "\ud800", "\ude00\ud83d")
        for other in ("\ufffd", "\U0001F600", "\udc80\udc80"):
            with pytest.raises(AccessDeniedError, match="not found in this session"):
                fresh.read(other, uri)
            assert fresh.records(other) == []


class _ReplyDropper:
    """A loopback TCP proxy in front of a Redis server that loses replies: for each
    rule ``(marker, times)`` in turn, the next ``times`` commands whose bytes hold
    ``marker`` are passed on to the server, and their connection is then dropped
    before the reply comes back (the command ran; the client only lost its answer).
    Every other byte goes through as it is."""

    def __init__(self, port: int) -> None:
        import socket

        self._target = port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._rules: list[list] = []
        self._sockets: list = []
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def arm(self, *rules: tuple[bytes, int]) -> None:
        with self._lock:
            self._rules = [[marker, times] for marker, times in rules]

    def dropped_all(self) -> bool:
        """Whether every drop armed took place."""
        with self._lock:
            return not self._rules

    def _accept(self) -> None:
        import socket

        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            server = socket.create_connection(("127.0.0.1", self._target))
            state = {"drop": False}
            with self._lock:
                self._sockets += [client, server]
            for target in (lambda: self._forward(client, server, state), lambda: self._back(server, client, state)):
                thread = threading.Thread(target=target, daemon=True)
                thread.start()
                self._threads.append(thread)

    def _forward(self, client, server, state) -> None:
        with contextlib.suppress(OSError):
            while data := client.recv(1 << 20):
                with self._lock:
                    if self._rules and self._rules[0][0] in data:
                        state["drop"] = True  # set before the server can answer
                        self._rules[0][1] -= 1
                        if not self._rules[0][1]:
                            self._rules.pop(0)
                server.sendall(data)
        self._drop(client, server)

    def _back(self, server, client, state) -> None:
        with contextlib.suppress(OSError):
            while (data := server.recv(1 << 20)) and not state["drop"]:
                client.sendall(data)
        self._drop(client, server)

    @staticmethod
    def _drop(*sockets) -> None:
        import socket

        for each in sockets:
            with contextlib.suppress(OSError):
                each.shutdown(socket.SHUT_RDWR)
            each.close()

    def close(self) -> None:
        self._drop(self._listener)  # shut down, so that the accept waiting on it returns
        with self._lock:
            sockets = list(self._sockets)
        self._drop(*sockets)
        for thread in self._threads:
            thread.join(10)


@pytest.fixture
def dropper(server):
    proxy = _ReplyDropper(server.port)
    yield proxy
    proxy.close()


def _sha(script: str) -> bytes:
    import hashlib

    return hashlib.sha1(script.encode()).hexdigest().encode()


def _metas(raw) -> set:
    return set(raw.scan_iter(match="ovs:{*}:meta"))


def _resource_keys(raw) -> set:
    return set(raw.scan_iter(match="ovs:{*}:*"))


@pytest.mark.parametrize("lost", [1, 2], ids=["reply lost, resent", "resent reply lost too"])
@pytest.mark.parametrize("size", [200_000, 3_000_000])
def test_a_publish_whose_reply_is_lost_is_published_listed_and_counted_once_red_team_g10_f01(
        server, dropper, size, lost):
    """Regression (red team G10 f01): the client resends a command once after a dropped
    connection; a publish script that had run found its own record on the resend and
    answered "taken", so the write raised StorageError and abort() unlisted and uncounted
    the published output (and for several chunks unlinked them under the live record).
    Now the resend recognises its own record, and a publish with no reply at all (the
    resend's lost too) is looked up: the write succeeds, listed once, counted once."""
    from overspill.backends._redis_keys import PUBLISH

    with ToolOutputStore(url=dropper.url) as store, ToolOutputStore(url=server.url) as direct:
        raw = direct._backend.client
        store.write("warm", "c", b"w" * 10)  # the scripts loaded, a connection open
        before, baseline = _metas(raw), direct._backend.usage()
        dropper.arm((_sha(PUBLISH), lost))
        resource = store.write("s", "c", b"p" * size)
        assert dropper.dropped_all()
        (record,) = direct.records("s")
        assert record.resource.uri == resource.uri and _metas(raw) - before == {f"ovs:{{{record.id}}}:meta".encode()}
        assert direct.read("s", resource.uri, offset=size - 5).content == "ppppp"
        counted = size + direct._backend.record_bytes(record)
        assert direct._backend.usage() == baseline + counted
        with direct._backend.eviction_lock():
            assert direct._backend.recount() == baseline + counted
        assert raw.zcard("ovs:pending") == 0


def test_an_account_whose_reply_is_lost_counts_the_bytes_once_red_team_g10_f01(server, dropper):
    """Regression (red team G10 f01): the quota's ACCOUNT script added a delta, so when its
    reply was lost the client's resend counted the output's bytes twice, in the total and
    in the output's own count.  It now sets the output's count, the total moved by the
    difference: run twice, counted once."""
    from overspill.backends._redis_keys import ACCOUNT, BY_ID

    with ToolOutputStore(url=dropper.url) as store, ToolOutputStore(url=server.url) as direct:
        raw = direct._backend.client
        store.write("warm", "c", b"w" * 10)
        baseline = direct._backend.usage()
        dropper.arm((_sha(ACCOUNT), 1))
        store.write("s", "c", b"a" * 200_000)
        assert dropper.dropped_all()
        (record,) = direct.records("s")
        counted = 200_000 + direct._backend.record_bytes(record)
        assert int(raw.hget(BY_ID, record.id)) == counted
        assert direct._backend.usage() == baseline + counted


@pytest.mark.parametrize("size", [200_000, 3_000_000])
def test_a_publish_never_answered_fails_with_nothing_left_red_team_g10_f01(server, dropper, size):
    """Regression (red team G10 f01): when no reply to the publish came at all (the resend's
    lost too, and the look-up of its record), the write failed and abort() removed the
    output's chunks, index entry and count but not the record the script had set: a
    published output no listing, quota or cleanup saw, for the retention, pointing at
    deleted chunks.  The write still fails, and now nothing of it is left."""
    from overspill.backends._redis_keys import PUBLISH

    with ToolOutputStore(url=dropper.url) as store, ToolOutputStore(url=server.url) as direct:
        raw = direct._backend.client
        store.write("warm", "c", b"w" * 10)
        before, baseline = _resource_keys(raw), direct._backend.usage()
        dropper.arm((_sha(PUBLISH), 2), (b"$3\r\nGET\r\n", 2))
        with pytest.raises(StorageError, match="cannot publish"):
            store.write("s", "c", b"p" * size)
        assert dropper.dropped_all()
        assert _resource_keys(raw) == before  # no record, no chunk
        assert direct.records("s") == [] and raw.zcard("ovs:pending") == 0
        assert direct._backend.usage() == baseline
        with direct._backend.eviction_lock():
            assert direct._backend.recount() == baseline
        assert store.write("s", "c", b"fine").size == 4  # the store goes on


def test_a_dead_writers_count_goes_at_the_recount_when_the_drop_reply_is_lost_red_team_g10_f01(
        server, dropper, monkeypatch):
    """Regression (red team G10 f01, the eviction's scripts): the recount unaccounted the
    dead writers the DROP_DEAD script said it dropped; resent after a lost reply, the
    script found their entries gone and named none, so their bytes stayed counted (live
    outputs evicted for memory already freed) until the next recount.  What is left
    after the script decides now."""
    from datetime import timedelta
    import time

    from overspill.backends import _redis_keys
    from overspill.backends import redis as backend_module
    from overspill.records import new_id

    monkeypatch.setattr(backend_module, "_HEARTBEAT_SECONDS", 3600.0)  # one beat, at the first chunk
    monkeypatch.setattr(_redis_keys, "PARTIAL_TTL", timedelta(milliseconds=300))
    with ToolOutputStore(url=server.url) as writing, ToolOutputStore(url=dropper.url) as evicting:
        raw = writing._backend.client
        writing.write("s", "kept", b"k" * 1000)
        with evicting._backend.eviction_lock():
            baseline = evicting._backend.recount()
        dead = writing._backend.create(new_id())
        dead.write(memoryview(b"x" * (9 * backend_module.CHUNK_BYTES)))  # past ACCOUNT_STEP: counted
        writing._backend.delist(dead)  # as in a process that was killed: nothing of it left here
        assert evicting._backend.usage() >= baseline + 8 * backend_module.CHUNK_BYTES
        deadline = time.monotonic() + 30
        while raw.exists(f"ovs:{{{dead.id}}}:c:0".encode()) and time.monotonic() < deadline:
            time.sleep(0.1)
        dropping = _redis_keys.ALLOW_OOM + _redis_keys.DROP_DEAD
        raw.script_load(dropping)  # so that the reply lost is a run's, not NOSCRIPT's
        dropper.arm((_sha(dropping), 1))
        with evicting._backend.eviction_lock():
            assert evicting._backend.recount() == baseline
        assert dropper.dropped_all()
        assert raw.zscore(b"ovs:pending", dead.id) is None


def test_a_publish_whose_reply_is_lost_on_a_cluster_is_looked_up_red_team_g10_f01(redis_cluster):
    """Regression (red team G10 f01, the Cluster client): it resends nothing after a dropped
    connection (no retry is configured there), so a publish that ran and lost its reply
    failed the write, and abort() unlisted and uncounted the published output and unlinked
    its chunks.  Now the record is looked up: it is this write's, and the write succeeds.
    The reply is lost here by the script call raising after it ran (a Cluster's nodes
    advertise their own addresses, so no proxy stands between it and this client)."""
    import redis.exceptions

    from overspill.backends._redis_keys import BY_ID

    with ToolOutputStore(url=f"redis+cluster://{redis_cluster[0].address}") as store:
        backend = store._backend
        real = backend.publish_script

        def reply_lost(*args, **kwargs):
            real(*args, **kwargs)
            raise redis.exceptions.ConnectionError("Connection closed by server.")

        backend.publish_script = reply_lost
        try:
            resource = store.write("g10-cluster", "c", b"q" * 3_000_000)
        finally:
            backend.publish_script = real
        (record,) = store.records("g10-cluster")
        assert record.resource.uri == resource.uri
        assert store.read("g10-cluster", resource.uri, offset=2_999_995).content == "qqqqq"
        assert int(backend.client.hget(BY_ID, record.id)) == 3_000_000 + backend.record_bytes(record)
        backend.delete(record.id)  # the Cluster is shared by the run's other tests
