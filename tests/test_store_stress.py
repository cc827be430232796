"""Several processes write, read and clean one folder at once: no wrong read,
no unexpected exception, nothing lost but what expired."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

WORKER = Path(__file__).with_name("stress_worker.py")


def test_writers_readers_and_a_cleaner_share_a_folder(tmp_path, subprocess_env):
    seconds = "3"
    roles = [("writer", str(seed)) for seed in range(1, 5)] + [("cleaner", "0"), ("cleaner", "0")]
    children = [
        subprocess.Popen([sys.executable, str(WORKER), role, str(tmp_path), seed, seconds],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=subprocess_env)
        for role, seed in roles
    ]
    results = []
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        results.append(json.loads(out))
    assert [problem for result in results for problem in result["problems"]] == []
    writers, cleaners = results[:4], results[4:]
    assert all(result["writes"] > 0 and result["reads"] > 0 for result in writers)
    assert sum(result["sweeps"] for result in cleaners) > 2
    assert sum(result["removed"] for result in cleaners) > 0  # the expired ones went
