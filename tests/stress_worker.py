"""A process of the multi-process stress test (run by test_store_stress.py).

``python stress_worker.py writer DIR SEED SECONDS`` writes, reads back and
expires resources of its own session; ``... cleaner DIR 0 SECONDS`` sweeps in
a loop.  Each prints one JSON line: what it did and every unexpected event.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time

from overspill import ResourceCorruptError, ResourceNotFoundError, ToolOutputStore


def writer(folder: str, seed: int, seconds: float) -> dict:
    rng = random.Random(seed)
    session = f"writer-{seed}"
    # Raw views: every page must be exactly its stored bytes, decoded.
    store = ToolOutputStore(folder, durable=False, config={"tool_output": {"views": []}})
    alive: dict[str, bytes] = {}
    expired: set[str] = set()
    problems: list[str] = []
    reads = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        data = rng.randbytes(rng.randint(0, 300_000)) if rng.random() < 0.3 else (
            "".join(rng.choice("ab€😀\n") for _ in range(rng.randint(0, 5000))).encode())
        resource = store.write(session, "call", data)
        alive[resource.uri] = data
        if rng.random() < 0.3:  # expire it by hand, as a peer's tests do
            path = os.path.join(store.directory, resource.id + ".json")
            with open(path) as file:
                document = json.load(file)
            document["created"] = 0
            temporary = path + ".edit"
            with open(temporary, "w") as file:
                json.dump(document, file)
            os.replace(temporary, path)
            expired.add(resource.uri)
        for uri in rng.sample(sorted(alive), min(5, len(alive))):
            expected = alive[uri]
            offset = rng.randint(0, len(expected))
            try:
                page = store.read(session, uri, offset=offset, limit=rng.randint(1, 60_000))
            except ResourceCorruptError as error:
                problems.append(f"corrupt: {error}")
                continue
            except ResourceNotFoundError as error:
                if uri not in expired:
                    problems.append(f"lost a live resource: {error}")
                del alive[uri]
                continue
            reads += 1
            end = len(expected) if page.next is None else page.next
            if page.content != expected[page.offset : end].decode("utf-8", "replace"):
                problems.append(f"wrong bytes from {uri} at {page.offset}")
    survivors = [uri for uri in alive if uri not in expired]
    for uri in survivors:
        try:
            store.read(session, uri, limit=10)
        except Exception as error:  # noqa: BLE001 - any failure is a finding
            problems.append(f"final read of {uri}: {type(error).__name__}: {error}")
    return {"writes": len(alive), "reads": reads, "problems": problems}


def cleaner(folder: str, seconds: float) -> dict:
    store = ToolOutputStore(folder, durable=False)
    sweeps = removed = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        report = store.cleanup()
        sweeps += 1
        removed += report.removed
    return {"sweeps": sweeps, "removed": removed, "problems": []}


if __name__ == "__main__":
    role, folder, seed, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    try:
        result = writer(folder, seed, seconds) if role == "writer" else cleaner(folder, seconds)
    except Exception as error:  # noqa: BLE001 - reported, not hidden
        result = {"problems": [f"crashed: {type(error).__name__}: {error}"]}
    print(json.dumps(result))
