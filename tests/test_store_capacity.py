"""How much the store keeps: the per-output cap (max_stored_bytes), the folder's
quota (max_total_bytes, oldest evicted first) and the counts the marker gives."""

from __future__ import annotations

import json
import threading

import pytest

from overspill import ConfigError, Limits, ResourceNotFoundError, ToolOutputStore
from overspill.config import MAX_STORED_BYTES, MAX_TOTAL_BYTES, resolve_limits
from overspill.records import parse_record, record_json

MIB = 1024 * 1024


def open_store(path, **limits) -> ToolOutputStore:
    return ToolOutputStore(path, config={"tool_output": limits}, durable=False)


def numbered(count: int, start: int = 0) -> list[bytes]:
    """Chunks of numbered lines, 1000 lines a chunk: every line says where it is."""
    return [b"".join(b"line %08d\n" % i for i in range(first, min(first + 1000, start + count)))
            for first in range(start, start + count, 1000)]


def record_document(store: ToolOutputStore, resource) -> dict:
    return json.loads((store.directory / f"{resource.id}.json").read_bytes())


def payload(store: ToolOutputStore, resource) -> bytes:
    return (store.directory / f"{resource.id}.txt").read_bytes()


# ------------------------------------------------------------------ configuration
def test_the_new_limits_have_defaults_config_keys_and_environment_variables(tmp_path):
    assert Limits().max_stored_bytes == MAX_STORED_BYTES == 1024**3
    assert Limits().max_total_bytes == MAX_TOTAL_BYTES == 4 * 1024**3
    limits = resolve_limits({"tool_output": {"max_stored_bytes": 5 * MIB, "max_total_bytes": 50 * MIB}}, environ={})
    assert (limits.max_stored_bytes, limits.max_total_bytes) == (5 * MIB, 50 * MIB)
    environment = {"OVERSPILL_MAX_STORED_BYTES": "7000", "OVERSPILL_MAX_TOTAL_BYTES": "9000"}
    assert resolve_limits(None, environ=environment) == Limits(max_stored_bytes=7000, max_total_bytes=9000)
    assert resolve_limits({"tool_output": {"max_total_bytes": 8000}}, environ=environment).max_total_bytes == 8000
    with pytest.raises(ConfigError, match="max_stored_bytes"):
        resolve_limits({"tool_output": {"max_stored_bytes": 0}}, environ={})
    with pytest.raises(ConfigError, match="OVERSPILL_MAX_TOTAL_BYTES"):
        resolve_limits(None, environ={"OVERSPILL_MAX_TOTAL_BYTES": "4GiB"})


def test_a_stored_copy_too_large_for_its_record_is_refused_at_configuration(tmp_path):
    """Red team f10: with 16 KiB checksum chunks, a stored copy of 128 GiB or more got a record
    over MAX_RECORD_BYTES, which its own reader refuses: write() returned a URI that was "not
    found". max_stored_bytes is now at most MAX_PAYLOAD_BYTES, whose largest record fits."""
    from overspill.records import (CHECKSUM_CHUNK, MAX_METADATA_BYTES, MAX_PAYLOAD_BYTES, MAX_RECORD_BYTES, Record,
                                   Resource, new_id, record_size, uri_for)

    # The largest record overspill writes: the largest payload, every string at its longest, escaped.
    longest = "\u0001" * MAX_METADATA_BYTES
    largest = Record(Resource(uri_for(new_id()), longest, MAX_PAYLOAD_BYTES, longest), longest, longest,
                     1_765_000_000_000, bytes(4), CHECKSUM_CHUNK, (2**63, MAX_PAYLOAD_BYTES), 2**63)
    assert record_size(largest, CHECKSUM_CHUNK) <= MAX_RECORD_BYTES
    assert resolve_limits({"tool_output": {"max_stored_bytes": MAX_PAYLOAD_BYTES}}, environ={}).max_stored_bytes \
        == MAX_PAYLOAD_BYTES
    too_large = {"tool_output": {"max_stored_bytes": MAX_PAYLOAD_BYTES + 1, "max_total_bytes": 400 * 1024**3}}
    with pytest.raises(ConfigError, match=r"tool_output.max_stored_bytes from config must be at most 68719476736"):
        ToolOutputStore(tmp_path, config=too_large)
    with pytest.raises(ConfigError, match=r"OVERSPILL_MAX_STORED_BYTES \(environment\) must be at most"):
        resolve_limits(None, environ={"OVERSPILL_MAX_STORED_BYTES": str(200 * 1024**3)})


# ------------------------------------------------------------------ the per-output cap
def test_a_stream_past_the_cap_stores_its_start_and_previews_its_true_end(tmp_path):
    store = open_store(tmp_path, max_stored_bytes=3 * MIB)
    chunks = numbered(1_000_000)  # 14 MB
    whole = b"".join(chunks)
    result = store.truncate_stream("s", "c", iter(chunks))
    assert result.truncated and result.resource.size == 3 * MIB
    assert payload(store, result.resource) == whole[: 3 * MIB]
    assert record_document(store, result.resource)["capture"] == {"total": len(whole), "stored": 3 * MIB}
    assert f"the stored copy holds the first {3 * MIB} of {len(whole)} bytes" in result.content
    assert "(1000000 lines in all)" in result.content and result.lines == 1000000
    # The tail is the output's true end, not the end of the stored copy.
    assert result.content.endswith("line 00999998\nline 00999999\n")
    assert result.content.startswith("line 00000000\nline 00000001\n")
    # The stored copy reads back (verified) and says what it is.
    assert store.read("s", result.resource.uri, offset=3 * MIB - 10).content == whole[3 * MIB - 10 : 3 * MIB].decode()
    assert store.records()[0].capture == (len(whole), 3 * MIB)


def test_a_stream_just_past_the_cap_keeps_its_whole_tail(tmp_path):
    store = open_store(tmp_path, max_stored_bytes=2 * MIB)
    chunks = [b"x" * (2 * MIB - 5) + b"\n", b"tail\n" * 3]
    result = store.truncate_stream("s", "c", iter(chunks))
    assert result.resource.size == 2 * MIB and result.content.endswith("\ntail\ntail\ntail\n")
    assert record_document(store, result.resource)["capture"] == {"total": 2 * MIB + 11, "stored": 2 * MIB}


@pytest.mark.parametrize("size", [2 * MIB - 1, 2 * MIB])
def test_at_the_cap_the_output_is_stored_whole(tmp_path, size):
    store = open_store(tmp_path, max_stored_bytes=2 * MIB)
    data = bytes(i % 251 for i in range(size))
    result = store.truncate_stream("s", "c", [data[: size // 3], data[size // 3 :]])
    assert payload(store, result.resource) == data and "capture" not in record_document(store, result.resource)
    assert f"({size} bytes, " in result.content and "the stored copy holds" not in result.content


def test_write_and_truncate_are_capped_too(tmp_path):
    store = open_store(tmp_path, max_stored_bytes=MIB)
    data = b"".join(numbered(200_000))
    written = store.write("s", "c", data)
    assert written.size == MIB and payload(store, written) == data[:MIB]
    assert record_document(store, written)["capture"] == {"total": len(data), "stored": MIB}
    text = data.decode()
    truncated = store.truncate("s", "c", text)
    assert truncated.resource.size == MIB and truncated.content.endswith("line 00199999\n")
    assert f"holds the first {MIB} of {len(data)} bytes" in truncated.content
    streamed = store.write_stream("s", "c", iter(numbered(200_000)))
    assert streamed.size == MIB


def test_records_count_lines_as_people_do(tmp_path):
    store = open_store(tmp_path)
    for content, lines in ((b"1\n2\n", 2), (b"1\n2", 2), (b"x", 1), (b"", 0), (b"\n\n", 2)):
        store.write("s", "c", content)
        assert store.records()[-1].lines == lines
    streamed = store.truncate_stream("s", "c", iter(numbered(5000)), max_lines=10)
    assert streamed.lines == store.records()[-1].lines == 5000 and "5000 lines in all)" in streamed.content
    document = record_document(store, streamed.resource)
    assert document["lines"] == 5000
    with pytest.raises(ResourceNotFoundError, match="lines"):
        parse_record(json.dumps({**document, "lines": -1}).encode(), streamed.resource.id)
    del document["lines"]
    assert parse_record(json.dumps(document).encode(), streamed.resource.id).lines is None  # older records


def test_records_with_a_capture_round_trip_and_bad_ones_are_refused(tmp_path):
    store = open_store(tmp_path, max_stored_bytes=1000)
    resource = store.write("s", "c", b"y" * 5000)
    record = store.records()[0]
    assert parse_record(record_json(record), resource.id) == record and record.capture == (5000, 1000)
    document = record_document(store, resource)
    for bad in ({"total": 999, "stored": 1000}, {"total": 5000, "stored": 999}, {"total": "5000", "stored": 1000},
                [5000, 1000]):
        with pytest.raises(ResourceNotFoundError, match="capture"):
            parse_record(json.dumps({**document, "capture": bad}).encode(), resource.id)


# ------------------------------------------------------------------ the folder's quota
def folder_bytes(store: ToolOutputStore) -> int:
    return sum(path.stat().st_size for path in store.directory.iterdir() if path.is_file())


def test_the_quota_evicts_the_oldest_first_across_sessions_and_stores(tmp_path):
    quota = 2 * MIB
    first = open_store(tmp_path, max_total_bytes=quota)
    second = open_store(tmp_path, max_total_bytes=quota)
    written = []
    for index in range(6):  # alternating stores and sessions, 600 kB each
        store = (first, second)[index % 2]
        session = f"session-{index % 2}"
        written.append((store, session, store.write(session, f"call-{index}", bytes([65 + index]) * 600_000)))
        assert folder_bytes(first) <= quota
    survivors = {record.id for record in first.records()}
    # 3 x 600 kB fit in 2 MiB with their records; the three oldest went, in order.
    assert survivors == {resource.id for _, _, resource in written[3:]}
    for store, session, resource in written[:3]:
        with pytest.raises(ResourceNotFoundError):
            store.read(session, resource.uri)
    for store, session, resource in written[3:]:
        assert store.read(session, resource.uri, limit=10).content == chr(65 + written.index((store, session, resource))) * 10


def test_an_output_larger_than_the_quota_is_capped_to_it(tmp_path):
    store = open_store(tmp_path, max_total_bytes=MIB, max_stored_bytes=10 * MIB)
    old = store.write("s", "old", b"o" * 100_000)
    result = store.truncate_stream("s", "c", iter(numbered(300_000)))
    # Capped to the quota less its record's room (issue 19 item 18: payload and record fit together).
    assert MIB - 2048 < result.resource.size < MIB and "holds the first" in result.content
    assert folder_bytes(store) <= MIB
    # Room for it: the older output went.
    assert [record.id for record in store.records()] == [result.resource.id]
    with pytest.raises(ResourceNotFoundError):
        store.read("s", old.uri)


def test_a_reader_racing_the_eviction_gets_not_found_never_other_bytes(tmp_path):
    quota = 3 * MIB
    writer_store = open_store(tmp_path, max_total_bytes=quota)
    reader_store = open_store(tmp_path, max_total_bytes=quota)
    expected: dict[str, bytes] = {}
    lock = threading.Lock()
    stop = threading.Event()
    problems: list[str] = []
    outcomes = {"read": 0, "gone": 0}

    def read_continually() -> None:
        while not stop.is_set():
            with lock:
                items = list(expected.items())
            for uri, data in items:
                for offset in (0, 250_000, 499_990):
                    try:
                        page = reader_store.read("s", uri, offset=offset, limit=1000)
                    except ResourceNotFoundError:
                        outcomes["gone"] += 1
                        continue
                    outcomes["read"] += 1
                    if page.content.encode() != data[page.offset : page.offset + len(page.content.encode())]:
                        problems.append(f"{uri} at {offset}: other bytes")

    reader = threading.Thread(target=read_continually)
    reader.start()
    try:
        for index in range(40):
            data = bytes([48 + index % 40]) * 500_000
            resource = writer_store.write("s", f"c{index}", data)
            with lock:
                expected[resource.uri] = data
    finally:
        stop.set()
        reader.join()
    assert problems == [] and outcomes["read"] > 0, outcomes
    assert folder_bytes(writer_store) <= quota and len(writer_store.records()) < 40
def test_two_writers_never_both_take_the_same_room(tmp_path):
    # Regression (red team f04): each writer checked the quota, then published
    # after letting go of every lock, so two writers that both found room for
    # one of them published both, over max_total_bytes.  Forced here: the
    # second writer looks for room between the first one's look and its publish.
    quota = 1_000_000
    first = open_store(tmp_path, max_total_bytes=quota)
    second = open_store(tmp_path, max_total_bytes=quota)
    second_looking = threading.Event()
    outcome: dict[str, object] = {}

    def write_second() -> None:
        try:
            outcome["second"] = second.write("s", "second", b"b" * 600_000)
        except BaseException as error:  # reported by the assertion below
            outcome["second"] = error

    def marked(real):
        def call(*args, **kwargs):
            try:
                return real(*args, **kwargs)
            finally:
                second_looking.set()
        return call

    def marking(real):
        def call(*args, **kwargs):
            second_looking.set()
            return real(*args, **kwargs)
        return call

    # The second writer is looking for room once it reads the usage, or once it
    # asks to hold the running total (where a look waits for the first's publish).
    second._backend.usage = marked(second._backend.usage)
    if hasattr(second._backend, "tally"):
        second._backend.tally = marking(second._backend.tally)
    real_usage = first._backend.usage
    thread = threading.Thread(target=write_second)

    def usage_then_second_looks() -> int:
        first._backend.usage = real_usage
        used = real_usage()
        thread.start()
        assert second_looking.wait(60), "the second writer never looked for room"
        return used

    first._backend.usage = usage_then_second_looks
    older = first.write("s", "first", b"a" * 600_000)
    thread.join()
    newer = outcome["second"]
    assert not isinstance(newer, BaseException), newer
    assert folder_bytes(first) <= quota
    # The first published first; the second found it there and evicted it.
    assert [record.id for record in first.records()] == [newer.id]
    with pytest.raises(ResourceNotFoundError):
        first.read("s", older.uri)


# ---------------------------------------------------------------- the running total (issue 21, goal 9)
def usage_file(path) -> int:
    return int((path / "tool-output" / "index" / "usage").read_text())


def test_a_write_under_the_quota_scans_nothing_and_keeps_the_total_exact(tmp_path, monkeypatch):
    import os

    from overspill.backends._sweep import folder_bytes

    store = open_store(tmp_path, max_total_bytes=10**9)
    for number in range(20):
        store.write("s", "c", b"x" * (number + 1))
    scans = []
    real_scandir = os.scandir
    monkeypatch.setattr(os, "scandir", lambda *args: scans.append(args) or real_scandir(*args))
    for number in range(20):
        store.write("s", "c", b"y" * 1000)
    monkeypatch.undo()
    assert scans == []  # the quota was checked against the running total, not the folder
    store.cleanup()  # nothing expired, nothing removed
    assert usage_file(tmp_path) == folder_bytes(store.directory)


def test_the_total_follows_deletes_and_is_corrected_by_each_sweep(tmp_path):
    from overspill.backends._sweep import folder_bytes

    store = open_store(tmp_path, max_total_bytes=3000)
    for chunk in numbered(12):
        store.write("s", "c", chunk)
    # Over 3000 bytes the oldest went (an exact count, then eviction); the total agrees.
    assert usage_file(tmp_path) == folder_bytes(store.directory) <= 3000
    (store.directory / "planted-by-hand").write_bytes(b"z" * 500)  # behind the total's back
    assert usage_file(tmp_path) < folder_bytes(store.directory)
    store.cleanup()
    assert usage_file(tmp_path) == folder_bytes(store.directory)


def test_a_lost_or_damaged_total_is_caught_up_from_the_folder(tmp_path):
    from overspill.backends._sweep import folder_bytes

    store = open_store(tmp_path, max_total_bytes=10**9)
    store.write("s", "c", b"a" * 100)
    for damage in (None, b"not a number\n"):
        path = tmp_path / "tool-output" / "index" / "usage"
        if damage is None:
            path.unlink()
        else:
            path.write_bytes(damage)
        store.write("s", "c", b"b" * 100)
        assert usage_file(tmp_path) == folder_bytes(store.directory)


def test_a_durable_payload_is_flushed_before_the_quota_lock_is_taken(tmp_path, monkeypatch):
    # Review of the f04 fix: the publish runs under the running total's lock, which every other
    # writer (in any process) waits on; a large payload's fsync must not run under it.
    import fcntl
    import os

    store = ToolOutputStore(tmp_path, config={"tool_output": {"max_total_bytes": 10_000_000}})
    store.truncate("s", "warm", "y\n" * 50_000)  # the running total's file exists
    usage = tmp_path / "tool-output" / "index" / "usage"
    data = "x\n" * 60_000
    seen: list[bool] = []
    real_fsync = os.fsync

    def watching(fd: int) -> None:
        if os.fstat(fd).st_size == len(data):  # the payload's fsync
            probe = os.open(usage, os.O_RDWR)
            try:
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
                seen.append(True)  # nobody held the total
            except BlockingIOError:
                seen.append(False)
            finally:
                os.close(probe)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", watching)
    result = store.truncate("s", "big", data)
    assert result.resource is not None and seen == [True]


# ------------------------------------------------------------------ red team E7
def test_a_write_that_must_evict_gives_up_on_a_cleanup_lock_that_stays_held(tmp_path, monkeypatch):
    """Regression (red team E7, minor): a write that had to evict waited for the folder's cleanup
    lock with no bound, so a stopped cleaner (SIGSTOP, a debugger) hung every writer that needed
    room; as with Redis, it now fails after ``CLEANUP_LOCK_WAIT_SECONDS`` with a StorageError
    (EBUSY) naming the lock, and nothing of the output is left."""
    import errno
    import os

    from overspill import StorageError, _files
    from overspill.backends import _report
    from overspill.backends._sweep import LOCK_NAME

    monkeypatch.setattr(_report, "CLEANUP_LOCK_WAIT_SECONDS", 0.2)
    store = open_store(tmp_path, max_total_bytes=MIB)
    first = store.write("s", "c0", b"a" * 600_000)
    # Another open of the lock file: an flock held here excludes the store's own open of it.
    held = _files.lock_exclusive(os.path.join(store.directory, LOCK_NAME))
    outcome: list[object] = []
    writer = threading.Thread(target=lambda: outcome.append(_attempt(lambda: store.write("s", "c1", b"b" * 600_000))))
    try:
        writer.start()
        writer.join(60)  # without the bound, the write waits until the lock is released below
    finally:
        _files.close_lock_file(held)
        writer.join()
    [error] = outcome
    assert isinstance(error, StorageError) and error.errno == errno.EBUSY, error
    assert "stayed held by another process for 0.2 s" in str(error) and LOCK_NAME in str(error)
    assert [record.id for record in store.records()] == [first.id]
    assert sorted(os.listdir(store.directory)) == sorted([f"{first.id}.txt", f"{first.id}.json", LOCK_NAME])
    # Released, the next write evicts as ever.
    assert store.write("s", "c2", b"c" * 600_000).size == 600_000
    assert [record.id for record in store.records()] != [first.id]


def _attempt(call):
    """``call()``'s result, or the exception it raised."""
    try:
        return call()
    except Exception as error:  # noqa: BLE001 - handed to the test to look at
        return error


_STALLED_WRITER = """
import json, sys
from overspill import ToolOutputStore

store = ToolOutputStore(sys.argv[1], config=json.loads(sys.argv[2]), durable=False)
size = int(sys.argv[3])

def chunks():
    for _ in range(size // 100_000):
        yield b"y" * 100_000  # each big enough to be written as it comes (no join)
    print("streamed", flush=True)
    sys.stdin.readline()  # stalled, its payload unpublished, until the test says go on

print(store.write_stream(sys.argv[4], "c", chunks()).uri, flush=True)
"""


def test_a_killed_writers_leftover_is_removed_before_the_quota_evicts_published_outputs(tmp_path, subprocess_env):
    """Regression (red team I10 f03): a writer SIGKILLed mid-``write_stream`` left its payload,
    swept only after the 1 h grace, yet counted by the quota's recount and never evictable: for
    that hour a write needing room evicted every published output of any session (3 of 3 here
    instead of 1).  Its writer lock is free (its writer is gone), so the eviction now removes it
    first, whatever its age; a stalled live writer's payload in another process, locked, stays,
    and its output is published whole when it goes on."""
    import json
    import os
    import signal
    import subprocess
    import sys

    from processes import wait_until

    config = {"max_total_bytes": 1_000_000, "max_bytes": 1000, "max_lines": 10}
    store = open_store(tmp_path, **config)
    victims = [store.write("victim", f"c{i}", b"v" * 199_999 + b"\n") for i in range(3)]

    def stalled(session: str, size: int) -> subprocess.Popen:
        child = subprocess.Popen([sys.executable, "-c", _STALLED_WRITER, str(tmp_path),
                                  json.dumps({"tool_output": config}), str(size), session],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=subprocess_env, text=True)
        assert child.stdout.readline() == "streamed\n"
        return child

    def unpublished() -> dict[str, int]:
        names = os.listdir(store.directory)
        return {name[:-4]: os.path.getsize(store.directory / name) for name in names
                if name.endswith(".txt") and f"{name[:-4]}.json" not in names}

    live = stalled("live", 100_000)
    killed = stalled("killed", 300_000)
    try:
        assert wait_until(lambda: sorted(unpublished().values()) == [100_000, 300_000])
        [(dead_id, _)] = [(name, size) for name, size in unpublished().items() if size == 300_000]
        killed.kill()
        killed.wait()
        # 600 KB of victims and 450 KB new pass 1 MB (the running total, without other processes'
        # unpublished bytes, says so); counted with the live writer's 100 KB, one victim must go.
        # The dead writer's 300 KB counted and kept would take all three.
        other = store.write("other", "c", b"z" * 449_999 + b"\n")
        kept = []
        for victim in victims:
            try:
                kept.append(store.read("victim", victim.uri).resource.uri)
            except ResourceNotFoundError:
                pass
        assert kept == [victim.uri for victim in victims[1:]]  # the oldest only, as without the leftover
        assert dead_id not in unpublished() and len(unpublished()) == 1  # the live writer's payload stays
        assert store.read("other", other.uri).resource.size == 450_000
        live.stdin.write("go on\n")
        live.stdin.flush()
        uri = live.stdout.readline().strip()
        assert live.wait(60) == 0
        assert store.read("live", uri).resource.size == 100_000
        assert unpublished() == {}
    finally:
        for child in (live, killed):
            if child.poll() is None:
                child.kill()
                child.wait()


# ------------------------------------------------------------------ red team C11
_KILLED_AT_ITS_PUBLISH = """
import json, os, signal, sys
from overspill import ToolOutputStore

real_rename = os.rename

def rename(source, target, *args, **kwargs):
    real_rename(source, target, *args, **kwargs)
    if str(target).endswith(".json"):
        os.kill(os.getpid(), signal.SIGKILL)  # its record in place, nothing after the rename done

os.rename = rename
store = ToolOutputStore(sys.argv[1], config=json.loads(sys.argv[2]), durable=False)
store.write("killed", "c", b"k" * int(sys.argv[3]))
"""


def test_a_writer_killed_just_after_its_publish_leaves_the_running_total_high_never_low(tmp_path, subprocess_env):
    """Regression (red team C11 r01): a writer SIGKILLed after its record's rename and before it
    added its bytes to the running total left the total low (the record and payload in the folder,
    uncounted), so later writes trusted it and the folder stayed past ``max_total_bytes`` with
    nothing evicted.  The bytes are now counted before the record is published, and written to the
    total's file at once even inside the quota's held step: a kill anywhere leaves it high."""
    import subprocess
    import sys

    from overspill.backends._sweep import folder_bytes

    config = {"max_total_bytes": 1_000_000}
    store = open_store(tmp_path, **config)
    store.write("a", "c", b"a" * 100_000)  # the running total's file exists
    for _ in range(2):
        child = subprocess.run([sys.executable, "-c", _KILLED_AT_ITS_PUBLISH, str(tmp_path),
                                json.dumps({"tool_output": config}), "300000"], env=subprocess_env, timeout=120)
        assert child.returncode == -9
    assert len(store.resources("killed")) == 2  # published, then killed
    assert usage_file(tmp_path) >= folder_bytes(store.directory)  # errs high, never low
    for number in range(3):
        store.write("b", f"c{number}", b"b" * 200_000)
    assert folder_bytes(store.directory) <= config["max_total_bytes"]


def test_a_peers_payload_written_just_before_its_record_is_not_taken_for_a_dead_writers(tmp_path):
    """Regression (red team C11 r04): the quota's dead-writer rule removed, whatever its age, every
    payload without a record whose writer lock was free, and a peer (KiloCode/opencode) takes no
    lock: its ``{id}.txt``, written a moment before its ``{id}.json``, went when an eviction ran in
    between, and the peer's output was lost.  Only a payload an overspill writer provably left (the
    record's temporary file beside it, made when the writer starts) goes whatever its age; a
    peer's payload without a record waits out the grace period, as promise 8 says."""
    import os
    import time

    from overspill.records import new_id, uri_for

    store = open_store(tmp_path, max_total_bytes=700_000)
    store.write("ours", "c", b"o" * 300_000)
    peer_id = new_id()
    body = b"peer output\n" * 20_000  # 240 KB, its record not written yet
    (store.directory / f"{peer_id}.txt").write_bytes(body)
    os.chmod(store.directory / f"{peer_id}.txt", 0o600)
    store.write("ours", "c", b"p" * 500_000)  # past the quota: the eviction runs now
    (store.directory / f"{peer_id}.json").write_text(json.dumps({
        "version": 1, "id": peer_id, "uri": uri_for(peer_id), "sessionID": "peer", "toolCallID": "t",
        "mime": "text/plain", "size": len(body), "created": int(time.time() * 1000)}))
    page = store.read("peer", uri_for(peer_id))  # kept
    assert page.resource.size == len(body) and page.content == body.decode()[: len(page.content)]
