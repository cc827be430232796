"""The local backend's listing index (backends/_index.py): a cache that never
shows what the pairs do not hold, and never hides what they do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from processes import forked_while_held

from overspill import ToolOutputStore
from overspill.backends import _index
from overspill.backends._index import RACY_NS, ListingIndex, session_key
from overspill.backends.local import LocalBackend
from overspill.records import new_id, uri_for

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the index needs flock")


def settle(store: ToolOutputStore) -> None:
    """Age the managed folder's time past the racy window, as if the last
    change were long ago (what a real folder looks like between writes)."""
    past = time.time_ns() - 10 * RACY_NS
    os.utime(store.directory, ns=(past, past))


def index_dir(data: Path) -> Path:
    return data / "tool-output" / "index"


def fresh(data: Path) -> ToolOutputStore:
    return ToolOutputStore(data, durable=False)


def uris(store: ToolOutputStore, session: str | None) -> list[str]:
    return [record.resource.uri for record in store.records(session)]


def peer_pair(directory: Path, session: str, content: bytes = b"written by the peer\n") -> str:
    """A pair as the peer (KiloCode/opencode) writes it: no checksums, plain files."""
    resource_id = new_id()
    (directory / f"{resource_id}.txt").write_bytes(content)
    (directory / f"{resource_id}.json").write_text(json.dumps({
        "version": 1, "id": resource_id, "uri": uri_for(resource_id), "sessionID": session,
        "toolCallID": "peer-call", "mime": "text/plain", "size": len(content), "created": time.time() * 1000,
    }))
    return uri_for(resource_id)


@pytest.fixture
def data(tmp_path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def filled(data) -> dict[str, list[str]]:
    """Three sessions, interleaved, and the uris each wrote, in order."""
    written: dict[str, list[str]] = {"a": [], "b": [], "c": []}
    with fresh(data) as store:
        for number in range(30):
            session = "abc"[number % 3]
            written[session].append(store.write(session, f"call-{number}", f"output {number}\n").uri)
    return written


def test_listing_matches_the_pairs_and_builds_the_index(data, filled):
    with fresh(data) as store:
        settle(store)
        for session, expected in filled.items():
            assert uris(store, session) == expected
        assert uris(store, None) == sorted(uri for session in filled.values() for uri in session)
        assert uris(store, "nobody") == []
    assert (index_dir(data) / "state").exists()
    assert (index_dir(data) / "sessions" / session_key("a")).exists()
    assert not (store.directory / "index").exists()  # nothing of the index inside managed/


def test_complete_index_is_read_without_listing_the_folder(data, filled):
    with fresh(data) as store:
        settle(store)
        assert uris(store, "a") == filled["a"]
    # White box: a pair planted while the folder's time is put back is
    # invisible to a trusted index, which shows the listing did not scan.
    # (Real changes always move the time; see test_a_new_pair_appears.)
    before = os.stat(store.directory).st_mtime_ns
    hidden = peer_pair(store.directory, "a")
    os.utime(store.directory, ns=(before, before))
    with fresh(data) as again:
        assert uris(again, "a") == filled["a"]
        os.utime(store.directory)  # any change moves it: now it is seen
        assert uris(again, "a") == [*filled["a"], hidden]


def test_a_new_pair_appears(data, filled):
    with fresh(data) as store:
        settle(store)
        assert uris(store, "b") == filled["b"]
    with fresh(data) as writer:
        added = writer.write("b", "late", "late output\n").uri
    with fresh(data) as reader:
        assert uris(reader, "b") == [*filled["b"], added]
        assert added in uris(reader, None)


def test_write_in_the_same_tick_as_the_catch_up_is_not_missed(data):
    # The folder's time right after a write is within the racy window: the
    # catch-up must not mark the index complete, or a write landing in the
    # same coarse tick would stay hidden.
    with fresh(data) as store:
        listed = []
        for number in range(20):
            listed.append(store.write("s", f"c{number}", f"{number}\n").uri)
            with fresh(data) as reader:
                assert uris(reader, "s") == listed


def test_a_catch_up_after_the_file_systems_clock_moved_on_marks_the_index_complete(data):
    # Listings right after a burst of writes need not wait RACY_NS: once the
    # file system's own clock (the index lock's time, touched before the stat)
    # is past the folder's time, a later change gets a later time.
    with fresh(data) as store:
        first = store.write("s", "c1", "one\n").uri
        time.sleep(0.05)  # several ticks of a coarse clock; far less than RACY_NS
        with fresh(data) as reader:
            assert uris(reader, "s") == [first]
        assert (index_dir(data) / "state").exists()
        second = store.write("s", "c2", "two\n").uri  # right after the catch-up: same tick or later
        with fresh(data) as reader:
            assert uris(reader, "s") == [first, second]


def test_peer_pairs_appear_in_a_first_build_and_in_a_catch_up(data, filled):
    with fresh(data) as store:
        first = peer_pair(store.directory, "a")
        settle(store)
        assert uris(store, "a") == [*filled["a"], first]
        settle(store)
        assert uris(store, "a") == [*filled["a"], first]  # index now complete
        second = peer_pair(store.directory, "peer-only")
    with fresh(data) as reader:
        assert uris(reader, "peer-only") == [second]
        assert reader.records("peer-only")[0].checksums is None


def test_a_record_still_being_written_is_looked_at_again(data, filled):
    with fresh(data) as store:
        resource_id = new_id()
        (store.directory / f"{resource_id}.txt").write_bytes(b"x\n")
        record_path = store.directory / f"{resource_id}.json"
        record_path.write_text("")  # the peer created the file, has not written it yet
        settle(store)
        assert uris(store, "c") == filled["c"]
        assert not (index_dir(data) / "state").exists()  # incomplete: one record was unreadable
        # Written in place: the folder's time does not move, the listing still finds it.
        before = os.stat(store.directory).st_mtime_ns
        record_path.write_text(json.dumps({
            "version": 1, "id": resource_id, "uri": uri_for(resource_id), "sessionID": "c",
            "toolCallID": "t", "mime": "text/plain", "size": 2, "created": time.time() * 1000}))
        os.utime(store.directory, ns=(before, before))
    with fresh(data) as reader:
        assert uris(reader, "c") == [*filled["c"], uri_for(resource_id)]


def test_deleted_pairs_disappear_and_empty_sessions_lose_their_list(data, filled):
    with fresh(data) as store:
        settle(store)
        assert uris(store, "a") == filled["a"]
        for uri in filled["a"][:5]:
            resource_id = uri.split("://")[1]
            os.unlink(store.directory / f"{resource_id}.json")
            os.unlink(store.directory / f"{resource_id}.txt")
    with fresh(data) as reader:
        assert uris(reader, "a") == filled["a"][5:]
        for uri in filled["a"][5:]:
            reader._backend.delete(uri.split("://")[1])
    with fresh(data) as reader:
        assert uris(reader, "a") == []
        assert uris(reader, "b") == filled["b"]
    assert not (index_dir(data) / "sessions" / session_key("a")).exists()


def test_cleanup_and_the_listing_agree(data, filled):
    with fresh(data) as store:
        settle(store)
        assert uris(store, None)
        report = store.cleanup(now=time.time() + 8 * 86400)
        assert report.removed == 30
        assert uris(store, None) == [] and uris(store, "a") == []


@pytest.mark.parametrize("victim", ["state", "ids", "session", "bad-id", "sealed-junk"])
def test_a_corrupt_index_is_rebuilt_not_trusted(data, filled, victim):
    with fresh(data) as store:
        settle(store)
        assert uris(store, "a") == filled["a"]
        assert uris(store, None)
    index = index_dir(data)
    session_file = index / "sessions" / session_key("a")
    if victim == "state":
        (index / "state").write_bytes(b"garbage")
    elif victim == "ids":
        (index / "ids").write_bytes((index / "ids").read_bytes()[:-7])
    elif victim == "session":
        session_file.write_bytes(session_file.read_bytes()[:40])
    elif victim == "bad-id":
        # Well sealed (right count and CRC), but an id that would be a path.
        session_file.write_bytes(_index._seal(["../../../../etc/passwd"], session_file.name))
    else:
        session_file.write_bytes(b"\x00\xff not an index at all")
    with fresh(data) as reader:
        assert uris(reader, "a") == filled["a"]
        assert uris(reader, None) == sorted(u for s in filled.values() for u in s)
        settle(reader)
        assert uris(reader, "a") == filled["a"]
    # Rebuilt whole: the damaged file is valid again.
    assert _index._unseal(session_file.read_bytes(), session_file.name) is not None
    assert _index._unseal((index / "state").read_bytes(), "state") is not None


@pytest.mark.parametrize("change", ["deleted", "replaced by another session's", "moved aside",
                                    "overwritten in place with another session's"])
def test_a_session_list_removed_by_hand_is_not_an_empty_session(data, filled, change):
    # A complete index reads a missing session list as "nothing stored": a
    # list deleted or swapped by hand (the folder unchanged) hid the session.
    with fresh(data) as store:
        settle(store)
        assert uris(store, "a") == filled["a"] and uris(store, "b") == filled["b"]
    sessions = index_dir(data) / "sessions"
    if change == "deleted":
        (sessions / session_key("a")).unlink()
    elif change == "moved aside":
        os.rename(sessions / session_key("a"), sessions / "s-a.bak")
    elif change.startswith("overwritten"):
        # cp s-b s-a: neither the sessions folder's time nor its inode changes.
        (sessions / session_key("a")).write_bytes((sessions / session_key("b")).read_bytes())
    else:
        os.replace(sessions / session_key("b"), sessions / session_key("a"))
    for _ in range(2):  # the catch-up, then the index it left
        with fresh(data) as reader:
            assert uris(reader, "a") == filled["a"]
            assert uris(reader, "b") == filled["b"]
            assert uris(reader, "c") == filled["c"]


def test_an_id_list_copied_from_another_folder_is_not_trusted(tmp_path, data, filled):
    # Well sealed, so not "damaged": a complete index served it as this
    # folder's ids to every listing of all sessions (stats, cleanup's room).
    other = tmp_path / "other"
    with fresh(other) as elsewhere:
        foreign = [elsewhere.write("a", "x", "elsewhere\n").uri for _ in range(2)]
        settle(elsewhere)
        assert uris(elsewhere, None) == foreign
    everything = sorted(u for s in filled.values() for u in s)
    with fresh(data) as store:
        settle(store)
        assert uris(store, None) == everything
    (index_dir(data) / "ids").write_bytes((index_dir(other) / "ids").read_bytes())
    for _ in range(2):
        with fresh(data) as reader:
            assert uris(reader, None) == everything
            assert uris(reader, "a") == filled["a"]


def test_an_unwritable_index_leaves_listings_correct(tmp_path, filled, data):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the index would go")
    backend = LocalBackend(data / "tool-output" / "managed", durable=False, index=blocker / "index")
    try:
        assert [record.resource.uri for record in backend.records("b")] == filled["b"]
    finally:
        backend.close()


def test_index_inside_the_managed_folder_is_refused(tmp_path):
    with pytest.raises(ValueError, match="outside"):
        LocalBackend(tmp_path / "managed", index=tmp_path / "managed" / "index")


def test_a_catch_up_reads_only_new_records(data, filled):
    with fresh(data) as store:
        settle(store)
        store.records(None)  # complete index
        added = store.write("a", "new", "new\n").uri
        settle(store)
        loaded: list[str] = []
        backend = LocalBackend(store.directory, durable=False)

        def load(resource_id):
            loaded.append(resource_id)
            return backend.record(resource_id)

        index = ListingIndex(store.directory, index_dir(data), durable=False)
        ids = index.candidates("a", load)
        assert loaded == [added.split("://")[1]]
        assert [uri_for(i) for i in ids] == [*filled["a"], added]
        loaded.clear()
        assert index.candidates("a", load) == ids and loaded == []  # complete again: no catch-up
        backend.close()


def test_session_keys_are_file_names():
    assert session_key("cli") == "s-cli"
    for session in ["../x", "a/b", ".hidden", "x" * 65, "ünï", "\udc80", " ", "a b"]:
        key = session_key(session)
        assert key.startswith("h-") and "/" not in key and len(key) < 40
    assert session_key("a/b") != session_key("a/c")


WORKER = r"""
import sys
from overspill import ToolOutputStore
data, session, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
written = []
with ToolOutputStore(data, durable=False) as store:
    for number in range(count):
        written.append(store.write(session, f"c{number}", f"{session} {number}\n").uri)
        if number % 3 == 0:
            with ToolOutputStore(data, durable=False) as reader:
                listed = [r.resource.uri for r in reader.records(session)]
            assert listed == written, (session, number, len(listed), len(written))
            if number % 9 == 0:
                with ToolOutputStore(data, durable=False) as reader:
                    everything = {r.resource.uri for r in reader.records()}
                assert set(written) <= everything
print(" ".join(written))
"""


def test_concurrent_writers_and_listers_in_many_processes(data, filled):
    with fresh(data) as store:
        settle(store)
        store.records("a")
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, str(data), f"w{n}", "40"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in range(4)]
    results = {}
    for number, worker in enumerate(workers):
        out, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err
        results[f"w{number}"] = out.split()
    with fresh(data) as reader:
        for session, expected in results.items():
            assert uris(reader, session) == expected
        assert uris(reader, "a") == filled["a"]
        settle(reader)
        everything = uris(reader, None)
        assert everything == sorted([*sum(results.values(), []), *sum(filled.values(), [])])
    # And the index those processes left is intact and complete.
    with fresh(data) as reader:
        for session, expected in results.items():
            assert uris(reader, session) == expected


def test_leftovers_of_a_killed_catch_up_are_removed(data, filled):
    index = index_dir(data)
    with fresh(data) as store:
        settle(store)
        assert uris(store, "a") == filled["a"]
    leftovers = [index / ".ids.0badf00d.tmp", index / "sessions" / ".s-a.0badf00d.tmp"]
    for leftover in leftovers:
        leftover.write_bytes(b"half of a list")
    (index / "ids").write_bytes(b"torn")  # the id list damaged too: a rebuild
    with fresh(data) as reader:
        assert uris(reader, None) == sorted(u for s in filled.values() for u in s)
        assert uris(reader, "a") == filled["a"]
    assert not any(leftover.exists() for leftover in leftovers)


@pytest.mark.parametrize("victim", ["state", "ids", "session"])
@pytest.mark.parametrize("planted", ["fifo", "symlink to /dev/zero", "symlink to a good copy", "oversized"])
def test_listing_never_blocks_on_or_follows_a_planted_index_file(data, filled, subprocess_env, victim, planted):
    """Regression (issue 19, item 16): a FIFO as index/state or index/ids
    blocked ``ls`` and ``stats`` for ever, and a symlink to /dev/zero read
    without limit into a MemoryError.  Regular files only, never through a
    symlink, at most ``MAX_FILE_BYTES``: anything else is damage, rebuilt."""
    with fresh(data) as store:
        settle(store)
        assert uris(store, "a") == filled["a"]
        assert uris(store, None)
    index = index_dir(data)
    path = index / "sessions" / session_key("a") if victim == "session" else index / victim
    good = path.read_bytes()
    path.unlink()
    if planted == "fifo":
        os.mkfifo(path)
    elif planted == "symlink to /dev/zero":
        path.symlink_to("/dev/zero")
    elif planted == "symlink to a good copy":
        (index.parent / "copy").write_bytes(good)
        path.symlink_to(index.parent / "copy")
    else:
        with open(path, "wb") as file:
            file.truncate(_index.MAX_FILE_BYTES + 1)  # sparse: no disk used
    # In a child with a deadline: without the fix these block for ever or die of MemoryError.
    script = ("import sys; from overspill import ToolOutputStore as S\n"
              f"s = S({str(data)!r}, durable=False)\n"
              "print(len(s.records('a')), len(s.records()))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60, env=subprocess_env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(len(filled["a"])).encode(), str(sum(map(len, filled.values()))).encode()]
    with fresh(data) as reader:
        settle(reader)
        assert uris(reader, "a") == filled["a"]
        assert uris(reader, None) == sorted(u for s in filled.values() for u in s)
    # Replaced by a sealed regular file by the catch-up.
    assert path.is_file() and not path.is_symlink()
    assert _index._unseal(path.read_bytes(), path.name) is not None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_fork_during_a_catch_up_leaves_the_index_lock_to_the_parent(data, filled, monkeypatch):
    """Red team f06b: a fork while another thread caught the index up gave the child a copy of
    ``index/lock``'s locked descriptor: the parent's next catch-up waited for it for as long as
    the child lived. The child now closes its copy."""
    import fcntl
    import threading

    store = fresh(data)
    store.write("a", "new", "changes the folder\n")
    inside, release = threading.Event(), threading.Event()
    real_store = ListingIndex._store

    def slow_store(index, *args, **kwargs):
        inside.set()
        release.wait()
        return real_store(index, *args, **kwargs)

    monkeypatch.setattr(ListingIndex, "_store", slow_store)
    holder = threading.Thread(target=store.records, args=("a",), daemon=True)
    with forked_while_held(holder, inside, release, monkeypatch.undo):
        fd = os.open(index_dir(data) / "lock", os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError while the child holds it
        finally:
            os.close(fd)
        store.write("a", "newer", "changes it again\n")
        assert len(store.records("a")) == len(filled["a"]) + 2


@pytest.mark.parametrize("victim", ["usage", "lock", "cleanup lock"])
@pytest.mark.parametrize("planted", ["fifo", "symlink to /dev/zero", "socket"])
def test_a_planted_usage_or_lock_file_is_replaced_and_writes_go_on(tmp_path, subprocess_env, victim, planted):
    """Regression (issue 19 item 16, red team E f03): a FIFO at ``index/usage`` made every later
    write fail for good ("cannot make room ...: Illegal seek"): the lock files were opened O_RDWR
    without checking they are regular. Now a FIFO, socket or symlink there is damage, opened
    without blocking and replaced by a regular file (the usage total recounted from the folder)."""
    import socket

    data = tmp_path / "data"
    with fresh(data) as store:
        first = store.truncate("s", "c0", "x\n" * 100_000).resource
    managed = data / "tool-output" / "managed"
    path = {"usage": index_dir(data) / "usage", "lock": index_dir(data) / "lock",
            "cleanup lock": managed / ".cleanup.lock"}[victim]
    if path.exists():
        path.unlink()
    held = None
    if planted == "fifo":
        os.mkfifo(path)
    elif planted == "socket":
        held = socket.socket(socket.AF_UNIX)
        held.bind(str(path))
    else:
        path.symlink_to("/dev/zero")
    # In a child with a deadline: a blocking open of the FIFO must not hang the suite.
    script = ("from overspill import ToolOutputStore as S\n"
              f"s = S({str(data)!r}, durable=False)\n"
              "for i in range(3): assert s.truncate('s', f'c{i + 1}', 'y\\n' * 100000).resource is not None\n"
              "print(len(s.records('s')), s.cleanup().removed)")
    try:
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60, env=subprocess_env)
    finally:
        if held is not None:
            held.close()
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [b"4", b"0"]
    assert path.is_file() and not path.is_symlink()
    if victim == "usage":  # recounted from the folder: the four outputs' payloads and records
        assert int(path.read_text()) >= 4 * 200_000
    with fresh(data) as reader:
        assert reader.read("s", first.uri).content.startswith("x\n")


@pytest.mark.parametrize("victim", ["usage", "lock", "cleanup lock"])
def test_a_lock_file_replaced_while_being_locked_is_locked_where_it_is_now(tmp_path, monkeypatch, victim):
    """Regression (stop 14's left-alone lock-file race): a repair renames a new regular file over a
    damaged lock file; a process that opened the old one and then took its flock held a lock on a
    file no longer at the path, and excluded no one (two writers then held "the" usage lock). Each
    lock is now checked to be on the file at its path after the flock, and taken again if not."""
    import fcntl

    from overspill.backends._sweep import folder_lock

    data = tmp_path / "data"
    with fresh(data) as store:
        store.truncate("s", "c0", "x\n" * 100_000)
        managed = Path(store.directory)
    path = {"usage": index_dir(data) / "usage", "lock": index_dir(data) / "lock",
            "cleanup lock": managed / ".cleanup.lock"}[victim]
    path.touch()
    real_flock = fcntl.flock
    swapped = []

    def flock_after_a_repair(fd, operation):
        if not swapped and operation & fcntl.LOCK_EX:  # the repair lands between the open and the flock
            swapped.append(True)
            spare = path.with_name(".spare.tmp")
            spare.touch()
            os.rename(spare, path)
        return real_flock(fd, operation)

    def the_path_is_locked() -> bool:
        probe = os.open(path, os.O_RDWR)
        try:
            real_flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(probe)
        return False

    monkeypatch.setattr(fcntl, "flock", flock_after_a_repair)
    if victim == "cleanup lock":
        with folder_lock(managed, ".cleanup.lock", wait=True) as held:
            assert held
            assert the_path_is_locked()
    else:
        with fresh(data) as store:
            if victim == "usage":
                usage = store._backend._usage
                fd = usage._locked()
                try:
                    assert the_path_is_locked()
                finally:
                    usage._release(fd)
            else:
                index = store._backend._index
                fd = index._acquire()
                assert fd is not None
                try:
                    assert the_path_is_locked()
                finally:
                    _files_close(fd)
    assert swapped


def _files_close(fd: int) -> None:
    from overspill import _files

    _files.close_lock_file(fd)


def test_a_lock_repair_whose_temporary_file_a_catch_up_removed_tries_again(tmp_path, monkeypatch):
    """Regression: an index catch-up (holding the index's lock, not the usage file's) removes every
    ``.*.tmp`` of ``index/`` as a killed write's, a lock-file repair's temporary included; the
    repair's rename then raised FileNotFoundError and the write failed. It now looks again."""
    from overspill import _files

    data = tmp_path / "data"
    with fresh(data) as store:
        store.truncate("s", "c0", "x\n" * 100_000)
    path = index_dir(data) / "usage"
    path.unlink()
    os.mkfifo(path)
    real_create = _files.create_exclusive
    removed = []

    def created_then_removed(name, *args, **kwargs):
        fd = real_create(name, *args, **kwargs)
        if not removed and os.path.basename(name).startswith(".usage."):
            removed.append(name)
            os.unlink(name)  # what a catch-up's sweep of temporaries does
        return fd

    monkeypatch.setattr(_files, "create_exclusive", created_then_removed)
    with fresh(data) as store:
        usage = store._backend._usage
        fd = usage._locked()  # the usage total's lock, as a write's quota check takes it
        try:
            assert removed and path.is_file() and not path.is_symlink()
            assert os.fstat(fd).st_ino == os.lstat(path).st_ino
        finally:
            usage._release(fd)
        assert store.truncate("s", "c1", "y\n" * 100_000).resource is not None


@pytest.mark.parametrize("when", [f"after sessions/ is looked at ({n})" for n in range(1, 5)]
                         + ["after the id list is written", "after the catch-up's own write, in the same tick"])
def test_a_session_list_deleted_during_a_catch_up_does_not_hide_the_session(data, monkeypatch, when):
    """Red team S9 f01: another process deleting ``index/sessions/s-s1`` while a catch-up ran
    (after its check for hand-made changes to ``sessions/``, or later in the tick of its own
    writes) was recorded as the catch-up's own doing: the index was marked complete with the list
    missing, and records('s1') listed nothing, in every process, until the folder changed again.
    The deletion is tried at each point the catch-up looks at ``sessions/``, and right after its
    own write with the folder's time kept (a coarse clock's same tick)."""
    with fresh(data) as store:
        mine = [store.write("s1", "c", b"x" * 10).uri for _ in range(3)]
        assert uris(store, "s1") == mine
        store.write("s0", "c", b"y")  # a change: the next listing catches up
        settle(store)
    victim = index_dir(data) / "sessions" / session_key("s1")
    real_line, real_replace = ListingIndex._sessions_line, ListingIndex._replace
    calls, deleted, wrote = [], [], []

    def delete(same_tick: bool) -> None:
        if deleted or not victim.exists():
            return
        sessions = victim.parent
        before = os.stat(sessions).st_mtime_ns
        victim.unlink()
        if same_tick:  # the file system's clock had not moved on since the catch-up's write
            os.utime(sessions, ns=(before, before))
        deleted.append(when)

    def looked_at(index):
        line = real_line(index)
        calls.append(line)
        if when.startswith("after the catch-up's own write"):
            if wrote:
                delete(same_tick=True)
        elif when.startswith("after sessions/") and len(calls) == int(when.rsplit("(", 1)[1].rstrip(")")):
            delete(same_tick=False)
        return line

    def replaced(index, path, data):
        real_replace(index, path, data)
        if os.path.dirname(path) == str(victim.parent):
            wrote.append(path)
        elif os.path.basename(path) == "ids" and when == "after the id list is written":
            delete(same_tick=False)

    monkeypatch.setattr(ListingIndex, "_sessions_line", looked_at)
    monkeypatch.setattr(ListingIndex, "_replace", replaced)
    with fresh(data) as store:
        store.records("s0")  # the catch-up, racing the deletion
    monkeypatch.undo()
    assert deleted, f"the catch-up looked at sessions/ {len(calls)} times"
    for _ in range(2):  # the index the catch-up left, then whatever the next listing leaves
        with fresh(data) as reader:
            assert uris(reader, "s1") == mine


# ------------------------------------------------------------------ red team C11
def edit_record(directory: Path, resource_id: str, **fields: object) -> None:
    """Edit fields of a record by hand as ``jq ... > tmp && mv tmp`` does: a new file renamed over it."""
    path = directory / f"{resource_id}.json"
    document = {**json.loads(path.read_bytes()), **fields}
    temporary = path.with_name(path.name + ".edit")
    temporary.write_text(json.dumps(document))
    temporary.chmod(0o600)
    os.rename(temporary, path)


def test_a_record_whose_session_is_edited_by_hand_is_listed_by_its_new_session(data):
    """Regression (red team C11 r03): a record whose ``sessionID`` was edited by hand (rewritten
    through a temporary file and a rename) was listed by no session, its new one included, in
    this store and in a fresh one: a catch-up read only the names it did not know, so the id
    stayed in its old session's list (where the listing's session check then dropped it).  The
    index keeps each record's inode, which a rename over it changes, and reads such a record again."""
    with fresh(data) as store:
        edited = store.write("alice", "c", b"hello\n" * 50)
        other = store.write("bob", "c", b"other\n" * 50)
        settle(store)
        assert uris(store, "alice") == [edited.uri] and uris(store, "bob") == [other.uri]  # the index complete
        sessions = ("alice", "bob", "carol")
        for session, expected in (("bob", {"alice": [], "bob": sorted([edited.uri, other.uri]), "carol": []}),
                                  ("carol", {"alice": [], "bob": [other.uri], "carol": [edited.uri]}),
                                  ("carol", {"alice": [], "bob": [other.uri], "carol": [edited.uri]})):
            edit_record(store.directory, edited.id, sessionID=session, toolCallID=f"edited for {session}")
            for reader in (store, fresh(data)):
                assert {name: uris(reader, name) for name in sessions} == expected, session
                assert uris(reader, None) == sorted([edited.uri, other.uri])
            settle(store)  # the next edit is made on a complete index
        assert store.read("carol", edited.uri).content == "hello\n" * 50
