"""Failures at every step of a write leave the whole resource or nothing,
and cleanup leaves nothing behind; a hypothesis state machine drives two
stores on one folder against a dict model."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import tempfile
import time
from datetime import timedelta

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule, run_state_machine_as_test

from overspill import AccessDeniedError, ResourceNotFoundError, StorageError, ToolOutputStore
from overspill.text import encode_content, shown_text, view_flags

FAULTY_CALLS = ["open", "write", "fsync", "rename"]


@contextlib.contextmanager
def fail_nth(name: str, n: int):
    """Make the n-th call of ``os.<name>`` fail with ENOSPC; yield whether it fired."""
    real = getattr(os, name)
    state = {"calls": 0, "fired": False}

    def faulty(*args, **kwargs):
        state["calls"] += 1
        if state["calls"] == n:
            state["fired"] = True
            raise OSError(errno.ENOSPC, "No space left on device (injected)")
        return real(*args, **kwargs)

    setattr(os, name, faulty)
    try:
        yield state
    finally:
        setattr(os, name, real)


def contents_of(store: ToolOutputStore) -> set[str]:
    return {name for name in os.listdir(store.directory) if name != ".cleanup.lock"}


@pytest.mark.parametrize("call", FAULTY_CALLS)
@pytest.mark.parametrize("operation", ["write", "truncate"])
def test_every_failure_leaves_all_or_nothing(tmp_path, call, operation):
    text = "\n".join(f"line {i} ünïcode" for i in range(3000))
    n = 0
    while True:
        n += 1
        folder = tmp_path / f"{call}-{n}"
        store = ToolOutputStore(folder, durable=True)
        with fail_nth(call, n) as state:
            try:
                if operation == "write":
                    resource = store.write("s", "c", text)
                else:
                    resource = store.truncate("s", "c", text).resource
            except StorageError:
                resource = None
        listed = store.resources("s")
        if resource is None:
            assert state["fired"] and listed == []
        else:
            assert listed == [resource]
            page = store.read("s", resource.uri, limit=60)
            assert page.content.encode() == encode_content(text)[: len(page.content.encode())]
        store.cleanup(now=time.time() + 7200)
        expected = set() if resource is None else {f"{resource.id}.txt", f"{resource.id}.json"}
        assert contents_of(store) == expected
        if not state["fired"]:
            break
    assert n > 1, "the fault was never injected"


class TwoStoresOneFolder(RuleBasedStateMachine):
    """Two stores share a folder; a dict says what each session must read."""

    resources = Bundle("resources")

    def __init__(self) -> None:
        super().__init__()
        self.folder = tempfile.mkdtemp(prefix="overspill-state-")
        self.stores = [ToolOutputStore(self.folder, durable=False), ToolOutputStore(self.folder, durable=False)]
        self.model: dict[str, tuple[str, bytes]] = {}
        self.order: list[str] = []

    def teardown(self) -> None:
        for store in self.stores:
            store.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    @rule(target=resources, which=st.integers(0, 1), session=st.sampled_from(["a", "b"]),
          content=st.one_of(st.text(max_size=300), st.binary(max_size=300)))
    def write(self, which, session, content):
        resource = self.stores[which].write(session, "call", content)
        self.model[resource.uri] = (session, encode_content(content))
        self.order.append(resource.uri)
        return resource.uri

    @rule(target=resources, which=st.integers(0, 1), session=st.sampled_from(["a", "b"]),
          content=st.text(alphabet="ab\n€", max_size=400))
    def truncate(self, which, session, content):
        result = self.stores[which].truncate(session, "call", content, max_lines=5, max_bytes=40)
        if result.resource is None:
            assert result.content == content
            return "tool-output://00000000000000000000000000"
        self.model[result.resource.uri] = (session, encode_content(content))
        self.order.append(result.resource.uri)
        return result.resource.uri

    @rule(uri=resources, which=st.integers(0, 1), session=st.sampled_from(["a", "b"]),
          offset=st.integers(0, 500), limit=st.integers(1, 64))
    def read(self, uri, which, session, offset, limit):
        store = self.stores[which]
        if uri not in self.model:
            with pytest.raises(ResourceNotFoundError):
                store.read(session, uri, offset=offset, limit=limit)
            return
        owner, data = self.model[uri]
        if owner != session:
            with pytest.raises(AccessDeniedError):
                store.read(session, uri, offset=offset, limit=limit)
            return
        page = store.read(session, uri, offset=offset, limit=limit)
        end = len(data) if page.next is None else page.next
        assert min(offset, len(data)) <= page.offset <= end <= len(data)
        # The model is shown the view of the stored bytes (an ESC alone is dropped).
        assert page.content == shown_text(data[page.offset : end], view_flags(store.views))

    @rule(uri=consumes(resources), which=st.integers(0, 1))
    def expire_and_clean(self, uri, which):
        if uri in self.model:
            path = os.path.join(self.folder, "tool-output", "managed", uri[len("tool-output://"):] + ".json")
            with open(path) as file:
                document = json.load(file)
            document["created"] -= 30 * 86400 * 1000
            with open(path, "w") as file:
                json.dump(document, file)
            del self.model[uri]
        report = self.stores[which].cleanup()
        assert not report.skipped

    @rule(which=st.integers(0, 1))
    def clean(self, which):
        assert self.stores[which].cleanup().removed == 0

    @invariant()
    def listings_match(self):
        for session in ("a", "b"):
            expected = [uri for uri in self.order if uri in self.model and self.model[uri][0] == session]
            for store in self.stores:
                assert [r.uri for r in store.resources(session)] == expected


def test_two_stores_on_one_folder_match_the_model():
    # A plain test function (not the generated TestCase) so it runs under both implementations.
    run_state_machine_as_test(TwoStoresOneFolder, settings=settings(max_examples=30, stateful_step_count=25,
                                                                    deadline=None))


def test_cleanup_retention_boundary(tmp_path):
    store = ToolOutputStore(tmp_path, durable=False, retention=timedelta(hours=1))
    resource = store.write("s", "c", "x")
    assert store.cleanup(now=time.time() + 1800).removed == 0
    assert store.cleanup(now=time.time() + 3700).removed == 1
    with pytest.raises(ResourceNotFoundError):
        store.read("s", resource.uri)


_OUT_OF_DESCRIPTORS = r'''
import os, resource, sys, tempfile
from overspill import ToolOutputStore
from overspill.errors import StorageError
store = ToolOutputStore(tempfile.mkdtemp(), durable=False)
text = "".join("line %d\n" % i for i in range(100000))
lowest_free = os.open(os.devnull, os.O_RDONLY)
os.close(lowest_free)
resource.setrlimit(resource.RLIMIT_NOFILE, (lowest_free, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
try:
    store.truncate("s", "c", text)
except StorageError as error:
    print("StorageError", error.errno)
'''


def test_out_of_descriptors_the_first_stored_output_is_a_storage_error(subprocess_env, tmp_path):
    """Regression (red team f09): the modules a first stored output needs (the
    kernels, the preview) are imported lazily, inside the call but outside the
    code that turns OSError into StorageError: out of descriptors, the first
    large truncate() raised a raw OSError from the import."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _OUT_OF_DESCRIPTORS], capture_output=True, text=True,
                          env=subprocess_env, cwd=tmp_path, timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == f"StorageError {errno.EMFILE}", done.stdout + done.stderr


_OUT_OF_DESCRIPTORS_CASES = r'''
import os, resource, sys, tempfile
from overspill import ToolOutputStore
from overspill.errors import StorageError
store = ToolOutputStore(tempfile.mkdtemp(), durable=False)
store.write("s", "c", b"x")  # the store is open and has written once
contents = {
    "repeated lines": "x\n" * 50000,  # a preview trimmed of its repeated lines (overspill._runs)
    "repeated lines as bytes": b"x\n" * 50000,
    "escapes": "\x1b[1mbold\x1b[0m line\n" * 50000,  # a view differs from the text (overspill._views)
}
case = sys.argv[1]
text = contents[case]
lowest_free = os.open(os.devnull, os.O_RDONLY)
os.close(lowest_free)
resource.setrlimit(resource.RLIMIT_NOFILE, (lowest_free, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
try:
    store.truncate("s", "c", text)
    print("no error")
except StorageError as error:
    print("StorageError", error.errno)
'''


@pytest.mark.parametrize("case", ["repeated lines", "repeated lines as bytes", "escapes"])
def test_out_of_descriptors_a_first_preview_kernel_import_is_a_storage_error(subprocess_env, tmp_path, case):
    """Regression (red team L8, f04): out of descriptors, the first over-limit truncate() of a
    process raised a raw OSError (EMFILE on overspill/_runs.py), imported lazily by the preview
    kernel while it cut the preview, before anything was stored and outside the code that turns
    OSError into StorageError. README: a resource file that cannot be opened now (no
    descriptors) is a StorageError; no raw OSError leaves the store."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _OUT_OF_DESCRIPTORS_CASES, case], capture_output=True, text=True,
                          env=subprocess_env, cwd=tmp_path, timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == f"StorageError {errno.EMFILE}", done.stdout + done.stderr
