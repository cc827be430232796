"""Regressions of the hardening issue (issue 9) for the store and its local
folder: each test names the README promise it protects and failed before
its fix.  Real files, real processes; faults are injected by wrapping one
call, as in test_store_faults."""

from __future__ import annotations

import errno
import logging
import mmap
import os
import resource
import subprocess
import sys
import threading
import time
from datetime import timedelta

import pytest
from processes import forked_while_held

from overspill import (AccessDeniedError, CleanupReport, ResourceCorruptError, ResourceNotFoundError, StorageError,
                       ToolOutputStore)
from overspill import _files, _kernels
from overspill.backends.local import LocalBackend
from overspill.records import new_id

OLD = time.time() - 30 * 86400  # a month ago: older than any grace period


def pending_payloads(store: ToolOutputStore) -> list[str]:
    """Payloads without a record: the ones a writer is still filling."""
    names = set(os.listdir(store.directory))
    return [name for name in names if name.endswith(".txt") and name[:-4] + ".json" not in names]


def sweep_from_another_process(store: ToolOutputStore, env: dict[str, str]) -> None:
    ran = subprocess.run([sys.executable, "-m", "overspill", "cleanup", "--data-dir",
                          str(store.directory.parent.parent)], env=env, capture_output=True, text=True,
                         timeout=120)
    assert ran.returncode == 0, ran.stderr


# ------------------------------------------------------------------ item 1
@pytest.mark.parametrize("operation", ["write_stream", "truncate_stream"])
def test_a_slow_writer_keeps_its_payload_through_concurrent_cleanups(tmp_path, subprocess_env, operation):
    """Issue 9 item 1: a producer that paused longer than ``grace`` had its payload swept by a
    concurrent cleanup, and the write then "succeeded" with no payload. Protects promise 1 ("a
    failure at any step leaves the whole resource or nothing") and 8 ("safe while other processes
    write, read and clean"): a live writer's files are never swept, however long it pauses."""
    store = ToolOutputStore(tmp_path, durable=False, grace=timedelta(0))
    other = ToolOutputStore(tmp_path, durable=False, grace=timedelta(0))
    block = b"0123456789abcdef" * 4096 + b"\n"

    def slow_producer():
        for index in range(4):
            yield block
            for name in pending_payloads(store):  # the pause: the payload looks abandoned
                os.utime(store.directory / name, (OLD, OLD))
            if index == 0:
                sweep_from_another_process(store, subprocess_env)
            else:
                assert not store.cleanup().removed and not other.cleanup().removed
            assert len(pending_payloads(store)) == 1

    if operation == "write_stream":
        resource = store.write_stream("s", "c", slow_producer())
    else:
        resource = store.truncate_stream("s", "c", slow_producer(), max_bytes=100).resource
    with store.view("s", resource.uri) as (_, data):
        assert bytes(data) == block * 4
    # Once the writer is done, its pair is an ordinary resource, and abandoned payloads still go.
    abandoned = store.directory / f"{new_id()}.txt"
    abandoned.write_bytes(b"left by a crash")
    os.utime(abandoned, (OLD, OLD))
    assert other.cleanup().removed == 1 and not abandoned.exists()
    assert store.read("s", resource.uri, limit=16).content == "0123456789abcdef"


def test_a_cleanup_between_create_and_lock_makes_the_writer_draw_again(tmp_path, monkeypatch):
    """Issue 9 item 1: with a zero grace period a sweep can unlink a payload in the instant
    between its creation and its writer's lock; the writer notices and uses another id."""
    store = ToolOutputStore(tmp_path, durable=False, grace=timedelta(0))
    real = _files.create_exclusive
    swept = []

    def create_then_sweep(path):
        fd = real(path)
        if not swept:
            swept.append(store.cleanup())
        return fd

    monkeypatch.setattr(_files, "create_exclusive", create_then_sweep)
    resource = store.write("s", "c", b"x\n" * 100)
    assert swept[0].removed == 1
    assert store.read("s", resource.uri).content == "x\n" * 100


def test_a_pair_published_after_the_sweeps_listing_is_not_swept(tmp_path, monkeypatch):
    """Red team f07: the sweep lists the folder once; a payload it saw without a record, older
    than the grace (its producer paused), was removed once its writer lock was free -- but the
    lock was free because the writer had published since the listing, so a fresh, valid
    resource went. Forced ordering: the writer publishes between the listing and the judgement."""
    from overspill.backends import _sweep

    store = ToolOutputStore(tmp_path, durable=False)
    resume = threading.Event()
    block = b"a command that then stays quiet for two hours\n" * 2000

    def pieces():
        yield block
        resume.wait()

    published = {}
    producer = threading.Thread(target=lambda: published.setdefault("r", store.write_stream("s", "c", pieces())))
    producer.start()
    try:
        while not any(os.path.getsize(store.directory / name) == len(block) for name in pending_payloads(store)):
            time.sleep(0.01)
        (payload,) = pending_payloads(store)
        os.utime(store.directory / payload, (OLD, OLD))  # its last byte came long ago
        real_resource = _sweep.FolderSweep.resource

        def publish_first(sweep, resource_id, has_record):
            if not resume.is_set():
                assert not has_record  # the listing saw the payload alone
                resume.set()
                producer.join()
            return real_resource(sweep, resource_id, has_record)

        monkeypatch.setattr(_sweep.FolderSweep, "resource", publish_first)
        report = store.cleanup()
    finally:
        resume.set()
        producer.join()
    assert report.removed == 0
    assert store.read("s", published["r"].uri, limit=16).content == block[:16].decode()
    # An abandoned payload still goes.
    abandoned = store.directory / f"{new_id()}.txt"
    abandoned.write_bytes(b"left by a crash")
    os.utime(abandoned, (OLD, OLD))
    assert store.cleanup().removed_ids == (abandoned.name[:-4],)


def test_a_background_output_finishing_during_the_sweep_is_not_a_broken_pair(tmp_path, monkeypatch):
    """Red team f03: the sweep measured the payload, then read the record; a background output
    that finished in between (its record republished with the final size) was judged a broken
    pair and removed. Forced ordering: the output finishes just before the sweep reads its record."""
    from overspill.backends import _sweep

    store = ToolOutputStore(tmp_path, durable=False)
    output = store.open_growing("s", "bg")
    output.write(b"first part\n" * 1000)
    output.seal_if_due(1e18)
    real_read = _sweep._read_record

    def finish_first(path, resource_id):
        if output.record.state == "running":
            output.write(b"last part\n" * 1000)
            output.finish(0)
        return real_read(path, resource_id)

    monkeypatch.setattr(_sweep, "_read_record", finish_first)
    report = store.cleanup()
    monkeypatch.undo()
    assert report.removed == 0
    assert store.read("s", output.record.resource.uri).resource.size == 21000


def test_truncate_stream_leaves_nothing_when_reading_back_fails(tmp_path, monkeypatch):
    """Issue 9 item 1: ``truncate_stream`` raised StorageError from the preview's read-back but
    left the published record behind. Protects promise 1: an error leaves nothing visible."""
    store = ToolOutputStore(tmp_path, durable=False)
    backend = store._backend

    def failing_read(record, start, end):
        raise OSError(errno.EMFILE, "Too many open files (injected)")

    monkeypatch.setattr(backend, "read", failing_read)
    monkeypatch.setattr(backend, "read_copy", failing_read)  # the preview's windows are copies
    with pytest.raises(StorageError):
        store.truncate_stream("s", "c", iter([b"line\n" * 50_000]))
    monkeypatch.undo()
    assert store.records() == [] and sorted(os.listdir(store.directory)) in ([], [".cleanup.lock"])


@pytest.mark.parametrize("at", ["head", "tail"])
def test_a_just_written_output_changed_before_its_preview_is_corrupt_not_unreadable(tmp_path, at):
    """Review R12: corruption first met when ``truncate_stream`` reads its just-written payload
    back for the preview (a byte changed in place through a shared writable map after it was
    written and checksummed) is ``ResourceCorruptError``, the error for bytes that fail their
    check everywhere else, not the ``StorageError("cannot read back ...")`` of a read that
    failed; and, as for any failure there, nothing is left visible."""
    store = ToolOutputStore(tmp_path, durable=False)
    first = b"start of the output\n" * 10_000

    def chunks():
        yield first
        # The first chunk is in the payload file now: change one of its bytes in place.
        (payload,) = (name for name in os.listdir(store.directory) if name.endswith(".txt"))
        with open(store.directory / payload, "r+b") as file, mmap.mmap(file.fileno(), 0) as shared:
            shared[100 if at == "head" else len(first) - 100] ^= 0x01
        if at == "head":
            yield b"more of it\n" * 10_000

    with pytest.raises(ResourceCorruptError, match="is corrupt"):
        store.truncate_stream("s", "c", chunks())
    assert store.records() == [] and sorted(os.listdir(store.directory)) in ([], [".cleanup.lock"])


@pytest.mark.parametrize("case", ["surrogate", "capped"])
def test_a_just_written_output_that_fails_its_check_leaves_nothing_and_truncate_kept_previews_it(tmp_path, case):
    """Review R15 of 837c32b: ``store.truncate`` reads a just-written payload back for its preview (a
    str holding a lone surrogate, an output over ``max_stored_bytes``); a byte changed in place before
    that read is ``ResourceCorruptError`` now, which ``truncate_kept`` (the MCP wrapper's and the
    adapters' error texts) let through, where it promises the preview ("output not stored") and never
    a storage error in the caller's place; and ``truncate`` left the corrupt pair on disk, which
    ``truncate_stream`` removes."""
    from overspill._frontend import truncate_kept

    config = {"tool_output": {"max_stored_bytes": 100_000}} if case == "capped" else None
    store = ToolOutputStore(tmp_path, durable=False, config=config)
    text = ("x\udcff\n" + "line of text\n" * 20_000) if case == "surrogate" else "line of text\n" * 200_000
    written = store._write_pieces

    def written_then_changed(*args, **kwargs):  # another process changes a byte once it is published
        record = written(*args, **kwargs)
        (payload,) = (name for name in os.listdir(store.directory) if name.endswith(".txt"))
        with open(store.directory / payload, "r+b") as file, mmap.mmap(file.fileno(), 0) as shared:
            shared[10] ^= 0x01
        return record

    store._write_pieces = written_then_changed  # type: ignore[method-assign]
    with pytest.raises(ResourceCorruptError, match="is corrupt"):
        store.truncate("s", "c", text)
    assert store.records() == [] and not [name for name in os.listdir(store.directory) if name.endswith(".txt")]
    kept = truncate_kept(store, "s", "c", text)
    assert kept.truncated and kept.resource is None and "output not stored" in kept.content
    assert store.records() == []


# ------------------------------------------------------------------ item 3
@pytest.mark.parametrize("operation", ["write", "truncate", "write_stream", "truncate_stream"])
def test_a_buffer_changed_during_the_write_is_stored_as_it_was_checksummed(tmp_path, monkeypatch, operation):
    """Issue 9 item 3: a bytearray changed (by another thread) between the write and the checksum
    was published with checksums that did not match, unreadable for ever. Protects promise 2
    ("never readable-but-wrong") and 1: what is published reads back whole."""
    store = ToolOutputStore(tmp_path, durable=False)
    content = bytearray(b"a" * 200_000 + b"\n")
    real = os.write

    def write_then_change(fd, data):
        written = real(fd, data)
        if bytes(data[:1]) == b"a":  # the content's bytes went out; now, before their checksum, change them
            content[:] = b"b" * len(content)
        return written

    # The payload's writes (_local_writer.write calls os.write; _files.write_all, wrapped here
    # before, writes only records and seals, so the change never happened).
    monkeypatch.setattr(os, "write", write_then_change)
    if operation == "write":
        resource = store.write("s", "c", content)
    elif operation == "truncate":
        resource = store.truncate("s", "c", content).resource
    elif operation == "write_stream":
        resource = store.write_stream("s", "c", iter([content]))
    else:
        resource = store.truncate_stream("s", "c", iter([b"start\n" * 20_000, content])).resource
    monkeypatch.undo()
    with store.view("s", resource.uri) as (_, data):  # verifies every chunk
        stored = bytes(data)
    assert stored.endswith(b"a" * 200_000 + b"\n")


# ------------------------------------------------------------------ item 4
@pytest.mark.parametrize("field", ["session_id", "tool_call_id", "mime", "name"])
@pytest.mark.parametrize("operation", ["write", "truncate", "write_stream", "truncate_stream"])
def test_metadata_over_1024_utf8_bytes_is_refused_at_write_time(tmp_path, field, operation):
    """Issue 9 item 4: a 72 MB session id was written, then its record was "oversized" and the
    resource lost. Protects promise 1: a write either returns a resource that reads back, or
    raises and leaves nothing. Each caller string is at most 1,024 UTF-8 bytes."""
    store = ToolOutputStore(tmp_path, durable=False)
    arguments = {"session_id": "s", "tool_call_id": "c", "mime": "text/plain", "name": "n"}
    big = b"x\n" * 100_000

    def attempt(value):
        given = {**arguments, field: value}
        extra = {"mime": given["mime"], "name": given["name"]}
        if operation == "write":
            return store.write(given["session_id"], given["tool_call_id"], big, **extra)
        if operation == "truncate":
            return store.truncate(given["session_id"], given["tool_call_id"], big, **extra).resource
        if operation == "write_stream":
            return store.write_stream(given["session_id"], given["tool_call_id"], iter([big]), **extra)
        return store.truncate_stream(given["session_id"], given["tool_call_id"], iter([big]), **extra).resource

    for too_long in ("x" * 1025, "é" * 513, "😀" * 256 + "x", "x" * 72_000_000):
        with pytest.raises(ValueError, match="at most 1024 UTF-8 bytes"):
            attempt(too_long)
    assert store.records() == [] and not [name for name in os.listdir(store.directory) if name.endswith(".txt")]
    longest = "é" * 512  # exactly 1,024 bytes
    resource = attempt(longest)
    (record,) = store.records()
    assert getattr(record, field, None) == longest or getattr(record.resource, field, None) == longest
    assert store.read(record.session_id, resource.uri, limit=2).content == "x\n"


# ------------------------------------------------------------------ item 6
def test_cleanup_skips_what_it_cannot_remove_and_goes_on(tmp_path):
    """Issue 9 item 6: a directory named ``{id}.txt`` or ``{id}.json`` made every cleanup raise
    and stop, so nothing after it ever expired. Protects promise 8 ("cleanup removes expired
    resources ... leaves every other file alone")."""
    store = ToolOutputStore(tmp_path, durable=False, grace=timedelta(0))
    first = store.write("s", "c", "expires")
    blocked = [new_id(), new_id()]
    (store.directory / f"{blocked[0]}.txt").mkdir()
    (store.directory / f"{blocked[1]}.json").mkdir()
    for name in (f"{blocked[0]}.txt", f"{blocked[1]}.json"):
        os.utime(store.directory / name, (OLD, OLD))
    last = store.write("s", "c", "expires too")
    dry = store.cleanup(now=time.time() + 30 * 86400, dry_run=True)
    assert dry.removed == 2 and dry.skipped == 2 and not dry.busy
    report = store.cleanup(now=time.time() + 30 * 86400)
    assert report.removed == 2 and report.skipped == 2 and not report.busy
    assert set(report.removed_ids) == {first.id, last.id}
    assert (store.directory / f"{blocked[0]}.txt").is_dir()  # left alone, and counted
    assert store.cleanup(now=time.time() + 30 * 86400) == CleanupReport(skipped=2)


def test_the_periodic_cleaner_logs_and_survives_failures(tmp_path, caplog, monkeypatch):
    """Issue 9 items 5 and 6: a failing sweep ended the ``start_cleanup`` thread, or was
    swallowed without a word. Each failure and each skipped entry is logged to the
    ``overspill`` logger, and the thread goes on."""
    store = ToolOutputStore(tmp_path, durable=False, grace=timedelta(0))
    (store.directory / f"{new_id()}.json").mkdir()
    os.utime(next(store.directory.glob("*.json")), (OLD, OLD))
    real_sweep = store._backend.sweep
    calls = []

    def sweep_failing_first(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise OverflowError("int too large to convert to float (injected)")
        return real_sweep(*args, **kwargs)

    monkeypatch.setattr(store._backend, "sweep", sweep_failing_first)
    caplog.set_level(logging.WARNING, logger="overspill")
    store.start_cleanup(interval=0.01)
    try:
        deadline = time.monotonic() + 60  # a bound on the wait, not a timing assertion
        while len(calls) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert store._cleaner is not None and store._cleaner.is_alive()
    finally:
        store.close()
    assert len(calls) >= 3
    messages = [record.getMessage() for record in caplog.records if record.name == "overspill"]
    assert any("failed" in message for message in messages)
    assert any("could not remove 1 entries" in message for message in messages)


# ------------------------------------------------------------------ item 13
def test_a_store_with_create_false_reads_a_missing_folder_as_empty(tmp_path):
    """Issue 9 item 13: reading, listing and cleaning created the data folder. With
    ``create=False`` a missing folder holds nothing and is made by the first write only."""
    missing = tmp_path / "never" / "written"
    store = ToolOutputStore(missing, create=False)
    assert store.records() == [] and store.resources("s") == []
    assert store.cleanup() == CleanupReport() and store.cleanup(dry_run=True) == CleanupReport()
    with pytest.raises(ResourceNotFoundError):
        store.read("s", "tool-output://0123456789abcdefghijklmnop")
    assert not (tmp_path / "never").exists()
    resource = store.write("s", "c", "now it exists")
    assert store.read("s", resource.uri).content == "now it exists"
    assert [record.resource for record in store.records()] == [resource]
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the folder should be")
    with pytest.raises(StorageError):
        ToolOutputStore(blocker, create=False)


# ------------------------------------------------------------------ item 8
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def exit_code_of_child(pid, deadlocked):
    """The forked child's exit code; a child still alive after two minutes is killed and fails the test."""
    deadline = time.monotonic() + 120  # a bound on the wait, not a timing assertion
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail(deadlocked)


def child_exit_after_fork_under(hold, in_the_child, deadlocked: str) -> int:
    """Fork while another thread is inside ``hold(inside, release)``, holding a lock (it sets
    ``inside`` there and waits for ``release``); the child runs ``in_the_child`` (exit 0 when it
    returns, 1 when it raises), and the thread lets go once the fork is done.  The child's exit
    code (see ``exit_code_of_child``)."""
    inside, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=hold, args=(inside, release), daemon=True)
    holder.start()
    inside.wait()
    pid = os.fork()
    if pid == 0:  # the child: report through the exit status only
        status = 1
        try:
            in_the_child()
            status = 0
        finally:
            os._exit(status)
    release.set()
    holder.join()
    return exit_code_of_child(pid, deadlocked)


def holding(lock):
    """A ``hold`` for ``child_exit_after_fork_under`` that holds ``lock``."""
    def hold(inside: threading.Event, release: threading.Event) -> None:
        with lock:
            inside.set()
            release.wait()

    return hold


def test_a_fork_while_another_thread_holds_the_usage_lock_does_not_deadlock_the_child(tmp_path):
    """A fork while another thread held the running total's flock (a sweep recounting it) gave the
    child a copy of the locked descriptor, which kept the lock held for ever: the child's first
    write waited on itself (seen as the forked-cleaner test below deadlocking in CI)."""
    from overspill.backends._usage import UsageTotal

    folder, location = tmp_path / "managed", tmp_path / "index"
    folder.mkdir()

    def recounting(inside: threading.Event, release: threading.Event) -> None:
        def slow_unpublished():  # called under the lock while the folder is recounted
            inside.set()
            release.wait()
            return 0

        UsageTotal(str(folder), str(location), slow_unpublished).recount()

    assert child_exit_after_fork_under(recounting, lambda: UsageTotal(str(folder), str(location), lambda: 0).add(5),
                                       "the forked child deadlocked on the usage lock") == 0


def test_a_fork_during_a_sweep_leaves_the_cleanup_lock_to_the_parent(tmp_path, monkeypatch):
    """Red team f06: a fork while another thread swept gave the child a copy of ``.cleanup.lock``'s
    locked descriptor, which kept the lock held for the child's life: every later cleanup was
    busy and every eviction waited for ever. The child now closes its copy (as the usage file's)."""
    from overspill.backends import _sweep

    store = ToolOutputStore(tmp_path, durable=False)
    store.write("s", "c", b"x" * 1000)
    inside, release = threading.Event(), threading.Event()
    real_run = _sweep.FolderSweep.run

    def slow_run(sweep):
        inside.set()
        release.wait()
        return real_run(sweep)

    monkeypatch.setattr(_sweep.FolderSweep, "run", slow_run)
    holder = threading.Thread(target=store.cleanup, daemon=True)
    with forked_while_held(holder, inside, release, monkeypatch.undo):
        with _sweep.sweep_lock(store.directory, wait=False) as locked:
            assert locked, "the forked child holds the cleanup lock"
        assert not store.cleanup().busy


def test_a_forked_child_reads_and_starts_its_own_cleaner(tmp_path):
    """Issue 9 item 8: ``os.fork()`` while another thread held the store's lock deadlocked the
    child at its first read, and the child could not ``start_cleanup`` ("already running").
    Protects promise 6 ("unique across threads, processes and forks") and 8: a forked worker
    uses the store it inherited."""
    store = ToolOutputStore(tmp_path, durable=False)
    resource = store.write("s", "c", "x\n" * 50_000)
    store.read("s", resource.uri)  # a warm cache and an open map, as in a busy process
    store.start_cleanup(interval=3600)

    def in_the_child() -> None:
        for _ in range(20):  # many reads: entries, maps and their evictions all take the lock
            store.read("s", store.write("s", "c", "y\n" * 30_000).uri)
        assert store.read("s", resource.uri, limit=4).content == "x\nx\n"
        store.start_cleanup(interval=3600)
        store.close()

    # The store's lock held by a reader or writer caught mid-update when the fork happens.
    exit_code = child_exit_after_fork_under(holding(store._backend._lock), in_the_child, "the forked child deadlocked")
    store.close()
    assert exit_code == 0


# ------------------------------------------------------------------ item 11
# Promise 5 (nothing escapes the folder): the two folders the store makes,
# tool-output and managed, are its own — never a symlink, never another
# user's, never open to others.
@pytest.mark.parametrize("component", ["tool-output", "tool-output/managed"])
@pytest.mark.parametrize("create", [True, False])
def test_a_symlinked_store_folder_is_refused(tmp_path, component, create):
    data, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    (elsewhere / "managed").mkdir(parents=True)
    victim = elsewhere / "managed" / f"{new_id()}.txt"
    victim.write_bytes(b"not the store's")
    link = data / component
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(elsewhere if component == "tool-output" else elsewhere / "managed")
    with pytest.raises(StorageError, match="symlink"):
        ToolOutputStore(data, create=create)
    assert victim.read_bytes() == b"not the store's"
    assert os.listdir(elsewhere / "managed") == [victim.name]


def test_an_open_store_folder_is_tightened_to_0700(tmp_path):
    managed = tmp_path / "data" / "tool-output" / "managed"
    managed.mkdir(parents=True)
    for folder in (managed, managed.parent):
        os.chmod(folder, 0o777)
    with ToolOutputStore(tmp_path / "data", durable=False) as store:
        store.truncate("s", "c", "x\n" * 5000)
    for folder in (managed, managed.parent):
        assert os.stat(folder).st_mode & 0o777 == 0o700
    assert os.stat(tmp_path / "data").st_mode & 0o777 != 0  # the caller's own folder is left as it is


def test_a_sticky_shared_folder_above_the_store_is_left_as_it_is(tmp_path):
    # As /tmp is to a folder made by mkdtemp: never tightened (as root that
    # locked every other user out of /tmp), and accepted as the folder's parent.
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    backend = LocalBackend(shared / "folder", durable=False)
    writer = backend.create(new_id())
    writer.abort()
    assert os.stat(shared).st_mode & 0o7777 == 0o1777
    assert os.stat(shared / "folder").st_mode & 0o777 == 0o700
    os.chmod(shared, 0o777)  # not sticky: the store's own parent, tightened as before
    LocalBackend(shared / "folder", durable=False)
    assert os.stat(shared).st_mode & 0o777 == 0o700


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
@pytest.mark.parametrize("create", [True, False])
def test_a_store_folder_owned_by_another_user_is_refused(tmp_path, create):
    managed = tmp_path / "data" / "tool-output" / "managed"
    managed.mkdir(parents=True, mode=0o700)
    os.chown(managed, 65534, 65534)
    with pytest.raises(StorageError, match="another user"):
        ToolOutputStore(tmp_path / "data", create=create)


# ------------------------------------------------------------------ item 12
# Promise 2 (never readable-but-wrong) and honest errors: a resource that is
# there but cannot be opened now (no descriptors left, no permission) is a
# storage failure (CLI exit 4), not "not found" (exit 3); and a sweep never
# removes a good pair because its record could not be opened for a moment.
def failing_open(monkeypatch, error: int, suffix: str) -> None:
    """Every open of a file named ``*suffix`` fails with ``error``: through
    ``os.open``, and through the kernels that open a cold read's files (the
    compiled ones open them in C: ``read_regular`` the record, ``read_page``
    the payload)."""
    real_open = os.open
    kernels = {name: getattr(_kernels, name) for name in ("read_regular", "read_page")}

    def open_or_fail(path, *args, **kwargs):
        if str(path).endswith(suffix):
            raise OSError(error, os.strerror(error), str(path))
        return real_open(path, *args, **kwargs)

    def kernel_or_fail(kernel):
        def failing(path, *args):
            if str(path).endswith(suffix):
                raise OSError(error, os.strerror(error), str(path))
            return kernel(path, *args)
        return failing

    monkeypatch.setattr(_files.os, "open", open_or_fail)
    for name, kernel in kernels.items():
        monkeypatch.setattr(_kernels, name, kernel_or_fail(kernel))


@pytest.mark.parametrize("error", [errno.EMFILE, errno.EACCES])
@pytest.mark.parametrize("suffix", [".txt", ".json"])
def test_a_payload_or_record_that_cannot_be_opened_is_a_storage_error(tmp_path, monkeypatch, error, suffix):
    with ToolOutputStore(tmp_path, durable=False) as writer:
        uri = writer.truncate("s", "c", "line\n" * 20000).resource.uri
    failing_open(monkeypatch, error, suffix)
    with ToolOutputStore(tmp_path, durable=False) as cold:
        with pytest.raises(StorageError) as raised:
            cold.read("s", uri)
        assert raised.value.errno == error and not isinstance(raised.value, ResourceNotFoundError)
    monkeypatch.undo()
    with ToolOutputStore(tmp_path, durable=False) as later:
        assert later.read("s", uri).offset == 0  # nothing was lost


@pytest.mark.parametrize("suffix", [".txt", ".json"])
def test_no_descriptor_left_for_a_cold_read_is_a_storage_error(tmp_path, suffix):
    # For real: the descriptor limit lowered so that the record (".json") or
    # the payload after it (".txt") gets none; the kernel's own open fails.
    with ToolOutputStore(tmp_path, durable=False) as writer:
        uri = writer.truncate("s", "c", "line\n" * 20000).resource.uri
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with ToolOutputStore(tmp_path, durable=False) as cold:
        lowest = os.dup(0)  # the lowest free descriptor: the record gets it, the payload the next
        os.close(lowest)
        resource.setrlimit(resource.RLIMIT_NOFILE, (lowest + (suffix == ".txt"), hard))
        try:
            with pytest.raises(StorageError) as raised:
                cold.read("s", uri)
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        assert raised.value.errno == errno.EMFILE and not isinstance(raised.value, ResourceNotFoundError)
        assert cold.read("s", uri).offset == 0  # nothing was lost, and nothing was cached of the failure


def test_a_sweep_skips_a_record_it_cannot_open_instead_of_removing_the_pair(tmp_path, monkeypatch):
    with ToolOutputStore(tmp_path, durable=False) as store:
        uri = store.truncate("s", "c", "line\n" * 20000).resource.uri
        failing_open(monkeypatch, errno.EMFILE, ".json")
        report = store.cleanup(now=time.time() + 3600 * 24)  # past the grace, well within retention
        monkeypatch.undo()
        assert report.removed == 0 and report.skipped == 1
        assert store.read("s", uri).offset == 0


def test_ls_that_cannot_read_the_records_says_so_and_exits_4(tmp_path, subprocess_env):
    data = tmp_path / "data"
    with ToolOutputStore(data, durable=False) as store:
        store.truncate("cli", "c", "line\n" * 20000)
    # Every descriptor taken after a first listing (which loads what ls imports).
    code = ("import resource, sys, os\n"
            "from overspill.cli import main\n"
            "assert main(['ls', '--data-dir', sys.argv[1]]) == 0\n"
            "held = []\n"
            "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
            "resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))\n"
            "try:\n"
            "    while True: held.append(os.open(os.devnull, os.O_RDONLY))\n"
            "except OSError: pass\n"
            "status = main(['ls', '--data-dir', sys.argv[1]])\n"
            "for fd in held: os.close(fd)\n"
            "sys.exit(status)\n")
    ran = subprocess.run([sys.executable, "-c", code, str(data)], env=subprocess_env, capture_output=True,
                         text=True, timeout=120)
    assert ran.returncode == 4, (ran.stdout, ran.stderr)
    assert "no stored outputs" not in ran.stdout
    assert ran.stderr.startswith("overspill: error:") and len(ran.stderr.strip().splitlines()) == 1


def test_a_fork_while_a_thread_holds_the_running_total_gives_the_child_no_holder(tmp_path):
    """Review of the f04 fix: the thread holding the running total (``UsageTotal.held``) is not in
    a forked child; a child thread that got its id must not think it holds the total (it would
    publish with no lock, and its changes would never be written)."""
    store = ToolOutputStore(tmp_path, durable=False)
    store.write("s", "c", b"x" * 1000)
    usage = store._backend._usage
    with usage.held():
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            os._exit(0 if usage._holder is None else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the child inherited the parent thread's hold"
    assert store.write("s", "d", b"y" * 1000).size == 1000


def test_a_fork_while_a_thread_grows_a_seal_chain_does_not_deadlock_the_child(tmp_path):
    """A fork while another thread was growing a running output's seal chain (its lock held across
    the seal file's read) gave the child the lock held for ever: its first look at any running
    output never returned."""
    store = ToolOutputStore(tmp_path)
    output = store.open_growing("s", "c")
    uri = output.record.resource.uri
    output.write(b"sealed\n")
    output.seal_if_due(float("inf"))
    assert store.status("s", uri).resource.size == 7

    def in_the_child() -> None:
        assert store.status("s", uri).resource.size == 7

    # The chain's lock held by a thread in the middle of the seal file's read.
    assert child_exit_after_fork_under(holding(store._backend._chains_lock), in_the_child,  # noqa: SLF001
                                       "the forked child deadlocked on the seal chain's lock") == 0
    output.finish(0)


# ------------------------------------------------------------------ red team E7
@pytest.mark.parametrize("component", ["tool-output", "tool-output/managed", "tool-output/index"])
def test_a_symlinked_store_folder_is_refused_before_anything_is_made_through_it(tmp_path, component):
    """Regression (red team E7 f03): ``ensure_directory`` ran ``os.makedirs`` before it checked the
    store's own folders, so a symlinked ``tool-output`` got ``managed`` made in its target, and a
    symlinked ``tool-output/index`` got ``sessions``; now each is checked before anything is made in it."""
    data, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = data / component
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(elsewhere)
    if component != "tool-output/index":
        with pytest.raises(StorageError, match="symlink"):
            ToolOutputStore(data)
    else:
        with ToolOutputStore(data, durable=False) as store:  # the index is only a cache: listed without it
            uri = store.truncate("s", "c", "x\n" * 5000).resource.uri
            assert [resource.uri for resource in store.resources("s")] == [uri]
    assert os.listdir(elsewhere) == []
    with pytest.raises(OSError, match="symlink") as refused:
        _files.ensure_directory(link / "inner")
    assert refused.value.errno == errno.ELOOP and os.listdir(elsewhere) == []


@pytest.mark.parametrize("victim", [".cleanup.lock", "index/usage", "index/lock"])
@pytest.mark.parametrize("full", [False, True])
def test_a_directory_in_place_of_a_lock_file_is_cleared_and_cleanup_and_eviction_go_on(tmp_path, victim, full):
    """Regression (red team E7, minor): a directory at ``managed/.cleanup.lock`` made every cleanup,
    and every write that had to evict, fail ("Is a directory"), where a FIFO, socket or symlink
    there is replaced; an empty one is now removed and a full one renamed aside, its contents kept."""
    data = tmp_path / "data"
    quota = {"tool_output": {"max_total_bytes": 1_300_000}}
    with ToolOutputStore(data, durable=False, config=quota) as store:
        store.truncate("s", "c0", "x\n" * 200_000)
    managed = data / "tool-output" / "managed"
    folder = managed if victim == ".cleanup.lock" else data / "tool-output"
    path = folder / victim
    if path.exists():
        path.unlink()
    path.mkdir()
    if full:
        (path / "kept").write_bytes(b"someone's")
    with ToolOutputStore(data, durable=False, config=quota) as store:
        assert store.cleanup().removed == 0
        # Over the quota together: the first output is evicted, under the cleanup lock.
        uris = [store.truncate("s", f"c{i}", "y\n" * 200_000).resource.uri for i in range(1, 4)]
        assert [resource.uri for resource in store.resources("s")] == uris
    assert path.is_file() and not path.is_symlink()
    aside = [name for name in os.listdir(path.parent) if name.endswith(".damaged")]
    if full:
        assert len(aside) == 1 and aside[0].startswith(f".{path.name}.")
        assert (path.parent / aside[0] / "kept").read_bytes() == b"someone's"
    else:
        assert aside == []


@pytest.mark.parametrize("operation", ["write", "truncate", "write_stream", "truncate_stream"])
@pytest.mark.parametrize("kind", ["read-only view of a bytearray", "read-only mmap"])
def test_a_read_only_view_of_a_buffer_changed_during_the_write_is_stored_as_it_was_checksummed(
        tmp_path, monkeypatch, operation, kind):
    """Regression (red team L8, f01): only a writable buffer was copied before its write and
    checksum; a read-only view of a mutable object (``memoryview(bytearray).toreadonly()``, an
    ``mmap`` opened ACCESS_READ of a file that is written meanwhile) changed between the two
    and its resource was published unreadable for ever (ResourceCorruptError). Issue 9 item 3;
    protects promises 1 and 2: what is published reads back whole, as it was when written."""
    import mmap

    store = ToolOutputStore(tmp_path / "store", durable=False)
    original = b"a" * 200_000 + b"\n"
    if kind == "read-only mmap":
        backing = tmp_path / "backing"
        backing.write_bytes(original)
        fd = os.open(backing, os.O_RDWR)
        content = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)

        def change() -> None:  # another process writing the mapped file
            os.pwrite(fd, b"b" * len(original), 0)
    else:
        fd = -1
        changing = bytearray(original)
        content = memoryview(changing).toreadonly()

        def change() -> None:  # another thread changing the bytearray behind the view
            changing[:] = b"b" * len(changing)

    real = os.write

    def write_then_change(target, data):
        written = real(target, data)
        if bytes(data[:1]) == b"a":  # the content's bytes went out; now, before their checksum, change them
            change()
        return written

    monkeypatch.setattr(os, "write", write_then_change)  # the payload's writes (_local_writer)
    try:
        if operation == "write":
            resource = store.write("s", "c", content)
        elif operation == "truncate":
            resource = store.truncate("s", "c", content).resource
        elif operation == "write_stream":
            resource = store.write_stream("s", "c", iter([content]))
        else:
            resource = store.truncate_stream("s", "c", iter([b"start\n" * 20_000, content])).resource
    finally:
        monkeypatch.undo()
        if kind == "read-only mmap":
            content.close()
            os.close(fd)
        else:
            content.release()
    with store.view("s", resource.uri) as (_, data):  # verifies every chunk
        stored = bytes(data)
    assert stored.endswith(original)


@pytest.mark.parametrize("field", ["session_id", "tool_call_id", "mime", "name"])
@pytest.mark.parametrize("operation", ["write", "truncate", "truncate_small", "write_stream", "truncate_stream",
                                       "open_growing"])
def test_a_surrogate_pair_in_a_caller_string_is_refused_and_lone_surrogates_round_trip(tmp_path, field, operation):
    """Regression (red team B10 f01): session "\\ud83d\\ude00" (a high then a low surrogate, not the
    str "\\U0001F600") was written into the JSON record as two escapes that read back as the one
    character U+1F600: the writer was denied its own output and did not list it, while session
    "\\U0001F600" read and listed it (tool call id and name came back changed too). A record's
    strings hold no surrogate pair: the write is refused with the ValueError of other strings no
    record holds, and leaves nothing; a lone surrogate (or a low then a high) is kept exactly."""
    store = ToolOutputStore(tmp_path, durable=False)
    arguments = {"session_id": "s", "tool_call_id": "c", "mime": "text/plain", "name": "n"}
    big = b"x\n" * 100_000

    def attempt(value):
        given = {**arguments, field: value}
        session, call, extra = given["session_id"], given["tool_call_id"], {"mime": given["mime"], "name": given["name"]}
        if operation == "write":
            return store.write(session, call, big, **extra)
        if operation in ("truncate", "truncate_small"):
            return store.truncate(session, call, big if operation == "truncate" else "small", **extra).resource
        if operation == "write_stream":
            return store.write_stream(session, call, iter([big]), **extra)
        if operation == "truncate_stream":
            return store.truncate_stream(session, call, iter([big]), **extra).resource
        growing = store.open_growing(session, call, **extra)
        growing.write(big)
        return growing.finish(0).resource

    for paired in ("\ud83d\ude00", "a\udbff\udfffb", "\ud800\ud800\udc00"):
        with pytest.raises(ValueError, match=f"{field} holds a surrogate pair"):
            attempt(paired)
    assert store.records() == [] and store.records("\U0001F600") == []
    assert not [name for name in os.listdir(store.directory) if name.endswith(".txt")]
    if operation == "truncate_small":
        return  # within the limits nothing is written: the rest is about what a record keeps
    for lone in ("\udc80", "\ud800", "\ude00\ud83d", "x\ud83dy\ude00"):
        resource = attempt(lone)
        session = lone if field == "session_id" else "s"
        (record,) = [r for r in store.records(session) if r.resource.uri == resource.uri]
        assert getattr(record, field, None) == lone or getattr(record.resource, field, None) == lone
        assert store.read(session, resource.uri, limit=2).content == "x\n"
        if field == "session_id":
            with pytest.raises(AccessDeniedError, match="not found in this session"):
                store.read("\ufffd", resource.uri)


# ------------------------------------------------------------------ red team C11
_ONE_UNREADABLE_RECORD = """
import json, os, shutil, subprocess, sys
from overspill import StorageError, ToolOutputStore

data = sys.argv[1]
config = {"tool_output": {"max_total_bytes": 2_000_000}}
seen = {}

def listed(session):
    try:
        return [resource.uri for resource in ToolOutputStore(data, durable=False, config=config).resources(session)]
    except StorageError as error:
        return str(error)

store = ToolOutputStore(data, durable=False, config=config)
hidden = store.write("a", "c", b"a" * 400_000)  # the oldest
seen["hidden"] = hidden.uri
seen["b"] = [store.write("b", "c", b"b" * 400_000).uri for _ in range(3)]
listed("a"), listed("b")  # the index knows hidden as a's
record = store.directory / f"{hidden.id}.json"
os.chmod(record, 0)
seen["own, indexed"] = listed("a")
seen["other, indexed"] = listed("b")
shutil.rmtree(store.directory.parent / "index")  # always safe to delete
seen["other, caught up"] = listed("b")
ls = subprocess.run([sys.executable, "-m", "overspill", "ls", "--session", "b", "--data-dir", data],
                    capture_output=True, text=True)
seen["ls"] = [ls.returncode, ls.stdout + ls.stderr]
store = ToolOutputStore(data, durable=False, config=config)
try:
    seen["past the quota"] = [store.write("c", "c", b"c" * 400_000).uri for _ in range(3)]
except StorageError as error:
    seen["past the quota"] = str(error)
seen["left"] = sorted(name[:-5] for name in os.listdir(store.directory) if name.endswith(".json"))
os.chmod(record, 0o600)  # readable again: listed again
seen["own, readable again"] = listed("a")
print(json.dumps(seen))
"""


def test_one_unreadable_record_never_breaks_another_sessions_listing_nor_the_eviction(tmp_path, subprocess_env):
    """Regression (red team C11 r02): one record the process cannot read (session a's, mode 000)
    made session b's listing raise ``StorageError: cannot read resource <a's URI>`` once the index
    had to catch up (it was deleted: "always safe"), ``overspill ls --session b`` exit 4, and every
    write past the quota fail with nothing evicted.  Whose an unreadable record is cannot be told
    without reading it: a listing of another session, and the eviction's listing, skip it (never
    named, never cached as known: listed again once readable); a listing of the session the index
    read it as (its own) still says it cannot read it."""
    import json

    command = [sys.executable, "-c", _ONE_UNREADABLE_RECORD, str(tmp_path)]
    if os.geteuid() == 0:  # as root, mode 000 is ignored without CAP_DAC_OVERRIDE: drop every capability
        if not os.path.exists("/usr/bin/setpriv"):
            pytest.skip("running as root without setpriv: file modes cannot be made to apply")
        command = ["/usr/bin/setpriv", "--bounding-set=-all", "--inh-caps=-all", *command]
    ran = subprocess.run(command, env=subprocess_env, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    seen = json.loads(ran.stdout)
    hidden, b = seen["hidden"], seen["b"]
    assert "cannot read resource " + hidden in seen["own, indexed"]  # its own: an error, as before
    assert seen["other, indexed"] == b
    assert seen["other, caught up"] == b
    assert seen["ls"][0] == 0 and hidden not in seen["ls"][1] and all(uri in seen["ls"][1] for uri in b)
    assert isinstance(seen["past the quota"], list) and len(seen["past the quota"]) == 3
    # The oldest readable outputs went; the unreadable one could not be judged and stays.
    left = ["tool-output://" + resource_id for resource_id in seen["left"]]
    assert hidden in left and not set(b) <= set(left) and set(seen["past the quota"]) <= set(left)
    assert seen["own, readable again"] == [hidden]


# ------------------------------------------------------------------ red team E14
def _stored_copy(store: ToolOutputStore, uri: str) -> bytes:
    """Every byte of the resource at ``uri``, read back verified a page at a time."""
    parts, offset = [], 0
    while offset is not None:
        _, data, _, offset = store.read_bytes("s", uri, offset=offset)
        parts.append(data)
    return b"".join(parts)


@pytest.mark.parametrize("kind", ["bytearray", "writable view", "read-only view"])
def test_truncate_of_a_buffer_changed_during_the_call_describes_the_stored_copy(tmp_path, kind):
    """Regression (red team E14): ``truncate`` cut the preview and counted the lines of a mutable
    buffer as it was live, then stored it a MiB at a time while another thread changed it, so the
    model was told lines, a head and a continue offset of other bytes than the stored copy's
    (python: lines=2000000 of a copy of 1572865; cython: a head of ``a\\na…`` on a copy of
    ``bbbb``). Stored bytes are sacred: whatever state of the buffer was stored, the result is
    what ``truncate`` gives of those bytes themselves."""
    store = ToolOutputStore(tmp_path / "store", durable=False)
    reference = ToolOutputStore(tmp_path / "reference", durable=False)
    size = 3 << 20  # past the MiB the write copies at a time: a stored copy may hold both states
    many_lines, one_line = (b"a" * 63 + b"\n") * (size // 64), b"b" * size
    changing = bytearray(many_lines)
    content = {"bytearray": changing, "writable view": memoryview(changing),
               "read-only view": memoryview(changing).toreadonly()}[kind]
    flips = [0]
    stop = threading.Event()

    def flip() -> None:  # same length: the buffer is never resized, only rewritten
        while not stop.is_set():
            changing[:] = one_line if flips[0] % 2 == 0 else many_lines
            flips[0] += 1

    flipper = threading.Thread(target=flip, daemon=True)
    flipper.start()
    changed_during, deadline = 0, time.monotonic() + 3
    try:
        while changed_during < 3 and time.monotonic() < deadline:
            before = flips[0]
            result = store.truncate("s", "c", content)
            changed_during += flips[0] != before
            stored = _stored_copy(store, result.resource.uri)
            expected = reference.truncate("s", "c", stored)
            shown = result.content.replace(result.resource.uri, "URI")
            assert (result.lines, result.next_offset, result.resource.size) == (
                expected.lines, expected.next_offset, expected.resource.size)
            assert shown == expected.content.replace(expected.resource.uri, "URI")
    finally:
        stop.set()
        flipper.join()
    assert changed_during, "no change landed during a call: the race was not exercised"


@pytest.mark.parametrize("kind", ["bytearray", "writable view", "read-only view", "mmap"])
def test_truncate_of_a_buffer_rewritten_at_its_first_write_describes_the_stored_copy(tmp_path, monkeypatch, kind):
    """The same promise as the thread test above, made deterministic (review R19): the buffer is
    rewritten, same length, at the payload's first ``os.write``, so every call stores bytes other
    than the ones it was given; before the fix the result told 49,152 lines of a copy of 16,385."""
    store = ToolOutputStore(tmp_path / "store", durable=False)
    reference = ToolOutputStore(tmp_path / "reference", durable=False)
    size = 3 << 20
    many_lines, one_line = (b"a" * 63 + b"\n") * (size // 64), b"b" * size
    if kind == "mmap":
        changing = mmap.mmap(-1, size)
        changing[:] = many_lines
        content = changing
    else:
        changing = bytearray(many_lines)
        content = {"bytearray": changing, "writable view": memoryview(changing),
                   "read-only view": memoryview(changing).toreadonly()}[kind]
    real_write, rewritten = os.write, []

    def write(fd: int, data) -> int:
        if not rewritten:
            rewritten.append(True)
            changing[:] = one_line
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)
    result = store.truncate("s", "c", content)
    monkeypatch.setattr(os, "write", real_write)
    assert rewritten, "the payload was never written through os.write: the rewrite did not land"
    expected = reference.truncate("s", "c", _stored_copy(store, result.resource.uri))
    assert (result.lines, result.next_offset, result.resource.size) == (
        expected.lines, expected.next_offset, expected.resource.size)
    assert result.content.replace(result.resource.uri, "URI") == expected.content.replace(
        expected.resource.uri, "URI")
