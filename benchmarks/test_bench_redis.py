"""Redis backend benchmarks, against one real ``redis-server`` on loopback, in one run:

* a 50 KB page through the store (compiled and pure kernels) against a raw
  ``GETRANGE`` of the same bytes plus decode (goal: at most 1.5x);
* ``write_stream`` of 256 MiB (``OVERSPILL_BENCH_MIB``) in 64 KiB chunks
  against raw ``APPEND``s of the same chunks to one key (goal: at most 1.3x).

Run: ``python -m pytest benchmarks/test_bench_redis.py --benchmark-only``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import LARGE_MIB, make_text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from redis_servers import missing_reason, start_server  # noqa: E402

from overspill import ToolOutputStore, _kernels  # noqa: E402

IMPLEMENTATIONS = ["cython", "python"]
PAGE = 50 * 1024
PIECE = 64 * 1024

if missing_reason() is not None:
    pytest.skip(missing_reason(), allow_module_level=True)


@pytest.fixture(params=IMPLEMENTATIONS)
def implementation(request):
    previous = _kernels.IMPLEMENTATION
    _kernels.use(request.param)
    yield request.param
    _kernels.use(previous)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    started = start_server(parent=tmp_path_factory.mktemp("redis"))
    yield started
    started.stop()


@pytest.fixture(scope="module")
def store(server):
    with ToolOutputStore(url=server.url) as opened:
        yield opened


@pytest.fixture(scope="module")
def client(server):
    import redis

    opened = redis.Redis(host=server.host, port=server.port)
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def paged(store):
    """A 4 MiB resource of mixed text and a page offset inside its second chunk key."""
    data = make_text(4, True).encode()
    resource = store.write("bench", "c", data)
    return resource, 1024 * 1024 + 300_001, data


@pytest.fixture(scope="module")
def pieces():
    block = make_text(1, False).encode()[: 1024 * 1024]
    chunk = [block[i : i + PIECE] for i in range(0, len(block), PIECE)]
    return chunk * LARGE_MIB


# ------------------------------------------------------------ a 50 KB page
def test_redis_page_read(benchmark, implementation, store, paged):
    benchmark.group = "redis: 50 KB page"
    resource, offset, data = paged
    page = benchmark(store.read, "bench", resource.uri, offset=offset, limit=PAGE)
    assert page.content.encode() == data[page.offset : page.next]


def test_redis_page_read_baseline_getrange(benchmark, client, paged):
    benchmark.group = "redis: 50 KB page"
    resource, offset, data = paged
    from overspill.backends.redis import CHUNK_BYTES

    key = f"ovs:{{{resource.id}}}:c:{offset // CHUNK_BYTES}".encode()
    start = offset % CHUNK_BYTES
    text = benchmark(lambda: client.getrange(key, start, start + PAGE - 1).decode("utf-8", "replace"))
    assert text == data[offset : offset + PAGE].decode("utf-8", "replace")


# ------------------------------------------------------------ write_stream
def test_redis_write_stream(benchmark, implementation, store, pieces):
    benchmark.group = f"redis: write_stream {LARGE_MIB} MiB"
    written = []

    def write():
        written.append(store.write_stream("bench", "w", iter(pieces)))

    benchmark.pedantic(write, rounds=3, iterations=1, warmup_rounds=1)
    assert written[-1].size == LARGE_MIB * 1024 * 1024
    store.cleanup(now=10**11)


def test_redis_write_stream_baseline_append(benchmark, client, pieces):
    benchmark.group = f"redis: write_stream {LARGE_MIB} MiB"

    def append():
        client.delete(b"bench-append")
        for piece in pieces:
            client.append(b"bench-append", piece)

    benchmark.pedantic(append, rounds=3, iterations=1, warmup_rounds=1)
    assert client.strlen(b"bench-append") == LARGE_MIB * 1024 * 1024
    client.delete(b"bench-append")
