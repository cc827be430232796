"""The real ``overspill`` console script, in subprocesses."""

from __future__ import annotations

import hashlib
import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from overspill import cli as cli_module
from processes import wait_until

SCRIPT = Path(sys.executable).with_name("overspill")


@pytest.fixture
def cli(tmp_path, subprocess_env):
    """Run the console script against a private data folder."""
    assert SCRIPT.exists(), f"the console script is not installed beside {sys.executable}"
    subprocess_env["OVERSPILL_DATA_DIR"] = str(tmp_path / "data")
    subprocess_env.pop("OVERSPILL_SESSION", None)

    def invoke(*args: str, stdin: bytes | None = None, env: dict[str, str] | None = None,
               cwd: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([str(SCRIPT), *args], input=stdin, capture_output=True, timeout=120,
                              env={**subprocess_env, **(env or {})}, cwd=cwd)

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
    # The omitted part starts a line: the head keeps the newline that ends it (issue 19 item 2).
    assert page.stdout.decode().startswith("1000\n1001\n") and f"overspill read {uri} --offset" in page.stdout.decode()
    whole = cli("read", uri, "--all")
    assert whole.stdout == "".join(f"{i}\n" for i in range(100000)).encode()


def test_run_exits_with_the_commands_code_and_takes_a_shell_line(cli):
    result = cli("run", "--", "echo out; echo err >&2; exit 7")
    assert result.returncode == 7
    assert result.stdout.decode() == "out\nerr\n[exit code 7]\n"


def test_run_json_and_limits(cli):
    result = cli("run", "--json", "--max-lines", "4", "--", "seq", "1", "100")
    document = json.loads(result.stdout)
    assert document["truncated"] and document["resource"]["uri"].startswith("tool-output://")
    assert document["output"].startswith("1\n2\n\n... output truncated") and document["metadata"]["exit_code"] == 0


def test_run_spill_and_timeout(cli):
    spilled = cli("run", "--spill", "--", "yes abc | head -c 3000000")
    assert spilled.returncode == 0 and "tool-output://" in spilled.stdout.decode()
    timed = cli("run", "--timeout", "0.5", "--", "sleep 30")
    assert timed.returncode == 124 and timed.stdout == b"[timed out after 0.5 s; process group killed]\n"
    unspilled = cli("run", "--no-spill", "--", "yes abc | head -c 3000000")
    assert unspilled.returncode == 0 and b"tool-output://" not in unspilled.stdout


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


def one_error_line(result: subprocess.CompletedProcess) -> str:
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("overspill: error: "), result.stderr
    return lines[0]


@pytest.mark.parametrize("command", ["run", "read", "grep", "truncate", "ls", "cleanup", "stats", "mcp"])
def test_a_commands_own_parser_is_the_one_the_whole_parser_holds(command, capsys):
    # main() builds only the named command's parser; its help, defaults and
    # errors must be those of the full parser's.
    def sub(parser):
        return parser._subparsers._group_actions[0].choices[command]

    whole, alone = sub(cli_module._parser()), sub(cli_module._parser(command))
    assert alone.format_help() == whole.format_help() and alone.prog == whole.prog == f"overspill {command}"
    assert list(cli_module._parser(command)._subparsers._group_actions[0].choices) == [command]
    for args in ([command, "--no-such-option"], [command]):
        outcomes = []
        for parser in (cli_module._parser(), cli_module._parser(command)):
            try:
                outcomes.append(vars(parser.parse_args(args)))
            except SystemExit as stop:
                outcomes.append(stop.code)
            outcomes.append(capsys.readouterr())
        assert outcomes[:2] == outcomes[2:]


@pytest.mark.parametrize("words", [
    ["run", "--", "true"], ["run", "--", "sh", "-c", "echo --all"], ["run", "--", "--help"], ["run", "--", ""],
    ["read", "tool-output://x", "--all"], ["read", "--all", "tool-output://x"], ["read", "", "--all"],
    ["read", "--all", "--all"], ["read", "-x", "--all"], ["read", "--all", "--json"], ["run", "--"], ["run", "x"],
    ["read", "u", "--al"], ["read", "u", "--all", "--json"],
])
def test_the_plain_forms_read_without_argparse_are_what_the_parser_gives(words):
    # main() reads `run -- COMMAND...` and `read URI --all` itself (argparse's
    # import is most of a short call); any other form must go to the parser.
    plain = cli_module._plain(list(words))
    try:
        parsed = vars(cli_module._parser(words[0]).parse_args(words))
    except SystemExit:
        parsed = None
    if plain is not None:
        assert vars(plain) == parsed


@pytest.mark.parametrize("args", [("--version",), ("ls",), ("run", "--", "touch ran"), ("truncate", "-")])
def test_a_closed_stdout_is_one_line_exit_4(cli, subprocess_env, tmp_path, args):
    # `overspill ... >&-`: Python sets sys.stdout to None; the command still runs.
    result = subprocess.run([str(SCRIPT), *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, cwd=tmp_path, timeout=120, env=subprocess_env,
                            preexec_fn=lambda: os.close(1))
    assert result.returncode == 4
    assert one_error_line(result) == "overspill: error: standard output is closed: nothing could be written"
    assert (tmp_path / "ran").exists() == (args[0] == "run")


@pytest.mark.parametrize("args", [("--version",), ("ls",), ("run", "--", "true")])
def test_a_bad_implementation_is_one_line_exit_2(cli, args):
    """Regression (issue 9, item 14): OVERSPILL_IMPLEMENTATION=bogus printed a traceback (exit 1).
    Protects "Errors are one line on stderr: exit 2 for usage and bad input"."""
    result = cli(*args, env={"OVERSPILL_IMPLEMENTATION": "bogus"})
    assert result.returncode == 2 and result.stdout == b""
    assert "OVERSPILL_IMPLEMENTATION" in one_error_line(result)


@pytest.mark.parametrize("command", ["", "   "])
def test_run_of_an_empty_command_is_a_usage_error_on_stderr(cli, command):
    """Regression (issue 9, item 14): ``overspill run ''`` printed its error on stdout."""
    result = cli("run", command)
    assert result.returncode == 2 and result.stdout == b"" and "needs a command" in one_error_line(result)


def test_ls_and_stats_escape_control_characters(cli):
    """Regression (issue 9, item 14): ``truncate --name $'\\e[2J'`` then ``ls`` sent the escape code to the
    terminal. Protects "names ... from callers never become" anything but data: printed escaped."""
    session = "s\x1b]0;title\x07"
    made = cli("truncate", "--name", "\x1b[2J\u009b31m\u202ename", "--session", session, "--max-bytes", "10",
               stdin=b"x" * 100)
    assert made.returncode == 0, made.stderr
    for args in (("ls", "--session", session), ("ls", "--all-sessions"), ("stats",)):
        shown = cli(*args).stdout.decode()
        assert not any(ord(c) < 32 and c != "\n" or 0x7F <= ord(c) < 0xA0 or c == "\u202e" for c in shown), shown
        assert "\\x1b" in shown
    assert "\\x1b[2J\\x9b31m\\u202ename" in cli("ls", "--session", session).stdout.decode()
    listed = cli("ls", "--session", session, "--json").stdout
    assert b"\x1b" not in listed and "\u009b".encode() not in listed
    assert json.loads(listed)["resources"][0]["name"] == "\x1b[2J\u009b31m\u202ename"  # the JSON keeps the name


def test_read_all_refuses_offset_and_limit(cli):
    """Regression (issue 9, item 14): ``read URI --all --offset 5`` silently ignored the offset."""
    uri = uri_in(cli("run", "--", "seq 1 100000").stdout)
    for extra in (("--offset", "5"), ("--offset", "0"), ("--limit", "10")):
        result = cli("read", uri, "--all", *extra)
        assert result.returncode == 2 and result.stdout == b"" and "--all" in one_error_line(result)


def test_read_past_the_end_says_so(cli):
    """Regression (issue 9, item 14): an offset past the end printed an empty page and exit 0
    without a word.  Changed deliberately by issue 19, item 10 (one rule everywhere: at or past
    the end is an empty last page with no next, as the library and MCP answer): exit 0, nothing
    on stdout, and one note on stderr that says so."""
    uri = uri_in(cli("run", "--", "seq 1 100000").stdout)
    size = json.loads(cli("read", uri, "--json").stdout)["resource"]["size"]
    assert cli("read", uri, "--offset", str(size - 1)).stdout == b"\n"
    for offset in (size, size + 1, 10**12):
        result = cli("read", uri, "--offset", str(offset))
        assert result.returncode == 0 and result.stdout == b""
        assert result.stderr.count(b"\n") == 1
        assert f"offset {offset} is at or past the end" in result.stderr.decode()
        page = json.loads(cli("read", uri, "--offset", str(offset), "--json").stdout)
        assert page["content"] == "" and page["next"] is None and page["offset"] == size


def test_read_inside_the_last_character_says_so(cli, tmp_path):
    """Regression (f17): an offset inside the last character was said to be at or past the end."""
    (tmp_path / "out.txt").write_bytes(("x" * 60000 + "\nok \U0001F600").encode())
    uri = uri_in(cli("run", "--", f"cat {tmp_path / 'out.txt'}").stdout)
    size = json.loads(cli("read", uri, "--json").stdout)["resource"]["size"]
    result = cli("read", uri, "--offset", str(size - 2))
    assert result.returncode == 0 and result.stdout == b"" and result.stderr.count(b"\n") == 1
    assert (f"offset {size - 2} is inside the last character of {uri}, which ends at byte {size}, the end: "
            "nothing more to read") in result.stderr.decode()


def test_the_continuation_hint_repeats_session_and_folder(cli, tmp_path):
    """Regression (issue 9, item 14): the hint of ``read --session foo`` dropped ``--session foo``,
    so running it read as another session. Protects "the marker must let it continue without guessing"."""
    folder = tmp_path / "other folder"
    uri = uri_in(cli("run", "--session", "foo bar", "--data-dir", str(folder), "--", "seq 1 100000").stdout)
    page = cli("read", uri, "--session", "foo bar", "--data-dir", str(folder), "--limit", "100")
    hint = page.stdout.decode().rstrip().rsplit("\n", 1)[1]
    command = shlex.split(hint.split(": ", 1)[1].rstrip("]"))
    assert command[:2] == ["overspill", "read"] and "--session" in command and "foo bar" in command
    following = cli(*command[1:])
    whole = "".join(f"{i}\n" for i in range(1, 100001)).encode()
    assert following.returncode == 0 and following.stdout.startswith(whole[100:200])


def test_a_relative_data_folder_is_named_absolute_in_the_hint(cli, tmp_path):
    """Red team C13: ``--data-dir dd`` was repeated as ``--data-dir dd`` in the ``next:`` hint, so the
    hint run from another working folder (as README says hints run as printed) found no resource
    (exit 3).  The hint names the folder by its absolute path."""
    (tmp_path / "work").mkdir()
    (tmp_path / "elsewhere").mkdir()
    stored = cli("run", "--data-dir", "dd", "--", "seq 1 100000", cwd=str(tmp_path / "work"))
    hint = next(line for line in stored.stdout.decode().splitlines() if "overspill read" in line)
    command = shlex.split(hint[hint.index("overspill read"):].split("  or  ")[0])
    assert command[command.index("--data-dir") + 1] == str(tmp_path / "work" / "dd")
    following = cli(*command[1:], cwd=str(tmp_path / "elsewhere"))
    assert following.returncode == 0, following.stderr
    offset = int(command[command.index("--offset") + 1])
    whole = "".join(f"{i}\n" for i in range(1, 100001)).encode()
    assert following.stdout.startswith(whole[offset:offset + 100])
    # Review R13: joined to the working folder, not normalised: ``link/../dd`` is beside the link's target.
    (tmp_path / "far" / "inner").mkdir(parents=True)
    (tmp_path / "work" / "link").symlink_to(tmp_path / "far" / "inner")
    stored = cli("run", "--data-dir", "link/../dd", "--", "seq 1 100000", cwd=str(tmp_path / "work"))
    assert (tmp_path / "far" / "dd").is_dir()
    hint = next(line for line in stored.stdout.decode().splitlines() if "overspill read" in line)
    command = shlex.split(hint[hint.index("overspill read"):].split("  or  ")[0])
    following = cli(*command[1:], cwd=str(tmp_path / "elsewhere"))
    assert following.returncode == 0, following.stderr


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
    cli("run", "--session", "b", "--", "seq 1 120000")
    assert cli("ls").stdout == b"no stored outputs\n"
    assert b"tool-output://" in cli("ls", "--all-sessions").stdout
    text = cli("ls", "--session", "a").stdout.decode().splitlines()
    assert text[0].split() == ["URI", "BYTES", "LINES", "AGE", "NAME", "SESSION"] and text[1].split()[-1] == "a"
    assert text[1].split()[2] == "100000"  # as wc -l counts them
    stats = json.loads(cli("stats", "--json").stdout)
    assert stats["count"] == 2 and set(stats["sessions"]) == {"a", "b"} and stats["oldest"] > 0
    assert stats["lines"] == 220000 and stats["sessions"]["a"]["lines"] == 100000
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


# ------------------------------------------------------------------ run: the exact output, in order
def redirected(command: str, tmp_path: Path) -> bytes:
    """What ``sh -c 'COMMAND > file 2>&1'`` leaves in the file: the reference for ``run``."""
    target = tmp_path / "redirected"
    subprocess.run(["sh", "-c", f"{{ {command}\n}} > {target} 2>&1"], check=False, timeout=120)
    return target.read_bytes()


def stored_output(cli, ran: subprocess.CompletedProcess) -> bytes:
    """The bytes ``run`` stored, read back with ``read --all`` (b"" and no URI when nothing was stored)."""
    document = json.loads(ran.stdout)
    if document["resource"] is None:
        return b""
    whole = cli("read", document["resource"]["uri"], "--all")
    assert whole.returncode == 0, whole.stderr
    return whole.stdout


TEXT_NO_NEWLINE = "printf 'first\\nsecond\\nno newline at the end'; seq 1 20000 | tr '\\n' ' '"


@pytest.mark.parametrize("command", [
    "seq 1 100000",
    TEXT_NO_NEWLINE,
    "head -c 300000 /bin/sh; seq 1 100000 | gzip -c",
    "for i in $(seq 1 3000); do echo out $i; echo err $i >&2; done; printf 'tail without newline' >&2",
])
def test_run_stores_exactly_what_a_redirect_writes(cli, tmp_path, command):
    # Promise: `overspill read URI --all` after `overspill run` gives the bytes of `COMMAND > file 2>&1`.
    ran = cli("run", "--json", "--", command)
    assert ran.returncode == 0, ran.stderr
    stored = stored_output(cli, ran)
    assert stored == redirected(command, tmp_path) and len(stored) > 51200
    document = json.loads(ran.stdout)
    assert document["metadata"]["stored_bytes"] == document["metadata"]["output_bytes"] == len(stored)


def test_run_interleaved_flushed_writes_keep_the_terminal_order(cli, tmp_path):
    program = ("import sys\n"
               "for i in range(20000):\n"
               "    stream = sys.stdout if i % 3 else sys.stderr\n"
               "    stream.write(f'{stream.name} line {i}' + '\\n' * (i % 2))\n"
               "    stream.flush()\n")
    (tmp_path / "interleave.py").write_text(program)
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(tmp_path / 'interleave.py'))}"
    ran = cli("run", "--json", "--", command)
    stored = stored_output(cli, ran)
    assert stored == redirected(command, tmp_path)
    assert b"<stderr> line 0<stdout> line 1\n" in stored


@pytest.mark.parametrize(("size", "stored"), [(0, False), (1, False), (100, False), (101, True)])
def test_run_at_the_byte_limit(cli, size, stored):
    ran = cli("run", "--json", "--max-bytes", "100", "--", f"head -c {size} /dev/zero | tr '\\0' x")
    document = json.loads(ran.stdout)
    assert (document["resource"] is not None) == stored
    if stored:
        assert stored_output(cli, ran) == b"x" * size
    else:
        assert document["output"] == ("x" * size or "(no output)")


@pytest.mark.parametrize(("lines", "stored"), [(4, False), (5, False), (6, True)])
def test_run_at_the_line_limit(cli, lines, stored):
    # Whole lines decide (issue 19 item 2): "1\n...\n5\n" is 5 lines, as people and the counts
    # shown say, and fits 5 (the fit rule used to count it as 6, str.split's final "").
    ran = cli("run", "--json", "--max-lines", "5", "--", f"seq 1 {lines}")
    document = json.loads(ran.stdout)
    assert (document["resource"] is not None) == stored
    expected = "".join(f"{i}\n" for i in range(1, lines + 1)).encode()
    if stored:
        assert stored_output(cli, ran) == expected
        assert f"({len(expected)} bytes, {lines} lines in all)" in document["output"]
        assert document["metadata"]["lines"] == lines
    else:
        assert document["output"] == expected.decode().rstrip("\n")
    assert document["metadata"]["output_lines"] == lines


def test_run_binary_output_is_described_not_replaced(cli):
    ran = cli("run", "--", "head -c 300000 /bin/sh")
    text = ran.stdout.decode()
    assert ran.returncode == 0 and "\ufffd" not in text and len(text.splitlines()) == 1
    assert text.startswith("[binary output, ") and "it begins 7f 45 4c 46" in text
    uri = uri_in(ran.stdout)
    listed = json.loads(cli("ls", "--json").stdout)["resources"]
    assert [(entry["uri"], entry["mime"]) for entry in listed] == [(uri, "application/octet-stream")]
    with open("/bin/sh", "rb") as source:
        assert cli("read", uri, "--all").stdout == source.read(300000)


def test_run_passes_its_stdin_to_the_command(cli):
    assert cli("run", "--", "cat", stdin=b"hi\n").stdout == b"hi\n"
    big = cli("run", "--json", "--", "cat", stdin=b"0123456789\n" * 500000)
    assert stored_output(cli, big) == b"0123456789\n" * 500000


def test_run_times_out_with_124(cli):
    timed = cli("run", "--timeout", "0.5", "--", "echo started; sleep 30")
    assert timed.returncode == 124
    assert timed.stdout == b"started\n[timed out after 0.5 s; process group killed]\n"


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes whose process group is ``pgid``, from /proc."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as file:
                fields = file.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in "ZX":
            members.append(int(entry))
    return members


def group_ends(pgid: int) -> bool:
    """Whether the group is empty within a few seconds (SIGKILL is delivered asynchronously)."""
    deadline = time.monotonic() + 5
    while group_members(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_to_run_reaches_the_commands_group_and_leaves_no_process(cli, tmp_path, subprocess_env, signum):
    # Promise: nothing `overspill run` started outlives it.
    pidfile = tmp_path / "pgid"
    # A member that ignores the signal too, so only the follow-up SIGKILL ends it.
    # (The last "echo" keeps the shell from exec-ing its last command: it stays the group's leader.)
    command = (f"echo $$ > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; (trap '' TERM HUP INT; sleep 304) & "
               "sleep 304; echo after")
    subprocess_env["OVERSPILL_DATA_DIR"] = str(tmp_path / "data")
    child = subprocess.Popen([str(SCRIPT), "run", "--", command], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=subprocess_env)
    try:
        deadline = time.monotonic() + 30
        while not pidfile.exists():
            assert time.monotonic() < deadline and child.poll() is None, "the command never started"
            time.sleep(0.05)
        pgid = int(pidfile.read_text())
        while len(group_members(pgid)) < 3:  # sh, the subshell's sleep, sleep
            assert time.monotonic() < deadline
            time.sleep(0.05)
        child.send_signal(signum)
        out, _ = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 128 + signum
    assert group_ends(pgid), group_members(pgid)
    assert out.decode().endswith(f"[terminated by {signal.Signals(signum).name}]\n")


# ------------------------------------------------------------------ run: storage failures
@pytest.fixture
def tmpfs(tmp_path):
    """A 2 MiB tmpfs (root only; skipped where mounting is not allowed)."""
    mountpoint = tmp_path / "tmpfs"
    mountpoint.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", str(mountpoint)],
                             capture_output=True, timeout=30)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], capture_output=True, timeout=30)


def assert_storage_failure_with_preview(ran: subprocess.CompletedProcess) -> None:
    assert ran.returncode == 4, ran.stderr
    errors = ran.stderr.decode().splitlines()
    assert len(errors) == 1 and errors[0].startswith("overspill: error: the output could not be kept")
    out = ran.stdout.decode()
    # The preview came from memory: the true start and the true end, and no URI.
    assert out.startswith("1\n2\n3\n") and out.endswith("\n1000000\n") and "tool-output://" not in out
    assert "could not be stored" in out


def test_run_on_a_full_tmpfs_exits_4_with_the_preview(cli, tmpfs):
    ran = cli("run", "--data-dir", str(tmpfs), "--", "seq 1 1000000")
    assert_storage_failure_with_preview(ran)
    assert not any(name.endswith(".json") for name in os.listdir(tmpfs / "tool-output" / "managed"))


def test_run_on_a_read_only_folder_exits_4_with_the_preview(cli, tmpfs):
    assert cli("stats", "--data-dir", str(tmpfs)).returncode == 0  # the folders exist
    remounted = subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], capture_output=True, timeout=30)
    assert remounted.returncode == 0, remounted.stderr
    assert_storage_failure_with_preview(cli("run", "--data-dir", str(tmpfs), "--", "seq 1 1000000"))
    # A data folder that cannot even be created is the same failure.
    assert_storage_failure_with_preview(cli("run", "--data-dir", str(tmpfs / "new"), "--", "seq 1 1000000"))


FILE_SIZE_PROBE = """
import resource, subprocess, sys
resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))  # writes past 200 kB fail with EFBIG
ran = subprocess.run(sys.argv[1:], capture_output=True)
sys.stdout.buffer.write(ran.stdout)
sys.stderr.buffer.write(ran.stderr)
sys.exit(ran.returncode)
"""


def test_run_past_the_file_size_limit_exits_4_with_the_preview(cli, subprocess_env, tmp_path):
    subprocess_env["OVERSPILL_DATA_DIR"] = str(tmp_path / "data")
    ran = subprocess.run([sys.executable, "-c", FILE_SIZE_PROBE, str(SCRIPT), "run", "--", "seq 1 1000000"],
                         capture_output=True, env=subprocess_env, timeout=120)
    assert_storage_failure_with_preview(ran)


# ------------------------------------------------------------------ run: 1 GiB in bounded memory
GIB_COMMAND = "yes 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU | head -c 1073741824"

PEAK_PROBE = """
import resource, subprocess, sys
ran = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE)
sys.stdout.write(f"{ran.returncode} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}\\n")
sys.stdout.write(ran.stdout.decode())
"""


def peak_of(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Exit status and peak resident KiB of ``args`` (and what it waited for), with its output."""
    probe = subprocess.run([sys.executable, "-c", PEAK_PROBE, *args], capture_output=True, text=True, env=env,
                           timeout=600)
    first, _, output = probe.stdout.partition("\n")
    status, peak = first.split()
    assert status == "0", probe.stderr
    return int(peak), output


def test_run_of_1_gib_is_stored_whole_in_bounded_memory(subprocess_env, tmp_path):
    subprocess_env["OVERSPILL_DATA_DIR"] = str(tmp_path / "data")
    try:
        check_1_gib_run(subprocess_env, tmp_path)
    finally:  # pytest keeps the last runs' folders: not a GiB each
        shutil.rmtree(tmp_path / "data", ignore_errors=True)


def check_1_gib_run(subprocess_env: dict[str, str], tmp_path: Path) -> None:
    idle, _ = peak_of([str(SCRIPT), "run", "--", "true"], subprocess_env)
    peak, output = peak_of([str(SCRIPT), "run", "--json", "--", GIB_COMMAND], subprocess_env)
    assert peak - idle < 64 * 1024, (idle, peak)  # KiB: growth under 64 MiB for 1 GiB of output
    document = json.loads(output)
    assert document["metadata"]["output_bytes"] == document["metadata"]["stored_bytes"] == 1 << 30
    payload = tmp_path / "data" / "tool-output" / "managed" / (document["resource"]["uri"][len("tool-output://"):] + ".txt")
    digest = hashlib.sha256()
    with open(payload, "rb") as stored:
        while block := stored.read(1 << 22):
            digest.update(block)
    expected = subprocess.run(["sh", "-c", f"{GIB_COMMAND} | sha256sum"], capture_output=True, text=True,
                              timeout=600).stdout.split()[0]
    assert digest.hexdigest() == expected


# ------------------------------------------------------------------ run: the cap, the quota, the counts
def test_run_past_the_stored_cap_keeps_the_start_and_shows_the_true_end(cli, tmp_path):
    cap = 3 * 1024 * 1024
    command = "seq 1 2000000"
    ran = cli("run", "--json", "--", command, env={"OVERSPILL_MAX_STORED_BYTES": str(cap)})
    document = json.loads(ran.stdout)
    whole = redirected(command, tmp_path)
    assert stored_output(cli, ran) == whole[:cap]
    assert document["metadata"]["output_bytes"] == len(whole) and document["metadata"]["stored_bytes"] == cap
    assert f"the stored copy holds the first {cap} of {len(whole)} bytes" in document["output"]
    assert document["output"].endswith("1999999\n2000000")  # the true end, from memory
    uri = document["resource"]["uri"]
    record = json.loads((tmp_path / "data" / "tool-output" / "managed" / f"{uri[14:]}.json").read_bytes())
    assert record["capture"] == {"total": len(whole), "stored": cap} and record["size"] == cap


def test_truncate_counts_lines_as_people_do(cli):
    ran = cli("truncate", "--max-lines", "4", stdin="".join(f"{i}\n" for i in range(1, 11)).encode())
    assert "(21 bytes, 10 lines in all)" in ran.stdout.decode()
    unterminated = cli("truncate", "--max-lines", "4", stdin=b"1\n2\n3\n4\n5\n6\n7\n8\n9\n10")
    assert "(20 bytes, 10 lines in all)" in unterminated.stdout.decode()


def test_stats_shows_use_against_the_quota(cli):
    cli("run", "--", "seq 1 100000")
    stats = json.loads(cli("stats", "--json", env={"OVERSPILL_MAX_TOTAL_BYTES": "10000000"}).stdout)
    assert stats["quota"] == 10000000 and stats["bytes"] == 588895
    text = cli("stats", env={"OVERSPILL_MAX_TOTAL_BYTES": "10000000"}).stdout.decode()
    assert "quota: 588895 of 10000000 bytes used (5.9%)" in text


@pytest.mark.parametrize("command", [("ls",), ("ls", "--all-sessions", "--json"), ("stats",), ("stats", "--json"),
                                     ("cleanup",), ("cleanup", "--dry-run"),
                                     ("read", "tool-output://0123456789abcdefghijklmnop")])
def test_read_only_commands_never_create_the_data_folder(cli, tmp_path, command):
    """Regression (issue 9, item 13): ``overspill stats --data-dir /nonexistent/dir`` created
    ``/nonexistent/dir/tool-output/managed``. A missing folder holds no stored outputs."""
    missing = tmp_path / "nonexistent" / "dir"
    result = cli(*command, "--data-dir", str(missing))
    assert not (tmp_path / "nonexistent").exists()
    if command[0] == "read":
        assert result.returncode == 3 and "no resource" in one_error_line(result)
    else:
        assert result.returncode == 0 and result.stderr == b""
    if command == ("ls",):
        assert result.stdout == b"no stored outputs\n"
    if command == ("stats", "--json"):
        assert json.loads(result.stdout)["count"] == 0
    written = cli("truncate", "--data-dir", str(missing), "--max-bytes", "10", stdin=b"x" * 100)
    assert written.returncode == 0 and (missing / "tool-output" / "managed").is_dir()  # a write makes it


# ------------------------------------------------------------------ background commands (issue 22)
def test_run_background_wait_kill_and_jobs(cli, tmp_path):
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    started = cli("run", "--background", "--yield-after", "0", "--",
                  f"echo 'server starting'; read -r go < '{gate}'; echo 'listening on :8000'; sleep 60")
    assert started.returncode == 0, started.stderr
    assert b"running in the background as tool-output://" in started.stdout
    uri = uri_in(started.stdout)
    listed = cli("jobs", "--json")
    (job,) = json.loads(listed.stdout)["jobs"]
    assert job["uri"] == uri and job["state"] == "running"
    # The supervisor owns the command: it outlived the CLI that started it.
    with open(gate, "w") as release:
        release.write("go\n")
    waited = cli("wait", uri, "--pattern", "listening on", "--offset", "0", "--timeout", "60")
    assert waited.returncode == 0 and b"listening on :8000" in waited.stdout
    page = cli("read", uri)
    assert page.stdout.startswith(b"server starting\nlistening on :8000\n")
    killed = cli("kill", uri, "--json")
    assert killed.returncode == 0 and json.loads(killed.stdout)["metadata"]["state"] == "exited"
    assert json.loads(cli("jobs", "--json").stdout)["jobs"][0]["state"] == "exited"
    missed = cli("wait", uri, "--pattern", "never", "--timeout", "0")
    assert missed.returncode == 1


def test_wait_finds_a_pattern_on_a_line_split_across_the_offset_it_starts_from(cli, tmp_path):
    """Regression (red team K15 f01): ``overspill wait --offset N --pattern RE`` from the offset an
    earlier answer named searched only from there: a line written in two parts ("server rea", later
    "dy on port 80") never matched ``ready on port`` and wait exited 1.  The line that holds the
    offset is searched whole; a match wholly before the offset is still not new."""
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    started = cli("run", "--background", "--yield-after", "0", "--",
                  f"printf 'server rea'; read -r go < '{gate}'; printf 'dy on port 80\\n'; sleep 60")
    assert started.returncode == 0, started.stderr
    uri = uri_in(started.stdout)
    first = cli("wait", uri, "--offset", "0", "--pattern", "server rea", "--timeout", "60", "--json")
    assert first.returncode == 0, first.stderr
    offset = json.loads(first.stdout)["metadata"]["next_offset"]
    assert offset == len(b"server rea")
    with open(gate, "w") as release:
        release.write("go\n")
    waited = cli("wait", uri, "--offset", str(offset), "--pattern", "ready on port", "--timeout", "60")
    assert waited.returncode == 0, waited.stdout
    assert waited.stdout.startswith(b"dy on port 80\n[pattern 'ready on port' found at byte offset 10]\n")
    before = cli("wait", uri, "--offset", str(offset), "--pattern", "server", "--timeout", "0")
    assert before.returncode == 1 and b"not seen in the new output" in before.stdout
    assert cli("kill", uri).returncode == 0


def test_jobs_listing_is_bounded_like_any_output_with_shell_hints(cli):
    """Regression (red team K15 f02): ``overspill jobs`` printed every job whatever the limits; a long
    listing is stored whole and previewed, its marker's next calls written as shell commands."""
    limits = {"OVERSPILL_MAX_LINES": "5"}
    uris = []
    try:
        for _ in range(8):
            started = cli("run", "--background", "--yield-after", "0", "--", "sleep 60", env=limits)
            assert started.returncode == 0, started.stderr
            uris.append(uri_in(started.stdout))
        listed = cli("jobs", env=limits)
        assert listed.returncode == 0, listed.stderr
        text = listed.stdout.decode()
        assert "output truncated" in text and "read(" not in text, text
        hint = next(line for line in text.splitlines() if line.startswith("next: overspill read "))
        stored = uri_in(hint.encode())
        whole = cli("read", stored, "--all")
        assert [line.split()[0] for line in whole.stdout.decode().splitlines()] == uris
        assert [job["uri"] for job in json.loads(cli("jobs", "--json", env=limits).stdout)["jobs"]] == uris
    finally:
        for uri in uris:
            cli("kill", uri)


def test_jobs_exits_4_when_the_store_cannot_list(cli, redis_server):
    """Regression (red team K15): ``overspill jobs`` said a store's failure to list (here a Redis
    server that refuses ZRANGE) as a usage error, exit 2, where its help gives 4 for a storage
    failure, as ``ls`` exits on the same failure."""
    from redis_servers import start_server

    refusing = start_server("--rename-command", "ZRANGE", "")
    try:
        for command in ("jobs", "ls"):
            result = cli(command, "--store-url", refusing.url)
            assert result.returncode == 4, (command, result.stderr)
            assert one_error_line(result).startswith("overspill: error: ") and b"ZRANGE" in result.stderr
    finally:
        refusing.stop()


def test_background_hints_are_shell_commands(cli, tmp_path):
    """Regression (issue 19 item 9's rule for issue 22's commands): ``run --background``
    and ``wait`` printed the model's ``read(resource=...)``/``wait(...)``/``kill(...)``;
    a CLI user gets the commands that do the same, with the options that find the output."""
    folder = str(tmp_path / "elsewhere")
    options = ["--session", "s b", "--data-dir", folder]
    started = cli("run", "--background", "--yield-after", "0.5", *options, "--", "seq 1 100000; sleep 60")
    assert started.returncode == 0, started.stderr
    uri = uri_in(started.stdout)
    quoted = f"--session 's b' --data-dir {folder}"
    for answer in (started, cli("wait", uri, "--offset", "0", "--timeout", "0", *options)):
        text = answer.stdout.decode()
        assert "resource=" not in text and "read(" not in text and "wait(" not in text, text[-400:]
        state = text.rstrip("\n").rsplit("\n", 1)[1]
        assert f"overspill wait {uri} --offset " in state and f"overspill kill {uri} {quoted} to stop it" in state
        assert f"next: overspill read {uri} --offset " in text and f"overspill grep {uri} {quoted} PATTERN" in text
    assert cli("kill", uri, *options).returncode == 0


def test_run_background_names_its_output_by_the_command_as_run_does(cli):
    """Red team D11 f03: ``overspill run --background`` stored no name, so ``ls`` showed "-" (None
    in --json) where the foreground run shows the command, cut at 80 characters."""
    command = "seq 1 100000; sleep 0.5 # " + "x" * 100
    started = cli("run", "--background", "--yield-after", "0", "--json", "--", command)
    assert started.returncode == 0, started.stderr
    uri = json.loads(started.stdout)["metadata"]["uri"]
    assert cli("run", "--", command).returncode == 0
    assert cli("wait", uri, "--timeout", "60").returncode == 0  # (its final record keeps the name)
    rows = {row["uri"]: row["name"] for row in json.loads(cli("ls", "--json").stdout)["resources"]}
    assert len(rows) == 2 and len(set(rows.values())) == 1, rows
    assert rows[uri] == command[:79] + "\u2026"


def test_run_background_fast_failure_is_an_ordinary_result(cli):
    ended = cli("run", "--background", "--yield-after", "10", "--", "echo out; echo err >&2; exit 5")
    assert ended.returncode == 5
    assert ended.stdout == b"out\nerr\n[exit code 5]\n"


def test_the_supervisor_imports_nothing_from_the_working_folder(cli, tmp_path):
    # The supervisor ran as ``python -m``, which puts the working folder first on sys.path: in a
    # project holding json.py, run --background ran the project's module and failed to start.
    project = tmp_path / "project"
    project.mkdir()
    ran = tmp_path / "ran"
    for name in ("json", "signal", "runpy", "overspill"):
        (project / f"{name}.py").write_text(f"open({str(ran)!r}, 'a').write({name!r})\nraise SystemExit(1)\n")
    started = cli("run", "--background", "--yield-after", "10", "--", "echo in the project; pwd", cwd=str(project))
    assert started.returncode == 0, started.stderr
    assert started.stdout == f"in the project\n{project}\n".encode()
    assert not ran.exists()


def test_a_killed_supervisor_leaves_a_lost_handle(cli):
    started = cli("run", "--background", "--yield-after", "0", "--json", "--", "echo before; sleep 60")
    answer = json.loads(started.stdout)
    uri, pid = answer["metadata"]["uri"], answer["metadata"]["pid"]
    assert wait_until(lambda: json.loads(cli("read", uri, "--json").stdout)["content"] == "before\n")
    supervisor = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])  # the command's parent
    os.kill(supervisor, signal.SIGKILL)
    assert wait_until(lambda: json.loads(cli("jobs", "--json").stdout)["jobs"][0]["state"] == "lost")
    assert cli("read", uri).stdout.startswith(b"before\n")
    cli("kill", uri)
    assert group_ends(pid)


def test_kill_ends_a_job_whose_pipe_a_daemon_holds(cli):
    # The command exited at once, but a child that left its group (setsid) held the pipe: kill from
    # the CLI waited ~4 s, answered "running" and ended nothing; the supervisor lived on.
    started = cli("run", "--background", "--yield-after", "0", "--json", "--",
                  "setsid sleep 300 & echo daemon $!; exit 3")
    answer = json.loads(started.stdout)
    uri, pid = answer["metadata"]["uri"], answer["metadata"]["pid"]
    assert wait_until(lambda: json.loads(cli("read", uri, "--json").stdout)["content"].startswith("daemon "))
    daemon = int(json.loads(cli("read", uri, "--json").stdout)["content"].split()[1])
    try:
        time.sleep(1)  # the command exited long ago; the daemon holds its pipe
        assert json.loads(cli("jobs", "--json").stdout)["jobs"][0]["state"] == "running"
        supervisor = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])  # the command's parent
        killed = cli("kill", uri, "--json")
        assert killed.returncode == 0
        assert json.loads(killed.stdout)["metadata"]["state"] == "exited"
        assert json.loads(killed.stdout)["metadata"]["exit_code"] == 3
        assert wait_until(lambda: not os.path.exists(f"/proc/{supervisor}") or
                          open(f"/proc/{supervisor}/stat").read().rsplit(")", 1)[1].split()[0] == "Z")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(daemon, signal.SIGKILL)


def test_kill_of_a_lost_job_gives_its_group_the_grace(cli, tmp_path):
    # A lost command's group got SIGKILL right after SIGTERM (the grace ended at once for a record
    # that was not running), so its TERM handler never finished; the answer said it did nothing.
    done = tmp_path / "done"
    started = cli("run", "--background", "--yield-after", "0", "--json", "--",
                  f"trap 'sleep 0.5; echo ended > {done}; exit 0' TERM; echo before; "
                  # (lost, its pipe has no reader: a shell that reported its child's end there would die)
                  f"exec >/dev/null 2>&1; while :; do sleep 0.1; done")
    answer = json.loads(started.stdout)
    uri, pid = answer["metadata"]["uri"], answer["metadata"]["pid"]
    assert wait_until(lambda: json.loads(cli("read", uri, "--json").stdout)["content"] == "before\n")
    supervisor = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    os.kill(supervisor, signal.SIGKILL)
    assert wait_until(lambda: json.loads(cli("jobs", "--json").stdout)["jobs"][0]["state"] == "lost")
    killed = cli("kill", uri)
    assert killed.stdout.startswith(b"[it was lost (its owner is gone); what was left of its process group was ended]")
    assert done.read_text() == "ended\n"
    assert group_ends(pid)


# ------------------------------------------------------------------ issue 19 (defects-b items)
def test_the_run_marker_is_shell_commands_and_a_query_uri_reads(cli):
    """Regression (issue 19, item 9): ``overspill run``'s marker said
    ``next: read(resource=..., offset=N) or grep(...)``, which no shell runs, and
    ``overspill read 'tool-output://ID?offset=5'`` (the MCP template's form) was refused."""
    ran = cli("run", "--session", "s 1", "--", "seq 1 100000")
    out = ran.stdout.decode()
    assert "read(resource=" not in out and "grep(resource=" not in out
    line = next(line for line in out.splitlines() if line.startswith("next: "))
    read_part, grep_part = line[len("next: "):].split("  or  ")
    read_words, grep_words = shlex.split(read_part), shlex.split(grep_part)
    uri = uri_in(ran.stdout)
    offset = int(out.split("starts at byte offset ")[1].split()[0])
    assert read_words == ["overspill", "read", uri, "--offset", str(offset), "--session", "s 1"]
    assert grep_words == ["overspill", "grep", uri, "--session", "s 1", "PATTERN"]
    page = cli(*read_words[1:], "--limit", "64")
    assert page.returncode == 0 and page.stdout == cli("read", uri, "--session", "s 1", "--offset", str(offset),
                                                       "--limit", "64").stdout
    grepped = cli(*grep_words[1:-1], "^99999$")
    assert grepped.returncode == 0 and grepped.stdout.decode().endswith(":99999\n[1 matching line]\n")
    truncated = cli("truncate", stdin=b"x\n" * 5000).stdout.decode()
    assert "next: overspill read tool-output://" in truncated and "read(resource=" not in truncated
    # The MCP template's form, alone or agreeing with the flags.
    queried = cli("read", f"{uri}?offset=5&limit=7", "--session", "s 1")
    assert queried.returncode == 0 and queried.stdout.startswith(b"\n4\n5\n6\n\n")
    assert queried.stdout == cli("read", uri, "--offset", "5", "--limit", "7", "--session", "s 1").stdout
    assert cli("read", f"{uri}?offset=5", "--offset", "5", "--session", "s 1").returncode == 0
    clash = cli("read", f"{uri}?offset=5", "--offset", "6", "--session", "s 1")
    assert clash.returncode == 2 and "give one" in one_error_line(clash)
    assert cli("read", f"{uri}?page=2", "--session", "s 1").returncode == 3


def test_the_cli_grep_listing_is_bounded_like_any_output(cli):
    """Regression (issue 19, item 8): ``grep -m 100000`` printed 100,001 lines (1.3 MB)."""
    uri = uri_in(cli("run", "--", "seq 1 100000").stdout)
    listed = cli("grep", uri, ".", "-m", "100000")
    assert listed.returncode == 0
    out = listed.stdout.decode()
    assert len(listed.stdout) < 51200 + 1000 and out.count("\n") < 2000 + 10
    assert "output truncated" in out and out.rstrip().endswith("[100000 matching lines]")
    whole = uri_in(listed.stdout.split(b"output truncated")[1])  # the listing itself, stored whole
    assert cli("read", whole, "--all").stdout.decode().count("\n") == 100000  # and the count line


def test_stats_of_one_session_counts_only_that_session(cli):
    """Regression (issue 19, item 11): ``stats --session X`` listed every session's totals."""
    cli("run", "--session", "a", "--", "seq 1 100000")
    cli("run", "--session", "b", "--", "seq 1 120000")
    only = json.loads(cli("stats", "--session", "a", "--json").stdout)
    assert only["count"] == 1 and set(only["sessions"]) == {"a"} and only["lines"] == 100000
    text = cli("stats", "--session", "a").stdout.decode()
    assert "  a: 1 output" in text and "  b:" not in text
    every = json.loads(cli("stats", "--json").stdout)
    assert every["count"] == 2 and set(every["sessions"]) == {"a", "b"}


def test_bare_overspill_prints_usage(cli):
    """Regression (issue 19, item 12): bare ``overspill`` printed no usage."""
    result = cli()
    assert result.returncode == 2 and result.stdout.startswith(b"usage: overspill")
    for command in ("run", "read", "grep", "truncate", "ls", "cleanup", "stats", "mcp"):
        assert command.encode() in result.stdout


@pytest.mark.parametrize("command, present, absent", [
    ("run", ["124", "128+N", "storage failure"], ["3  unknown", "no line matched"]),
    ("read", ["3  unknown", "storage failure"], ["124", "no line matched"]),
    ("grep", ["1  no line matched", "3  unknown"], ["124"]),
    ("truncate", ["storage failure"], ["3  unknown", "124", "no line matched"]),
    ("ls", ["storage failure"], ["3  unknown", "124"]),
    ("stats", ["storage failure"], ["3  unknown", "124"]),
    ("cleanup", ["storage failure"], ["3  unknown", "124"]),
    ("mcp", ["storage failure"], ["3  unknown", "124", "no line matched"]),
])
def test_each_help_lists_only_its_own_exit_codes(cli, command, present, absent):
    """Regression (issue 19, item 12): every subcommand's --help repeated every exit code."""
    codes = cli(command, "--help").stdout.decode().split("exit codes:")[1]
    for text in present:
        assert text in codes, (command, text)
    for text in absent:
        assert text not in codes, (command, text)


def test_read_limit_past_a_page_says_it_clamped_and_the_hint_drops_it(cli):
    """Regression (issue 19, item 12): ``read --limit 100000`` clamped to 51,200
    silently and repeated ``--limit 100000`` in its hint."""
    uri = uri_in(cli("run", "--", "seq 1 100000").stdout)
    page = cli("read", uri, "--limit", "100000")
    assert page.returncode == 0
    assert page.stderr.decode() == "overspill: note: --limit 100000 is more than a page holds: clamped to 51200 bytes\n"
    hint = page.stdout.decode().rstrip().rsplit("\n", 1)[1]
    assert "--limit" not in hint and "--offset 51200" in hint


def test_cleanup_wording_and_dry_run_listing(cli, tmp_path, subprocess_env):
    """Regression (issue 19, item 12): ``cleanup --dry-run`` gave counts only, and
    ``ls``'s NAME was ``-`` for every ``overspill run`` output."""
    long_command = "seq 1 100000; echo " + "x" * 200
    uri = uri_in(cli("run", "--", long_command).stdout)
    listed = json.loads(cli("ls", "--json").stdout)["resources"]
    assert listed[0]["name"] == long_command[:79] + "…"
    assert "seq 1 100000; echo xxx" in cli("ls").stdout.decode()
    future = str(10**11)  # far past the retention
    script = ("import json, sys; from overspill import ToolOutputStore as S\n"
              f"r = S({str(tmp_path / 'data')!r}).cleanup(now={future}, dry_run=True)\n"
              "print(json.dumps([r.removed, list(r.removed_ids)]))")
    removed, ids = json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                             env=subprocess_env, timeout=60).stdout)
    assert removed == 1 and ids == [uri[len("tool-output://"):]]
    dry = json.loads(cli("cleanup", "--dry-run", "--json").stdout)
    assert dry["dry_run"] is True and dry["uris"] == [] and dry["removed"] == 0
    (tmp_path / "data" / "tool-output" / "managed" / f"{ids[0]}.txt").write_bytes(b"broken")  # a broken pair
    dry = json.loads(cli("cleanup", "--dry-run", "--json").stdout)
    assert dry["uris"] == [uri] and dry["removed"] == 1
    text = cli("cleanup", "--dry-run").stdout.decode()
    assert text.startswith("would remove 1 output, ") and "leftover" not in text


def test_env_variable_errors_have_one_format_and_the_flag_is_named(cli):
    """Regression (issue 19, item 12): two formats for a bad environment variable, and
    "the store URL from the url argument" for a command-line flag."""
    for value in ("abc", "0", "9" * 5000):
        result = cli("ls", env={"OVERSPILL_MAX_LINES": value})
        line = one_error_line(result)
        assert result.returncode == 2 and line.startswith("overspill: error: OVERSPILL_MAX_LINES (environment) must be")
    flagged = cli("ls", "--store-url", "gopher://x")
    assert flagged.returncode == 2 and one_error_line(flagged).startswith("overspill: error: --store-url has an "
                                                                          "unsupported scheme")
    assert "url argument" not in one_error_line(cli("ls", "--store-url", "redis://h:1/0?foo=bar"))
    environment = cli("ls", env={"OVERSPILL_STORE_URL": "redis://h:1/abc"})
    assert one_error_line(environment).startswith("overspill: error: OVERSPILL_STORE_URL (environment): Redis URL")


def test_run_with_an_unreachable_store_fails_before_the_command_runs(cli, tmp_path):
    """Regression (issue 19, item 4): the command ran (seconds, side effects), then
    "the output could not be kept", exit 4."""
    witness = tmp_path / "ran"
    result = cli("run", "--store-url", "redis://127.0.0.1:1/0", "--", f"touch {witness}; seq 1 100000")
    assert result.returncode == 4 and result.stdout == b"" and "127.0.0.1:1" in one_error_line(result)
    assert not witness.exists()
    environment = cli("run", "--", f"touch {witness}", env={"OVERSPILL_STORE_URL": "redis://127.0.0.1:1/0"})
    assert environment.returncode == 4 and not witness.exists()


EXIT_PROBE = """
import atexit, sys
from overspill.cli import exit_with
sys.argv[1:] = {words!r}
class Teardown:
    def __del__(self):
        sys.stderr.write(" torn down")
kept = Teardown()  # a module global: collected only by the interpreter's teardown
if {hook}:
    atexit.register(lambda: print(" at exit"))
sys.stdout.write("written")
sys.stderr.write("noted")
exit_with(3)
"""


@pytest.mark.parametrize("words, hook, teardown", [
    (["read"], False, False), (["read"], True, True), (["ls"], False, True),
    # a read written with the shared options first (README's example form) is a read too
    (["--data-dir", "/tmp/d", "--session=s", "--json", "read"], False, False),
    (["--session", "read", "ls"], False, True)])
def test_exit_with_flushes_and_skips_the_teardown_only_after_a_read(subprocess_env, words, hook, teardown):
    # After a read, with nothing registered to run at exit, the process ends
    # without the interpreter's teardown (2-4 ms of a `read --all | head`);
    # what was written is flushed first, and the status is kept.
    result = subprocess.run([sys.executable, "-c", EXIT_PROBE.format(words=words, hook=hook)],
                            capture_output=True, text=True, env=subprocess_env, timeout=60)
    assert result.returncode == 3, result.stderr
    assert result.stdout == "written" + (" at exit\n" if hook else "")
    assert result.stderr == "noted" + (" torn down" if teardown else "")


# ---------------------------------------------------------------- red-team, stop 12
def test_run_keeps_the_commands_exit_code_when_nobody_reads_the_preview(cli, tmp_path, subprocess_env):
    # The reader left before a byte was read (`| true`): the preview goes nowhere, but the exit code
    # is still the command's, so `set -o pipefail` sees the failure.
    script = f"{shlex.quote(str(SCRIPT))} run -- 'seq 100000; exit 7' | true; echo \"${{PIPESTATUS[0]}}\""
    done = subprocess.run(["bash", "-c", script], capture_output=True, timeout=120,
                          env={**subprocess_env, "OVERSPILL_DATA_DIR": str(tmp_path / "data")})
    assert done.stdout.decode().strip() == "7", done
    assert done.stderr == b""


@pytest.mark.parametrize("via", ["--session", "OVERSPILL_SESSION"])
def test_an_overlong_session_is_refused_before_the_command_runs(cli, tmp_path, via):
    witness = tmp_path / "ran"
    session = "x" * 2000
    options, env = (["--session", session], None) if via == "--session" else ([], {"OVERSPILL_SESSION": session})
    done = cli("run", *options, "--", f"touch {witness}; echo hello", env=env)
    assert done.returncode == 2 and b"session_id must be at most 1024 UTF-8 bytes" in done.stderr
    assert not witness.exists()  # nothing ran


def test_mcp_refuses_an_overlong_session_at_start(cli):
    done = cli("mcp", "--session", "é" * 600, stdin=b"")
    assert done.returncode == 2
    assert done.stderr.decode().strip() == "overspill: error: session_id must be at most 1024 UTF-8 bytes, not 1200"


def test_wait_help_lists_the_exit_code_of_an_unseen_pattern(cli):
    shown = cli("wait", "--help").stdout.decode()
    codes = shown.split("exit codes:")[1]
    assert "  1  --pattern matched no new line" in codes


@pytest.mark.parametrize("query", ["offset=abc", "limit=0", "offset=-1", "limit=1e3", "offset=" + "9" * 19])
def test_a_page_number_in_the_uri_that_is_no_number_is_bad_input(cli, query):
    # As --offset abc is; a URI that is malformed (an unknown key) stays exit 3.
    uri = uri_in(cli("run", "--", "seq 100000").stdout)
    done = cli("read", f"{uri}?{query}")
    assert done.returncode == 2 and done.stderr.startswith(b"overspill: error: "), done.stderr
    assert cli("read", "tool-output://nosuchresource000000000000?offset=abc").returncode == 3


@pytest.mark.parametrize(("url", "shown"), [
    ("redis://:s3cret@127.0.0.1:6390/0", "redis://:***@127.0.0.1:6390/0"),
    ("redis://user:s3cret@127.0.0.1:6390/0", "redis://user:***@127.0.0.1:6390/0"),
    ("redis://127.0.0.1:6390/0?password=s3cret", "redis://127.0.0.1:6390/0"),
    ("redis://127.0.0.1:6390/0?socket_timeout=5", "redis://127.0.0.1:6390/0?socket_timeout=5"),
])
def test_the_next_commands_never_show_a_store_password(url, shown):
    import argparse

    from overspill.cli._common import _cli_calls, _continue_command

    args = argparse.Namespace(session=None, data_dir=None, store_url=url)
    for hint in (_cli_calls(args, "tool-output://x", 10), _continue_command(args, "tool-output://x", 10, None)):
        assert "s3cret" not in hint and f"--store-url {shlex.quote(shown)}" in hint, hint


def test_ctrl_c_while_run_background_waits_still_tells_the_handle(cli, tmp_path, subprocess_env):
    env = {**subprocess_env, "OVERSPILL_DATA_DIR": str(tmp_path / "data")}
    started = subprocess.Popen([str(SCRIPT), "run", "--background", "--yield-after", "60", "--", "sleep 30"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
    try:
        assert wait_until(lambda: cli("jobs").stdout.count(b"tool-output://") == 1)
        os.killpg(started.pid, signal.SIGINT)  # as a terminal's Ctrl-C reaches the whole group
        out, _ = started.communicate(timeout=60)
    finally:
        if started.poll() is None:
            started.kill()
    assert started.returncode == 130
    uri = uri_in(out)
    assert b"running in the background as " + uri.encode() in out
    assert cli("kill", uri).returncode == 0


def test_an_empty_data_dir_is_bad_input_not_the_working_folder(cli, tmp_path):
    done = cli("run", "--data-dir", "", "--", "seq 100000", cwd=str(tmp_path))
    assert done.returncode == 2 and b"data_dir must not be empty" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_read_says_on_stderr_where_a_capped_stored_copy_ends(cli):
    ran = cli("run", "--", "seq 1000000", env={"OVERSPILL_MAX_STORED_BYTES": "100000"})
    uri = uri_in(ran.stdout)
    last = cli("read", uri, "--offset", "99990")
    assert last.stdout == b"18517\n1851\n"  # the page is the stored bytes, exactly
    assert last.stderr.decode() == (f"overspill: note: the stored copy of {uri} ends here, at byte 100000: the output "
                                    "had 6888896 bytes, and the rest, bytes 100000 to 6888896, was not kept\n")


def test_read_limit_past_a_page_in_the_uri_is_named_as_written(cli):
    """Regression (issue 19 item 12, red team E minor): ``read "URI?limit=100000"`` said its clamp
    note as ``--limit 100000``, a flag the user never gave; it names the URI's limit now."""
    uri = uri_in(cli("run", "--", "seq 1 100000").stdout)
    page = cli("read", f"{uri}?limit=100000")
    assert page.returncode == 0
    assert page.stderr.decode() == ("overspill: note: the URI's limit=100000 is more than a page holds: "
                                    "clamped to 51200 bytes\n")
    hint = page.stdout.decode().rstrip().rsplit("\n", 1)[1]
    assert "limit" not in hint and "--offset 51200" in hint


def test_read_of_a_lost_output_says_it_ends_for_good_and_read_all_says_it_is_not_all(cli, tmp_path):
    """Red team H f04: ``overspill read`` of a lost background output said "read ... later, or
    overspill wait" (the read tool says it ends for good), and ``read --all`` of a running or lost
    one printed its bytes so far with no word that they are not all."""
    from overspill import ToolOutputStore

    with ToolOutputStore(tmp_path / "data") as store:
        writers = _running_and_lost(store, "RL", b"tick\n" * 4)
        running, lost = (writer.record.resource.uri for writer in writers)
        try:
            page = cli("read", lost, "--session", "cs")
            assert page.returncode == 0 and b"later" not in page.stdout and b"overspill wait" not in page.stdout
            assert page.stdout.endswith(f"[complete: false; lost: the process that ran {lost} is gone, so its output "
                                        f"ends at byte 20 for good]\n".encode())
            whole = cli("read", lost, "--session", "cs", "--all")
            assert (whole.returncode, whole.stdout) == (0, b"tick\n" * 4)
            assert b"lost: " in whole.stderr and b"ends at byte 20 for good" in whole.stderr
            whole = cli("read", running, "--session", "cs", "--all")
            assert (whole.returncode, whole.stdout) == (0, b"tick\n" * 4)
            assert b"complete: false; the output so far ends at byte 20: overspill read " in whole.stderr
            assert b"--offset 20" in whole.stderr
        finally:
            for writer in writers:
                writer.abort()


@pytest.mark.parametrize("args, closed, message", [
    (("truncate",), 0, "standard input is closed: nothing could be read"),
    (("truncate", "-"), 0, "standard input is closed: nothing could be read"),
    (("mcp",), 0, "standard input is closed: nothing could be read"),
    (("mcp",), 1, "standard output is closed: nothing could be written"),
])
def test_a_closed_stdin_or_stdout_is_one_line_exit_4_for_truncate_and_mcp(cli, subprocess_env, tmp_path, args,
                                                                          closed, message):
    """Regression (red team K f01): ``truncate <&-`` and ``mcp <&-`` / ``mcp >&-`` ended in an
    AttributeError traceback (sys.stdin or sys.stdout is None), exit 1."""
    if args[0] == "mcp":
        pytest.importorskip("mcp")
    result = subprocess.run([str(SCRIPT), *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=tmp_path, timeout=120, env=subprocess_env,
                            preexec_fn=lambda: os.close(closed))
    assert result.returncode == 4
    assert one_error_line(result) == f"overspill: error: {message}"
    assert result.stdout == b""


def test_json_output_is_valid_utf8_and_keeps_non_utf8_names_recoverable(cli, tmp_path):
    """Regression (red team K f03): a file name, --name or session that is not UTF-8 was written
    into ``--json`` output as its raw byte (surrogateescape), so the document was not UTF-8 and
    json.loads / jq rejected it.  Such a character is now the JSON escape ``\\udcff``."""
    source = os.path.join(os.fsencode(tmp_path), b"na\xffme.txt")
    with open(source, "wb") as out:
        out.write(b"".join(b"%d\n" % i for i in range(20000)))
    session = os.fsdecode(b"s\xfe")
    for argv, name in (([b"truncate", source, b"--json"], "na\udcffme.txt"),
                       ([b"truncate", b"--json", b"--name", b"x\xfey", source], "x\udcfey")):
        done = cli(*(os.fsdecode(word) for word in argv), "--session", session)  # arguments go out as their bytes
        assert done.returncode == 0, done.stderr
        document = json.loads(done.stdout.decode("utf-8"))
        assert document["resource"]["name"] == name
        assert os.fsencode(document["resource"]["name"]) == os.fsencode(name)
    listed = cli("ls", "--json", "--session", session)
    text = listed.stdout.decode("utf-8")
    assert "\\udcff" in text and "\\udcfe" in text
    resources = json.loads(text)["resources"]
    assert sorted(r["name"] for r in resources) == ["na\udcffme.txt", "x\udcfey"]
    assert {os.fsencode(r["session"]) for r in resources} == {b"s\xfe"}


def test_run_no_spill_needs_no_store_for_an_output_shown_whole(cli, tmp_path):
    """Regression (red team K f04): ``run --no-spill -- echo hi`` opened (created) the data folder
    for a 3-byte output and, where it could not be used, exited 4 "the output could not be kept";
    with spilling on the same output needs no store.  Spilled or not, an output shown whole opens
    nothing; one over the limits still shows its preview and exits 4."""
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the data folder should be")
    broken = {"OVERSPILL_DATA_DIR": str(blocker / "data")}
    for flags in ((), ("--no-spill",)):
        small = cli("run", *flags, "--", "echo hi", env=broken)
        assert (small.returncode, small.stdout, small.stderr) == (0, b"hi\n", b""), flags
    fresh = tmp_path / "fresh"
    small = cli("run", "--no-spill", "--data-dir", str(fresh), "--", "echo hi")
    assert small.returncode == 0 and small.stdout == b"hi\n" and not fresh.exists()
    # Over the limits and held whole in memory: it would be stored, so the failure is told.
    large = cli("run", "--no-spill", "--", "seq 1 20000", env=broken)
    assert large.returncode == 4 and large.stdout.startswith(b"1\n2\n3\n")
    assert large.stderr.decode().startswith("overspill: error: the output could not be kept")
    # Past what capture holds with spilling off: nothing would be stored, so no store is needed.
    dropped = cli("run", "--no-spill", "--", "seq 1 1000000", env=broken)
    assert dropped.returncode == 0 and dropped.stderr == b"" and b"spilling was off" in dropped.stdout


def test_truncate_opens_the_store_only_for_an_input_it_must_store(cli, tmp_path):
    """Regression (red team K f02): ``truncate`` opened (created) the data folder before reading
    its input, so with an unusable folder ``echo hi | overspill truncate`` printed nothing and
    exited 4 (the input lost) and a large input printed no preview; a small input created the
    folder.  As ``run``: a small input is printed untouched with no store opened; a large one
    whose store fails still has its preview printed, then the error, exit 4."""
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the data folder should be")
    broken = {"OVERSPILL_DATA_DIR": str(blocker / "data")}
    small = cli("truncate", stdin=b"hi\n", env=broken)
    assert (small.returncode, small.stdout, small.stderr) == (0, b"hi\n", b"")
    fresh = tmp_path / "fresh"
    small = cli("truncate", "-", "--data-dir", str(fresh), "--json", stdin=b"hi\n")
    assert small.returncode == 0 and json.loads(small.stdout)["content"] == "hi\n" and not fresh.exists()
    numbers = b"".join(b"%d\n" % i for i in range(1, 100001))
    source = tmp_path / "numbers.txt"
    source.write_bytes(numbers)
    for ran in (cli("truncate", stdin=numbers, env=broken), cli("truncate", str(source), env=broken)):
        assert ran.returncode == 4
        out = ran.stdout.decode()
        assert out.startswith("1\n2\n3\n") and out.endswith("\n100000\n") and "tool-output://" not in out
        assert "the output could not be stored" in out
        errors = ran.stderr.decode().splitlines()
        assert len(errors) == 1 and errors[0].startswith("overspill: error: the output could not be kept: ")
    # A usable folder: stored and previewed as before.
    stored = cli("truncate", "--data-dir", str(fresh), stdin=numbers)
    assert stored.returncode == 0 and "overspill read tool-output://" in stored.stdout.decode()


def test_an_output_within_a_token_bound_opens_no_store(cli, tmp_path):
    """Regression (red team I12 #2): under ``--max-tokens`` every output was taken as one to store,
    so ``run --max-tokens 100 -- echo hi`` and ``echo hi | truncate --max-tokens 100`` opened the
    data folder (created it, or exited 4 "the output could not be kept" where it could not be
    made) for an output shown whole.  Its tokens are counted before anything is opened; one within
    the bytes and lines but over the token bound is still stored (or its preview printed, exit 4)."""
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the data folder should be")
    broken = {"OVERSPILL_DATA_DIR": str(blocker / "data")}
    fresh = tmp_path / "fresh"
    words = b"".join(b"word %d\n" % i for i in range(40))  # within 2,000 lines and 50 KiB, over 20 tokens
    for command, stdin in ((("run", "--max-tokens", "100", "--", "echo hi"), None),
                           (("truncate", "--max-tokens", "100", "-"), b"hi\n")):
        small = cli(*command, stdin=stdin, env=broken)
        assert (small.returncode, small.stdout, small.stderr) == (0, b"hi\n", b""), command
        small = cli(*command[:1], "--data-dir", str(fresh), *command[1:], stdin=stdin)
        assert (small.returncode, small.stdout) == (0, b"hi\n") and not fresh.exists(), command
    for command, stdin in ((("run", "--max-tokens", "20", "--", "cat"), words),
                           (("truncate", "--max-tokens", "20", "-"), words)):
        over = cli(*command, stdin=stdin, env=broken)
        assert over.returncode == 4 and over.stdout.startswith(b"word 0\n"), (command, over)
        assert over.stderr.decode().startswith("overspill: error: the output could not be kept"), command
        stored = cli(*command[:1], "--data-dir", str(fresh), *command[1:], stdin=stdin)
        assert stored.returncode == 0 and b"overspill read tool-output://" in stored.stdout, (command, stored)


def test_grep_of_an_unknown_resource_creates_no_data_folder(cli, tmp_path):
    """Regression (red team K f02, grep): ``grep`` opened its store with create=True, so a grep of
    a resource that does not exist created the data folder; it reads as ``read`` does now, and a
    long listing is still stored."""
    fresh = tmp_path / "fresh"
    missing = cli("grep", "--data-dir", str(fresh), "tool-output://1a24ad076d20YOJxh6ONPcHupc", "x")
    assert missing.returncode == 3 and not fresh.exists()
    uri = uri_in(cli("run", "--data-dir", str(fresh), "--", "seq 1 100000").stdout)
    listing = cli("grep", "--data-dir", str(fresh), uri, "1", "-m", "100000")
    assert listing.returncode == 0 and b"next: overspill read tool-output://" in listing.stdout
    assert len(cli("ls", "--data-dir", str(fresh)).stdout.splitlines()) == 3  # a header, the output, the listing


def test_next_hints_escape_a_sessions_control_characters_and_still_run(cli, tmp_path):
    """Regression (red team K, minor): the ``next:`` and continue hints wrote ``--session`` through
    shlex.join, so an ESC or a 0xFF byte in it reached the terminal raw.  Such a word is written in
    ANSI-C quoting with ``_shown``'s escapes now: nothing raw is printed, and bash runs the hint."""
    session = os.fsdecode(b"s\x1b[31m'\\\xff")
    ran = cli("run", "--session", session, "--", "seq 1 100000")
    hint = next(line for line in ran.stdout.splitlines() if line.startswith(b"next: "))
    assert b"\x1b" not in ran.stdout and b"\xff" not in ran.stdout
    assert b"--session $'s\\x1b[31m\\'\\\\\\xff'" in hint
    command = hint.decode().removeprefix("next: ").split("  or  ")[0]
    page = subprocess.run(["bash", "-c", command], capture_output=True, timeout=120,
                          env={**os.environ, "PATH": f"{SCRIPT.parent}:{os.environ['PATH']}",
                               "OVERSPILL_DATA_DIR": str(tmp_path / "data")})
    assert page.returncode == 0, page.stderr
    following = page.stdout.splitlines()[-1]  # the continue hint
    assert b"\x1b" not in page.stdout and b"--session $'s\\x1b[31m" in following
    uri = uri_in(ran.stdout)
    assert cli("read", uri, "--session", session).returncode == 0  # the session is the one bash gave back


def test_read_limit_in_the_uri_past_18_digits_is_clamped_as_the_flag_is(cli):
    """Regression (red team K, minor): ``read "URI?limit=10**20"`` was exit 2 (the query took at
    most 18 digits) while ``--limit 10**20`` was clamped to a page with a note; one rule now, and a
    number of thousands of digits is cut short in the note."""
    uri = uri_in(cli("run", "--", "seq 1 100000").stdout)
    big = str(10**20)
    by_flag, by_uri = cli("read", uri, "--limit", big), cli("read", f"{uri}?limit={big}")
    assert by_flag.returncode == by_uri.returncode == 0 and by_uri.stdout == by_flag.stdout
    assert by_uri.stderr.decode() == (f"overspill: note: the URI's limit={big} is more than a page holds: "
                                      "clamped to 51200 bytes\n")
    huge = cli("read", f"{uri}?limit={'1' * 4300}")
    assert huge.returncode == 0 and huge.stdout == by_flag.stdout
    assert huge.stderr.decode() == ("overspill: note: the URI's limit=111111111111111111111... is more than a page "
                                    "holds: clamped to 51200 bytes\n")
    for refused in ("0", "1" * 4301, "1e9"):
        done = cli("read", f"{uri}?limit={refused}")
        assert done.returncode == 2 and "limit must be one integer of at least 1" in one_error_line(done)


def test_next_hints_write_code_points_past_ascii_as_bash_reads_them_back(cli, tmp_path):
    """Regression (review M r01): the ANSI-C quoting wrote a non-printable U+0080..U+00FF as
    ``\\xNN``, which bash reads as one raw byte, not the character's UTF-8, so a hint for the session
    ``s\\u00a0x`` named another session (exit 3).  Such code points were then ``\\uNNNN``/``\\UNNNNNNNN``,
    which only a UTF-8 locale reads back; they are their UTF-8 bytes as ``\\xNN`` now (red team A12:
    ``test_next_hints_give_bash_a_words_exact_bytes_in_the_c_locale_too``)."""
    from overspill.cli._common import _shell_join

    bash_env = {**os.environ, "LC_ALL": "C.UTF-8"}
    for word in ("s\u0085x", "s\u00a0x", "s\u00adx", "s\u009b31m", "s\u200bx", "s\u2028x", "s\U000e0001x",
                 "s\x1b[0m", os.fsdecode(b"s\xa0\xffx"), "s\u00a0" + os.fsdecode(b"\xc2") + "'\\"):
        quoted = _shell_join([word])
        assert quoted.isprintable() and quoted.startswith("$'")
        echoed = subprocess.run(["bash", "-c", f"printf %s {quoted}"], capture_output=True, env=bash_env,
                                timeout=60)
        assert echoed.returncode == 0 and echoed.stdout == os.fsencode(word), (word, quoted, echoed)
    # End to end: the hint printed for a session holding U+00A0 runs in bash and reads the same output.
    session = "s\u00a0x"
    ran = cli("run", "--session", session, "--", "seq 1 100000")
    hint = next(line for line in ran.stdout.splitlines() if line.startswith(b"next: "))
    assert b"--session $'s\\xc2\\xa0x'" in hint
    command = hint.decode().removeprefix("next: ").split("  or  ")[0]
    page = subprocess.run(["bash", "-c", command], capture_output=True, timeout=120,
                          env={**bash_env, "PATH": f"{SCRIPT.parent}:{os.environ['PATH']}",
                               "OVERSPILL_DATA_DIR": str(tmp_path / "data")})
    assert page.returncode == 0, page.stderr


def test_next_hints_give_bash_a_words_exact_bytes_in_the_c_locale_too(cli, tmp_path, subprocess_env):
    """Regression (red team A12, low): a non-printable code point past ASCII was written ``\\uNNNN``,
    which bash encodes in the locale's charset; under ``LC_ALL=C`` (a common script locale) it stays
    the text ``\\u00a0``, so the hint for the session ``s\\u00a0x`` named another session (exit 3).
    Such a character is its UTF-8 bytes as ``\\xNN`` now, which bash gives back as those bytes in
    every locale; a printable one stays literal, bytes bash also passes on as they are."""
    from overspill.cli._common import _shell_join

    for locale in ("C", "C.UTF-8"):
        bash_env = {**os.environ, "LC_ALL": locale}
        for word in ("s\u00a0x", "s\u0085x", "s\u00adx", "s\u200bx", "s\u2028x", "s\U000e0001x",
                     "é\u00a0ü", "日本\u200b語", os.fsdecode(b"s\xa0\xffx"), "s\u00a0" + os.fsdecode(b"\xc2") + "'\\"):
            quoted = _shell_join([word])
            echoed = subprocess.run(["bash", "-c", f"printf %s {quoted}"], capture_output=True, env=bash_env,
                                    timeout=60)
            assert echoed.returncode == 0 and echoed.stdout == os.fsencode(word), (locale, word, quoted, echoed)
            assert quoted.isprintable() and "\\u" not in quoted and "\\U" not in quoted, quoted
    # End to end, under C as the red team ran it: the hint runs in bash and reads the page.
    session = "s\u00a0x"
    env = {"LC_ALL": "C"}
    ran = cli("run", "--session", session, "--", "seq 1 100000", env=env)
    hint = next(line for line in ran.stdout.splitlines() if line.startswith(b"next: "))
    assert b"--session $'s\\xc2\\xa0x'" in hint, hint
    command = hint.decode().removeprefix("next: ").split("  or  ")[0]
    page = subprocess.run(["bash", "-c", command], capture_output=True, timeout=120,
                          env={**subprocess_env, **env, "PATH": f"{SCRIPT.parent}:{os.environ['PATH']}",
                               "OVERSPILL_DATA_DIR": str(tmp_path / "data")})
    assert page.returncode == 0, page.stderr
    assert page.stdout == cli("read", command.split()[2], "--offset", command.split()[4], "--session", session).stdout


def test_read_all_of_a_running_output_stops_before_a_cut_character(cli, tmp_path):
    """Regression (review M r02): ``read --all`` of a running output whose sealed end cut a character
    wrote the character's first bytes and named the raw sealed size, so a read there started inside
    the character and skipped it.  It stops where the character starts and names that, as pages do;
    a lost output's cut character stays (nothing will complete it), and its true end is named."""
    from overspill import ToolOutputStore

    with ToolOutputStore(tmp_path / "data") as store:
        writers = _running_and_lost(store, "CD", b"price: \xe2\x82")  # "price: €" cut after 2 of its 3 bytes
        running, lost = (writer.record.resource.uri for writer in writers)
        try:
            whole = cli("read", running, "--session", "cs", "--all")
            assert (whole.returncode, whole.stdout) == (0, b"price: ")
            assert b"complete: false; the output so far ends at byte 7: overspill read " in whole.stderr
            assert b"--offset 7 " in whole.stderr
            page = cli("read", running, "--session", "cs")  # the page says the same
            assert b"ends at byte 7: " in page.stdout and b"--offset 7 " in page.stdout
            writers[0].write(memoryview(b"\xac 5\n"))
            writers[0].seal()
            later = cli("read", running, "--session", "cs", "--offset", "7")  # following the note loses nothing
            assert later.returncode == 0 and later.stdout.startswith("€ 5\n".encode())
            whole = cli("read", lost, "--session", "cs", "--all")
            assert (whole.returncode, whole.stdout) == (0, b"price: \xe2\x82")
            assert b"ends at byte 9 for good" in whole.stderr
        finally:
            for writer in writers:
                writer.abort()


def _running_and_lost(store, letters: str, data: bytes) -> list:
    """Two growing outputs of session ``cs`` holding ``data``, sealed: one this process owns
    (running) and one whose owner is gone (lost); ids from ``letters``' two letters."""
    from overspill._frozen import replace
    from overspill._owner import current_owner

    writers = []
    for letter, owner in zip(letters, (current_owner(), replace(current_owner(), pid=2 ** 22 + 1, start=1))):
        writer = store._backend.create_growing("0" * 12 + letter * 14, session_id="cs", tool_call_id="c",
                                               mime="text/plain", name=None, owner=owner, process=None)
        writer.write(memoryview(data))
        writer.seal()
        writers.append(writer)
    return writers


@pytest.mark.parametrize("pattern", ["a{99999999999}", "(" * 5000])
def test_cli_grep_refuses_an_uncompilable_pattern_with_exit_2(cli, pattern):
    """Regression (red team V f01): a pattern ``re`` refuses with OverflowError or RecursionError
    printed a traceback and exited 1 ("no matches"); it is a one-line usage error, exit 2."""
    uri = uri_in(cli("run", "--", "seq 1 100000").stdout)
    refused = cli("grep", uri, pattern)
    assert refused.returncode == 2, refused.stderr[-300:]
    assert refused.stderr.decode().startswith("overspill: error: invalid pattern '")
    assert b"Traceback" not in refused.stderr and refused.stderr.count(b"\n") == 1


def test_run_background_with_no_room_for_its_output_exits_4_and_never_runs_it(cli, tmp_path):
    """Regression (red team C7 f02): the supervisor started the command, then found the quota
    (``max_total_bytes``) had no room for its output and killed it; the CLI said so as a usage error
    (exit 2) though README gives exit 4 for a storage failure."""
    marker = tmp_path / "marker"
    refused = cli("run", "--background", "--yield-after", "5", "--", f"echo ran >> '{marker}'",
                  env={"OVERSPILL_MAX_TOTAL_BYTES": "100"})
    assert refused.returncode == 4, refused.stderr
    assert refused.stderr.decode().startswith("overspill: error: could not run the command: the output cannot be "
                                              "stored: max_total_bytes 100 cannot hold even its record")
    assert refused.stderr.count(b"\n") == 1 and not marker.exists()


def test_kill_of_a_command_that_ignores_sigterm_reads_the_record_its_supervisor_finished(cli, tmp_path, monkeypatch):
    """Regression (red team C7 f01): kill's grace ends with the supervisor's own (both 2 s): when the
    supervisor finished the record and exited between kill's last look and its check of the owner,
    kill returned its stale look, "running" with no exit code, for a command that had ended.  That
    interleaving is made certain here: a shorter grace in this process, and the look after the
    SIGKILL only once the supervisor is gone."""
    from overspill import ToolOutputStore, background
    from overspill._owner import owner_alive

    started = cli("run", "--background", "--yield-after", "0", "--json", "--",
                  'trap "" TERM; echo up; while :; do sleep 0.1; done')
    uri = json.loads(started.stdout)["metadata"]["uri"]
    with ToolOutputStore(tmp_path / "data") as store:
        owner = store.status("cli", uri).owner
        real = background._signal_group

        def then_the_owner_is_gone(pgid, number):
            real(pgid, number)
            if number == signal.SIGKILL:  # the command ends: its supervisor finishes the record and exits
                assert wait_until(lambda: not owner_alive(owner), 30)

        monkeypatch.setattr(background, "KILL_GRACE", 0.3)
        monkeypatch.setattr(background, "_signal_group", then_the_owner_is_gone)
        record = background.kill(store, "cli", uri)
    assert (record.state, record.exit_code) == ("exited", -signal.SIGKILL)


def test_run_background_from_a_removed_working_folder_runs_as_the_foreground_does(cli, tmp_path, subprocess_env):
    """Regression (red team C7, minor): ``run --background`` from a working folder that was removed
    exited 4 with a bare "[Errno 2] No such file or directory" (its ``os.getcwd()``), while ``run``
    in the foreground runs the command there."""
    gone = tmp_path / "gone"
    gone.mkdir()
    # The shell removes its own working folder, then runs the CLI from it.
    script = f"cd '{gone}' && rmdir '{gone}' && exec '{SCRIPT}' run --background --yield-after 30 -- 'echo ran; exit 3'"
    started = subprocess.run(["sh", "-c", script], capture_output=True, timeout=120, env=subprocess_env)
    assert started.returncode == 3, started.stderr
    # (The command's shell says it cannot name its folder, as in the foreground: part of its output.)
    assert started.stdout.decode().splitlines()[-2:] == ["ran", "[exit code 3]"]


# ------------------------------------------------------------------ red team E7
def test_run_and_truncate_of_an_output_the_quota_cannot_hold_exit_4(cli):
    """Regression (red team E7 f01): with max_total_bytes too small for even a record, ``run`` and
    ``truncate`` printed the "output not stored" preview and exited 0 (``run --json``: is_error false);
    README: an output that cannot be stored still has its preview printed, and exit 4."""
    quota = {"OVERSPILL_MAX_TOTAL_BYTES": "1"}
    numbers = b"".join(b"%d\n" % number for number in range(100000))
    for args, stdin in ((("run", "--", "seq 0 99999"), None), (("truncate",), numbers)):
        result = cli(*args, stdin=stdin, env=quota)
        assert result.returncode == 4, (args, result.stderr)
        assert b"output not stored (588890 bytes, 100000 lines in all)" in result.stdout
        assert result.stdout.startswith(b"0\n1\n") and b"\n99999" in result.stdout
        assert result.stderr.decode().startswith("overspill: error: the output could not be kept: ")
        assert b"max_total_bytes 1 cannot hold even its record" in result.stderr
    ran = cli("run", "--json", "--", "seq 0 99999", env=quota)
    document = json.loads(ran.stdout)
    assert ran.returncode == 4 and document["is_error"] and document["resource"] is None
    assert "max_total_bytes 1" in document["metadata"]["storage_error"]
    assert cli("run", "--", "echo small", env=quota).returncode == 0  # shown whole: nothing to store


def test_truncate_of_binary_input_stores_and_describes_it_as_run_does(cli, tmp_path):
    """Regression (red team E7 f04): ``truncate`` of random bytes (a file or stdin) printed ~50 KB of
    U+FFFD and raw control bytes and stored them as text/plain, where ``run -- cat FILE`` stores
    them as application/octet-stream and prints one line; both now follow the one rule."""
    blob = tmp_path / "blob.bin"
    data = bytes(range(256)) * 1200
    blob.write_bytes(data)
    ran = cli("run", "--", f"cat {blob}")
    for args, stdin in (((str(blob),), None), (("-", "--name", "piped"), data), (("--json", str(blob)), None)):
        result = cli("truncate", *args, stdin=stdin)
        assert result.returncode == 0, result.stderr
        if "--json" in args:
            document = json.loads(result.stdout)
            assert document["truncated"] and document["resource"]["mime"] == "application/octet-stream"
            assert document["content"].startswith("[binary output, 307200 bytes, stored as tool-output://")
            continue
        assert result.stdout.count(b"\n") == 1 and len(result.stdout) < 200
        assert result.stdout.startswith(b"[binary output, 307200 bytes, stored as tool-output://")
        assert result.stdout.endswith(b"; it begins 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f ...]\n")
        assert cli("read", uri_in(result.stdout), "--all").stdout == data
        assert ran.stdout.split(b" stored as ")[0] == result.stdout.split(b" stored as ")[0]
    mimes = {entry["name"]: entry["mime"] for entry in json.loads(cli("ls", "--json").stdout)["resources"]}
    assert mimes == {"blob.bin": "application/octet-stream", "piped": "application/octet-stream",
                     f"cat {blob}": "application/octet-stream"}
    # A small binary input is stored too (run's rule: binary output is never shown as text).
    small = cli("truncate", "-", stdin=b"\x00\x01\x02")
    assert small.stdout.startswith(b"[binary output, 3 bytes, stored as tool-output://")
    # Text is unchanged: shown whole under the limits.
    assert cli("truncate", "-", stdin="ünïcode\n".encode()).stdout == "ünïcode\n".encode()


def test_read_offset_and_the_uri_query_share_one_rule(cli):
    """Red team J f03: ``read URI --offset 99999999999999999999999`` was an empty page (exit 0) while
    ``URI?offset=99999999999999999999999`` (and MCP's resources/read) refused it; and
    ``?offset=5&offset=6`` exited 3 (a malformed URI) where ``?offset=-1`` and ``?offset=5 --offset 6``
    exit 2. Either form now takes an offset of at most 18 digits, and a number given twice is bad input."""
    uri = uri_in(cli("run", "--", "seq 100000").stdout)
    huge = "9" * 23
    for args in (["--offset", huge], ["--offset", "1" + "0" * 18]):
        flag = cli("read", uri, *args)
        queried = cli("read", f"{uri}?offset={args[1]}")
        assert (flag.returncode, queried.returncode) == (2, 2), (flag.stderr, queried.stderr)
        assert one_error_line(flag) == one_error_line(queried)
        assert flag.stdout == queried.stdout == b""
    # The largest offset either form takes is past the end: an empty last page, exit 0, both ways.
    at_end = cli("read", uri, "--offset", "9" * 18)
    assert at_end.returncode == 0 and at_end.stdout == cli("read", f"{uri}?offset={'9' * 18}").stdout == b""
    for query in ("offset=5&offset=6", "offset=5&offset=5", "limit=7&limit=8", "offset=-1"):
        twice = cli("read", f"{uri}?{query}")
        assert twice.returncode == 2 and twice.stderr.startswith(b"overspill: error: "), (query, twice.stderr)
    assert cli("read", f"{uri}?page=2").returncode == 3  # a malformed URI (an unknown key) stays exit 3


def test_integer_flags_take_only_what_the_uri_query_takes(cli):
    """Regression (red team A12, low): ``read --offset`` (and every integer flag) was parsed by
    ``int(text)``, so it took ``+10``, `` 10``, ``1_000``, Arabic-Indic digits and a zero-padded
    offset of 22 digits, all of which ``URI?offset=`` refuses as bad input.  One rule now (the
    query's, ``_frontend.decimal_integer``): ASCII digits only; an offset of at most 18 of them,
    refused by ``--offset`` with the URI's own line; what both took before they still take."""
    uri = uri_in(cli("run", "--", "seq 100000").stdout)
    for text in ("0" * 21 + "1", "+10", " 10", "10 ", "10\n", "1_000", "\u0661\u0660", "\uff11", "-0", "0x10", ""):
        flag, queried = cli("read", uri, "--offset", text), cli("read", f"{uri}?offset={text}")
        assert (flag.returncode, queried.returncode) == (2, 2), (text, flag.stderr, queried.stderr)
        assert one_error_line(flag) == one_error_line(queried) and flag.stdout == queried.stdout == b"", text
    for text in ("+10", " 10", "1_000", "\u0661\u0660", "-0", "1" * 4301):
        flag, queried = cli("read", uri, "--limit", text), cli("read", f"{uri}?limit={text}")
        assert (flag.returncode, queried.returncode) == (2, 2), (text, flag.stderr, queried.stderr)
        one_error_line(flag), one_error_line(queried)
    # Every other integer flag has the same rule (refused before the command runs).
    for args in (["grep", uri, "x", "-C", "+1"], ["grep", uri, "x", "-m", " 5"], ["wait", uri, "--offset", "1_0"],
                 ["truncate", "--max-lines", "\u0661\u0660"], ["truncate", "--max-bytes", "+100"],
                 ["mcp", "--max-lines", "1_000"]):
        done = cli(*args, stdin=b"")
        assert done.returncode == 2 and "expected a " in one_error_line(done), (args, done.stderr)
    # What both forms took they still take: leading zeros within 18 digits, the largest offset.
    for text in ("0" * 17 + "5", "005", "9" * 18):
        flag, queried = cli("read", uri, "--offset", text), cli("read", f"{uri}?offset={text}")
        assert flag.returncode == queried.returncode == 0 and flag.stdout == queried.stdout, text
    flag, queried = cli("read", uri, "--limit", "0007"), cli("read", f"{uri}?limit=0007")
    assert flag.returncode == queried.returncode == 0 and flag.stdout == queried.stdout
    assert flag.stdout.startswith(b"1\n2\n3\n4\n")
    assert cli("truncate", "--max-lines", "0002", stdin=b"a\nb\n").stdout == b"a\nb\n"


@pytest.mark.parametrize("output", [b"a\n\n", b"a\n\n\n", b"\n", b"\n\n", b"a\n", b"a", b""])
def test_run_prints_an_output_within_the_limits_with_its_last_newline(cli, output):
    """Red team R9 f01: ``overspill run -- printf 'a\\n\\n'`` printed ``a\\n`` and ``printf '\\n'``
    printed "(no output)": the bash tool's text leaves the output's final newline out for the model's
    status line, and the CLI printed that text, adding a newline only when none ended it. The
    terminal now gets the output as written (``overspill truncate`` of the same bytes prints them so),
    and the status line, when there is one, on a line after it; an output of nothing is "(no output)"."""
    printf = output.decode().replace("\n", "\\n")
    for spill in ([], ["--no-spill"]):
        ran = cli("run", *spill, "--", f"printf '{printf}'")
        assert ran.returncode == 0 and ran.stdout == (output if output.endswith(b"\n") else
                                                      output + b"\n" if output else b"(no output)\n"), spill
        # With a status line the output is printed whole too, the status on its own line after it.
        failed = cli("run", *spill, "--", f"printf '{printf}'; exit 2")
        whole = output if not output or output.endswith(b"\n") else output + b"\n"
        assert failed.returncode == 2 and failed.stdout == whole + b"[exit code 2]\n", spill
    assert cli("truncate", "-", stdin=output).stdout == (output if output.endswith(b"\n") else output + b"\n")
    # The model's text is unchanged: the status line right after the output, its final newline left out.
    stripped = (output[:-1] if output.endswith(b"\n") else output).decode()
    model = json.loads(cli("run", "--json", "--", f"printf '{printf}'; exit 2").stdout)["output"]
    assert model == "\n".join(part for part in (stripped, "[exit code 2]") if part)



@pytest.mark.parametrize("supervisor_stopped", ["never", "until_the_trap_ran", "until_kill_returned"])
def test_kill_of_a_supervised_command_sends_its_group_one_sigterm(cli, tmp_path, subprocess_env, supervisor_stopped):
    """Red team E10 f01: ``overspill kill`` of a ``run --background`` command SIGTERMed its group
    and its supervisor, whose handler SIGTERMed the group again: a TERM trap ran twice (once from
    the owning process's kill).  The group now gets one SIGTERM whoever owns it; the supervisor is
    told only to stop waiting for the group.  Stopping the supervisor until the trap ran once makes
    its late signal certain (two signals close together may merge into one); a supervisor stopped
    for the whole kill cannot act at all, and its command still ends: kill's SIGKILL after the grace."""
    terms = tmp_path / "terms"
    command = f"trap 'echo got-term >> {terms}' TERM; echo up; while :; do sleep 0.2; done"
    started = cli("run", "--background", "--yield-after", "0", "--json", "--", command)
    answer = json.loads(started.stdout)
    uri, pid = answer["metadata"]["uri"], answer["metadata"]["pid"]
    assert wait_until(lambda: json.loads(cli("read", uri, "--json").stdout)["content"] == "up\n")
    supervisor = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])  # the command's parent
    if supervisor_stopped != "never":
        os.kill(supervisor, signal.SIGSTOP)
    try:
        killing = subprocess.Popen([str(SCRIPT), "kill", uri, "--json"], stdout=subprocess.PIPE,
                                   env=subprocess_env)  # (the fixture's, with the data folder)
        if supervisor_stopped == "until_the_trap_ran":
            assert wait_until(lambda: terms.exists() and terms.read_text() == "got-term\n")
            os.kill(supervisor, signal.SIGCONT)  # within kill's grace: the group is still there
        killed, _ = killing.communicate(timeout=60)
        assert killing.returncode == 0
        assert group_ends(pid)
    finally:
        os.kill(supervisor, signal.SIGCONT)
    assert wait_until(lambda: {job["uri"]: job["state"] for job in json.loads(cli("jobs", "--json").stdout)["jobs"]}
                      [uri] == "exited")
    assert terms.read_text() == "got-term\n"


# ------------------------------------------------------------------ shared options before the command
# `overspill --data-dir D run -- ...`, as `git -C DIR log` is written: the options
# every command shares mean the same before the command; after it, they win.
SHARED_OPTIONS = [("--session", "alice"), ("--data-dir", "/tmp/somewhere"), ("--store-url", "/tmp/elsewhere"),
                  ("--json", None)]
COMMAND_WORDS = {"run": ["--", "true"], "wait": ["tool-output://x"], "kill": ["tool-output://x"], "jobs": [],
                 "read": ["tool-output://x"], "grep": ["tool-output://x", "p"], "truncate": ["-"], "ls": [],
                 "cleanup": [], "stats": [], "mcp": []}


@pytest.mark.parametrize(("command", "option", "value"), [
    (command, option, value) for command in sorted(COMMAND_WORDS) for option, value in SHARED_OPTIONS
    if (command, option) != ("mcp", "--json")])  # mcp takes no --json: refused below
def test_a_shared_option_before_the_command_parses_as_it_does_after(command, option, value):
    given = [option] if value is None else [option, value]
    rest = COMMAND_WORDS[command]
    after = vars(cli_module._parser(command).parse_args([command, *given, *rest]))
    for parser in (cli_module._parser(), cli_module._parser(command)):
        assert vars(parser.parse_args([*given, command, *rest])) == after


@pytest.mark.parametrize("command", sorted(COMMAND_WORDS))
def test_a_shared_option_given_before_and_after_the_command_takes_the_one_after(command):
    rest = COMMAND_WORDS[command]
    both = cli_module._parser(command).parse_args(["--session", "bob", "--data-dir", "/tmp/a", command,
                                                   "--session", "alice", *rest])
    assert (both.session, both.data_dir, both.store_url) == ("alice", "/tmp/a", None)


def test_shared_options_before_the_command_reach_run_read_ls_stats_and_jobs(cli, tmp_path):
    folder = tmp_path / "before"
    shared = ["--data-dir", str(folder), "--session", "alice", "--json"]
    ran = cli(*shared, "run", "--", "seq 1 100000")
    assert ran.returncode == 0 and ran.stderr == b"", ran.stderr
    uri = json.loads(ran.stdout)["resource"]["uri"]
    assert folder.is_dir() and not (tmp_path / "data").exists()  # --data-dir was not ignored
    page = cli("--store-url", str(folder), "--session", "alice", "--json", "read", uri, "--limit", "6")
    assert page.returncode == 0 and json.loads(page.stdout)["content"] == "1\n2\n3\n"
    listed = cli(*shared, "ls")
    assert [r["uri"] for r in json.loads(listed.stdout)["resources"]] == [uri]
    stats = cli(*shared, "stats")
    assert list(json.loads(stats.stdout)["sessions"]) == ["alice"]
    assert json.loads(cli(*shared, "jobs").stdout) == {"jobs": []}
    # The same session before, the default one after: the stored output is another session's.
    foreign = cli("--data-dir", str(folder), "read", uri)
    assert foreign.returncode == 3 and b"another session" in foreign.stderr


def test_a_shared_option_given_before_and_after_the_command_takes_the_one_after_end_to_end(cli, tmp_path):
    folder = tmp_path / "both"
    ran = cli("--data-dir", str(folder), "run", "--session", "alice", "--", "seq 1 100000")
    uri = uri_in(ran.stdout)
    assert cli("--session", "bob", "--data-dir", str(folder), "read", uri, "--session", "alice").returncode == 0
    refused = cli("--session", "alice", "--data-dir", str(folder), "read", uri, "--session", "bob")
    assert refused.returncode == 3 and b"another session" in refused.stderr
    assert cli("--data-dir", str(tmp_path / "nowhere"), "read", uri, "--data-dir", str(folder),
               "--session", "alice").returncode == 0


def test_the_environments_defaults_still_apply_with_options_before_the_command(cli, tmp_path):
    folder = tmp_path / "env"
    ran = cli("--session", "alice", "run", "--", "seq 1 100000", env={"OVERSPILL_DATA_DIR": str(folder)})
    uri = uri_in(ran.stdout)
    assert folder.is_dir()
    # OVERSPILL_SESSION with --data-dir before; OVERSPILL_DATA_DIR with --session before.
    assert cli("--data-dir", str(folder), "read", uri, env={"OVERSPILL_SESSION": "alice"}).returncode == 0
    assert cli("--json", "read", uri, env={"OVERSPILL_SESSION": "alice", "OVERSPILL_DATA_DIR": str(folder)}
               ).returncode == 0
    assert cli("--json", "read", uri, env={"OVERSPILL_DATA_DIR": str(folder)}).returncode == 3


def test_an_option_before_a_command_that_does_not_take_it_is_one_usage_line_naming_both(cli):
    refused = cli("--json", "mcp")
    assert refused.returncode == 2
    line = one_error_line(refused)
    assert "--json" in line and "mcp" in line and "invalid choice" not in line
    # An option of one command only, written before it: named, with where it goes.
    misplaced = cli("--max-lines", "5", "run", "--", "true")
    assert misplaced.returncode == 2
    line = one_error_line(misplaced)
    assert "--max-lines" in line and "run" in line and "invalid choice" not in line


def test_the_shared_options_before_the_command_are_in_the_top_level_help(cli):
    shown = cli("--help")
    assert shown.returncode == 0
    text = shown.stdout.decode()
    for option, _ in SHARED_OPTIONS:
        assert option in text.split("positional arguments")[0] or f"{option} " in text
    assert "after the command wins" in " ".join(text.split())


def test_run_no_spill_shows_no_cut_redraw_of_a_line_the_capture_head_ends_inside(cli):
    """Regression (red team L15): ``overspill run --no-spill -- "seq 1 1000000 | tr '\\n' '\\r'"``
    (one line of redraws, 6.9 MB, whose final state is '1000000') printed the head '89', a piece of
    the state being written where the capture's 512 KiB head ends, then the marker and the tail
    '1000000', as if two lines.  ``run`` (stored) shows the final state only; ``--no-spill`` shows
    nothing of the line before the marker (its end was not kept) and its final state after it."""
    command = "seq 1 1000000 | tr '\\n' '\\r'"
    raw = subprocess.run(["sh", "-c", command], capture_output=True, check=True).stdout
    stored = cli("run", "--", command)
    assert stored.returncode == 0 and stored.stdout.startswith(b"1000000\n\n... output stored ("), stored.stdout[:200]
    held = cli("run", "--no-spill", "--", command)
    assert held.returncode == 0 and b"tool-output://" not in held.stdout
    omitted = raw.rindex(b"1000000")  # all of the line but its final state
    assert held.stdout == (f"... {omitted} of the output's {len(raw)} bytes (as written) omitted here; spilling was "
                           f"off, so the output was not stored ...\n\n1000000\n").encode(), held.stdout[:200]


def test_wait_on_a_capped_background_output_shows_no_cut_redraw_of_the_line_its_copy_ends_inside(cli):
    """Regression (review R25 item 1): a background ``seq 1 1000000 | tr '\\n' '\\r'`` (one line of
    redraws, 6.9 MB) capped at 100,000 bytes, then ``overspill wait --offset 0`` after it exited,
    showed the head '1851' (the redraw the stored copy ends inside, cut short) and "all of it shown
    here": the supervisor that held the true end is gone, and that preview's head took the copy's
    end for the line's end.  The head shows nothing of the line; the marker says the copy holds
    only the output's first bytes."""
    limits = {"OVERSPILL_MAX_STORED_BYTES": "100000"}
    started = cli("run", "--background", "--yield-after", "0", "--", "sleep 1; seq 1 1000000 | tr '\\n' '\\r'",
                  env=limits)
    assert started.returncode == 0, started.stderr
    uri = uri_in(started.stdout)
    ended = cli("wait", uri, "--timeout", "60", env=limits)
    assert ended.returncode == 0, ended.stdout[-300:]
    waited = cli("wait", uri, "--offset", "0", "--timeout", "5", env=limits)
    assert waited.stdout.startswith(b"... output truncated: the stored copy holds only the first 100000 of 6888896 "), \
        waited.stdout[:300]
    assert b"1851" not in waited.stdout, waited.stdout[:300]


# ------------------------------------------------------------------ review R24 of the shared options
# An option before the command is said to go after it only when the command argparse
# sees takes it; else it is unrecognized (only the shared options may come first).
UNRECOGNIZED = "overspill: error: unrecognized option {} (only --session, --data-dir, --store-url and --json may " \
               "come before the command)"


@pytest.mark.parametrize("words, option", [
    (["--jsn", "ls"], "--jsn"),  # no command takes it
    (["--max-lines", "5", "ls"], "--max-lines"),  # ls takes no --max-lines
    (["--name", "ls", "truncate", "-"], "--name"),  # `ls` is the command argparse sees, not `truncate`
    (["--pattern", "read", "wait", "tool-output://x"], "--pattern"),
    (["--session", "a", "--dry-run", "5", "cleanup"], "--dry-run"),  # a switch takes no value
])
def test_an_option_before_a_command_that_does_not_take_it_is_unrecognized_not_sent_after(cli, words, option):
    refused = cli(*words)
    assert refused.returncode == 2 and one_error_line(refused) == UNRECOGNIZED.format(option)


@pytest.mark.parametrize("words, advice", [
    (["--max-lines", "5", "run", "--", "true"], "overspill run --max-lines ..."),
    (["--all-sessions", "ls"], "overspill ls --all-sessions ..."),
    (["--json", "--limit=5", "read", "tool-output://x"], "overspill read --limit ..."),
    (["--pattern", "x", "wait", "tool-output://x"], "overspill wait --pattern ..."),
])
def test_an_option_before_the_command_that_takes_it_is_said_to_go_after_it(cli, words, advice):
    refused = cli(*words)
    assert refused.returncode == 2 and f"goes after the command: {advice}" in one_error_line(refused)


def test_the_store_location_given_after_the_command_replaces_the_one_given_before(cli, tmp_path):
    # --data-dir and --store-url are two spellings of one setting: after the command, either
    # replaces what either gave before it (a wrapper's or an alias's location).
    for before, after in (("--store-url", "--data-dir"), ("--data-dir", "--store-url"),
                          ("--data-dir", "--data-dir")):
        parsed = cli_module._parser("ls").parse_args([before, "/tmp/a", "ls", after, "/tmp/b"])
        given = {"--data-dir": "data_dir", "--store-url": "store_url"}
        assert (parsed.data_dir, parsed.store_url) == tuple(
            "/tmp/b" if given[after] == dest else None for dest in ("data_dir", "store_url"))
    folder = tmp_path / "after"
    ran = cli("--store-url", str(tmp_path / "before"), "run", "--data-dir", str(folder), "--", "seq 1 100000")
    assert ran.returncode == 0 and ran.stderr == b"", ran.stderr
    assert folder.is_dir() and not (tmp_path / "before").exists()
    # Kept when the command gives no location; both given on one side is still refused.
    assert cli_module._parser("ls").parse_args(["--store-url", "/tmp/a", "ls", "--session", "s"]).store_url == "/tmp/a"
    both = cli("--data-dir", str(folder), "--store-url", str(folder), "ls")
    assert both.returncode == 2 and "not both" in one_error_line(both)


def test_every_shared_option_has_a_help_line_and_a_default():
    from overspill.cli import _common, _parsing

    for flag, dest, default, switch in _common._SHARED:
        assert _parsing._SHARED_HELP[flag], flag
        assert _common._COMMON_DEFAULTS[dest] is default
        assert vars(cli_module._parser("ls").parse_args(["ls"]))[dest] is default
    assert set(_parsing._SHARED_HELP) == {flag for flag, *_ in _common._SHARED}


def test_the_top_level_session_help_says_mcp_starts_a_fresh_session(cli):
    text = " ".join(cli("--help").stdout.decode().split())
    assert "mcp: a fresh one per server" in text and "$OVERSPILL_SESSION ignored" in text
