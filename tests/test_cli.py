"""The real ``overspill`` console script, in subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).with_name("overspill")


@pytest.fixture
def cli(tmp_path, subprocess_env):
    """Run the console script against a private data folder."""
    assert SCRIPT.exists(), f"the console script is not installed beside {sys.executable}"
    subprocess_env["OVERSPILL_DATA_DIR"] = str(tmp_path / "data")
    subprocess_env.pop("OVERSPILL_SESSION", None)

    def invoke(*args: str, stdin: bytes | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([str(SCRIPT), *args], input=stdin, capture_output=True, timeout=120,
                              env={**subprocess_env, **(env or {})})

    return invoke


def uri_in(text: bytes) -> str:
    return "tool-output://" + text.decode().split("tool-output://")[1][:26]


def test_run_read_round_trip(cli):
    ran = cli("run", "--", sys.executable, "-c", "for i in range(100000): print(i)")
    assert ran.returncode == 0 and ran.stderr == b""
    out = ran.stdout.decode()
    assert out.startswith("0\n1\n") and out.rstrip().endswith("99999") and "output truncated" in out
    uri = uri_in(ran.stdout)
    offset = int(out.split("starts at byte offset ")[1].split()[0])
    page = cli("read", uri, "--offset", str(offset), "--limit", "20")
    assert page.returncode == 0
    # The omitted part begins with the newline that ended the head.
    assert page.stdout.decode().startswith("\n1000\n1001\n") and f"overspill read {uri} --offset" in page.stdout.decode()
    whole = cli("read", uri, "--all")
    assert whole.stdout == "\n".join(str(i) for i in range(100000)).encode()


def test_run_exits_with_the_commands_code_and_takes_a_shell_line(cli):
    result = cli("run", "--", "echo out; echo err >&2; exit 7")
    assert result.returncode == 7
    assert result.stdout.decode() == "out\n[stderr]\nerr\n[exit code: 7]\n"


def test_run_json_and_limits(cli):
    result = cli("run", "--json", "--max-lines", "4", "--", "seq", "1", "100")
    document = json.loads(result.stdout)
    assert document["truncated"] and document["resource"]["uri"].startswith("tool-output://")
    assert document["output"].startswith("1\n2\n\n... output truncated") and document["metadata"]["exit_code"] == 0


def test_run_spill_and_timeout(cli):
    spilled = cli("run", "--spill", "--", "yes abc | head -c 3000000")
    assert spilled.returncode == 0 and "tool-output://" in spilled.stdout.decode()
    timed = cli("run", "--timeout", "0.5", "--", "sleep 30")
    assert timed.returncode == 128 + 15 and b"timed out" in timed.stdout


def test_sessions_are_isolated(cli):
    ran = cli("run", "--session", "alice", "--", "seq 1 100000")
    uri = uri_in(ran.stdout)
    assert cli("read", uri, "--session", "alice").returncode == 0
    assert cli("read", uri, env={"OVERSPILL_SESSION": "alice"}).returncode == 0
    foreign = cli("read", uri)
    assert foreign.returncode == 3 and foreign.stderr.decode().startswith("overspill: error: ")
    assert b"another session" in foreign.stderr and b"Traceback" not in foreign.stderr


@pytest.mark.parametrize(
    ("args", "status"),
    [(("read", "tool-output://nope"), 3), (("read", "tool-output://0123456789abcdefghijklmnop"), 3),
     (("read", "x", "--offset", "-1"), 2), (("bogus",), 2), (("run",), 2), (("truncate", "--max-lines", "0"), 2),
     (("truncate", "/nonexistent/file"), 2), (("run", "--timeout", "abc", "--", "true"), 2)],
)
def test_errors_are_one_line_with_their_exit_code(cli, args, status):
    result = cli(*args)
    assert result.returncode == status
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("overspill: error: ") and b"Traceback" not in result.stderr


def test_storage_failure_exits_4(cli, tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the data folder should be")
    result = cli("ls", "--data-dir", str(blocker))
    assert result.returncode == 4 and result.stderr.decode().startswith("overspill: error: ")


@pytest.mark.parametrize("command", ["run", "read", "truncate", "ls", "cleanup", "stats"])
def test_help_documents_the_exit_codes(cli, command):
    result = cli(command, "--help")
    assert result.returncode == 0 and b"exit codes:" in result.stdout and b"storage failure" in result.stdout


def test_truncate_file_and_stdin(cli, tmp_path):
    small = tmp_path / "small.txt"
    small.write_text("just this\n")
    assert cli("truncate", str(small)).stdout == b"just this\n"
    piped = cli("truncate", "-", "--max-bytes", "10", "--name", "piped", "--json", stdin=b"0123456789" * 100)
    document = json.loads(piped.stdout)
    assert document["truncated"] and document["resource"]["name"] == "piped" and document["resource"]["size"] == 1000
    listed = json.loads(cli("ls", "--json").stdout)["resources"]
    assert [entry["name"] for entry in listed] == ["piped"] and listed[0]["session"] == "cli"


def test_ls_stats_cleanup(cli):
    cli("run", "--session", "a", "--", "seq 1 100000")
    cli("run", "--session", "b", "--", "seq 1 120000")  # under the 1 MiB capture cap: stored
    assert cli("ls").stdout == b"no stored outputs\n"
    assert b"tool-output://" in cli("ls", "--all-sessions").stdout
    text = cli("ls", "--session", "a").stdout.decode().splitlines()
    assert text[0].split() == ["URI", "BYTES", "AGE", "NAME", "SESSION"] and text[1].split()[-1] == "a"
    stats = json.loads(cli("stats", "--json").stdout)
    assert stats["count"] == 2 and set(stats["sessions"]) == {"a", "b"} and stats["oldest"] > 0
    dry = json.loads(cli("cleanup", "--dry-run", "--json").stdout)
    assert dry["removed"] == 0 and dry["dry_run"] is True
    assert cli("cleanup").stdout.startswith(b"removed 0 outputs")


def test_python_dash_m(cli, subprocess_env, tmp_path):
    subprocess_env["OVERSPILL_DATA_DIR"] = str(tmp_path / "m")
    result = subprocess.run([sys.executable, "-m", "overspill", "stats", "--json"], capture_output=True,
                            env=subprocess_env, timeout=60)
    assert result.returncode == 0 and json.loads(result.stdout)["count"] == 0


PIPE_PROBE = """
import resource, subprocess, sys
child = subprocess.Popen([sys.argv[1], "truncate", "-", "--json"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
block = (b"0123456789abcdef" * 4095 + b"0123456789abcde\\n")
for _ in range(1600):  # 100 MiB
    child.stdin.write(block)
child.stdin.close()
out = child.stdout.read()
child.wait()
print(child.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, len(out))
"""


def test_100_mib_stdin_in_bounded_memory(cli, subprocess_env, tmp_path):
    subprocess_env["OVERSPILL_DATA_DIR"] = str(tmp_path / "pipe")
    probe = subprocess.run([sys.executable, "-c", PIPE_PROBE, str(SCRIPT)], capture_output=True, text=True,
                           env=subprocess_env, timeout=300)
    status, peak_kib, _ = probe.stdout.split()
    assert status == "0", probe.stderr
    assert int(peak_kib) < 80 * 1024  # the 100 MiB never sat in memory
    listed = subprocess.run([str(SCRIPT), "ls", "--json"], capture_output=True, env=subprocess_env, timeout=60)
    assert json.loads(listed.stdout)["resources"][0]["size"] == 100 * 1024 * 1024
