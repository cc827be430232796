"""What starting a command promises, on both of _spawn's paths (real processes).

A shell command without a working folder starts through ``os.posix_spawn``;
everything else (and, here, every command when ``posix_spawn`` is taken away)
through ``subprocess.Popen``.  Both must give the command the same world: a
session of its own, SIGPIPE and SIGXFSZ at their defaults, none of this
process's inheritable descriptors, exactly the environment given, and the
stdin asked for; and give the caller the same exit codes and errors.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from overspill import _spawn, run
from overspill.capture import RunningCommand

from processes import zombies_of

# Bits of /proc's SigIgn mask (signal N is bit N-1).
_SIGPIPE_BIT = 1 << (13 - 1)
_SIGXFSZ_BIT = 1 << (25 - 1)


@pytest.fixture(params=["posix_spawn", "popen"])
def path(request, monkeypatch):
    """Which of _spawn's paths starts a shell command in this test."""
    if request.param == "popen":
        monkeypatch.setattr(_spawn, "_posix_spawn", None)
    return request.param


def started_by(command: object, cwd: object = None) -> _spawn.Child:
    """The Child that started ``command``, reaped."""
    child = _spawn.spawn(command, cwd=cwd, env=None, feed_stdin=False, inherit_stdin=False, merge_stderr=True)
    child.close_pipes()
    child.wait()
    return child


def test_a_shell_command_takes_posix_spawn_and_the_rest_popen(path, tmp_path):
    shell = started_by("exit 3")
    assert shell.returncode == 3
    assert (shell._popen is None) == (path == "posix_spawn")
    # A working folder or a list of arguments always goes through Popen.
    assert started_by("exit 4", cwd=str(tmp_path))._popen is not None
    assert started_by(["/bin/sh", "-c", "exit 5"])._popen is not None


def test_inheritable_descriptors_are_not_passed_on(path):
    source = os.open(os.devnull, os.O_RDONLY)
    fd = 100
    os.dup2(source, fd, inheritable=True)
    try:
        assert os.get_inheritable(fd)
        result = run(f"if [ -e /proc/self/fd/{fd} ]; then echo open; else echo closed; fi")
        assert result.stdout == b"closed\n"
        # The standard streams are what was asked for, nothing more.
        listed = run("ls /proc/$$/fd; true")  # the shell's own descriptors (ls runs beside it)
        assert sorted(int(name) for name in listed.stdout.split()) == [0, 1, 2]
    finally:
        os.close(fd)
        os.close(source)


def test_sigpipe_and_sigxfsz_are_at_their_defaults(path):
    with open("/proc/self/status") as status:
        ours = int(next(line for line in status if line.startswith("SigIgn:")).split()[1], 16)
    assert ours & _SIGPIPE_BIT and ours & _SIGXFSZ_BIT  # the interpreter ignores both: the child must not
    result = run("grep SigIgn /proc/self/status")
    ignored = int(result.stdout.split()[1], 16)
    assert not ignored & _SIGPIPE_BIT and not ignored & _SIGXFSZ_BIT
    # So a writer to a closed pipe just ends, as in a terminal.
    piped = run("yes | head -n 1", timeout=60)
    assert (piped.exit_code, piped.stdout, piped.stderr, piped.timed_out) == (0, b"y\n", b"", False)


def test_the_command_leads_its_own_session_and_group(path):
    running = RunningCommand("cat /proc/$$/stat", cwd=None, env=None, timeout=60, stdin=None,
                             max_output_bytes=4096, max_error_bytes=4096, keep="head")
    running.drain()
    fields = running.result().stdout.decode().rsplit(")", 1)[1].split()
    group, session = int(fields[2]), int(fields[3])
    assert group == session == running.pid and session != os.getsid(0)


def test_the_environment_is_exactly_the_one_given(path, monkeypatch):
    given = run("env", env={"ONLY": "this one", "EMPTY": ""})
    names = dict(line.split("=", 1) for line in given.stdout.decode().splitlines())
    names.pop("PWD", None)  # the shell sets it
    assert names == {"ONLY": "this one", "EMPTY": ""}
    monkeypatch.setenv("OVERSPILL_SPAWN_PROBE", "inherited")
    assert run("echo $OVERSPILL_SPAWN_PROBE").stdout == b"inherited\n"
    with pytest.raises(ValueError):
        run("true", env={"A=B": "x"})


def test_no_env_passes_on_this_process_environment_as_it_is_now(path, monkeypatch):
    monkeypatch.setenv("OVERSPILL_SPAWN_WIDE", "caf\u00e9 \u4e2d")
    monkeypatch.setenv("OVERSPILL_SPAWN_GONE", "set")
    monkeypatch.delenv("OVERSPILL_SPAWN_GONE")
    shown = run("env").stdout.decode()
    names = dict(line.split("=", 1) for line in shown.splitlines() if "=" in line)
    assert names["OVERSPILL_SPAWN_WIDE"] == "caf\u00e9 \u4e2d"
    assert "OVERSPILL_SPAWN_GONE" not in names
    expected = {name: value for name, value in os.environ.items() if "\n" not in value}
    names.pop("PWD", None), expected.pop("PWD", None), names.pop("SHLVL", None), expected.pop("SHLVL", None)
    names.pop("_", None), expected.pop("_", None)
    assert {name: names.get(name) for name in expected} == expected


def test_stdin_bytes_dev_null_or_inherited(path):
    assert run("cat", stdin=b"fed\x00bytes").stdout == b"fed\x00bytes"
    big = os.urandom(3 * 1024 * 1024)  # more than a pipe holds: fed while output is read
    assert run("cat", stdin=big).stdout_bytes == len(big)
    assert run("readlink /proc/self/fd/0").stdout == b"/dev/null\n"
    saved = os.dup(0)
    read_end, write_end = os.pipe()
    os.write(write_end, b"from the parent's stdin")
    os.close(write_end)
    os.dup2(read_end, 0)
    try:
        running = RunningCommand("cat", cwd=None, env=None, timeout=60, stdin=None, max_output_bytes=4096,
                                 max_error_bytes=4096, keep="head", inherit_stdin=True)
        running.drain()
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(read_end)
    assert running.result().stdout == b"from the parent's stdin"


def test_exit_codes_and_signals(path):
    assert run("exit 7").exit_code == 7
    assert run("kill -TERM $$").exit_code == -15
    assert run("kill -KILL $$").exit_code == -9
    assert zombies_of(os.getpid()) == []


def test_a_missing_program(path, tmp_path):
    through_shell = run("no-such-program-overspill")
    assert through_shell.exit_code == 127 and b"not found" in through_shell.stderr
    with pytest.raises(FileNotFoundError) as missing:
        run(["no-such-program-overspill"])
    assert missing.value.filename == "no-such-program-overspill"
    with pytest.raises(FileNotFoundError) as no_folder:
        run("true", cwd=str(tmp_path / "gone"))
    assert no_folder.value.filename == str(tmp_path / "gone")


def test_a_list_finds_its_program_in_the_given_path(path, tmp_path):
    program = tmp_path / "overspill-probe"
    program.write_text("#!/bin/sh\necho found \"$@\"\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    assert run(["overspill-probe", "it"], env={"PATH": str(tmp_path)}).stdout == b"found it\n"


def test_a_working_folder_takes_the_fallback_with_the_same_promises(path, tmp_path):
    result = run("pwd; grep SigIgn /proc/self/status; ls /proc/$$/fd; cat /proc/$$/stat", cwd=str(tmp_path))
    lines = result.stdout.decode().splitlines()
    assert lines[0] == str(tmp_path)
    assert not int(lines[1].split()[1], 16) & _SIGPIPE_BIT
    assert lines[2:5] == ["0", "1", "2"]
    fields = lines[5].rsplit(")", 1)[1].split()
    assert fields[2] == fields[3] != str(os.getsid(0))


def test_no_descriptor_or_child_is_left_behind(path):
    before = sorted(os.listdir("/proc/self/fd"))
    for command in ("echo hi", "exit 3", "sleep 5"):
        run(command, stdin=b"x", timeout=0.3)
    with pytest.raises(FileNotFoundError):
        run(["no-such-program-overspill"])
    assert sorted(os.listdir("/proc/self/fd")) == before
    assert zombies_of(os.getpid()) == []


def test_a_fresh_run_imports_none_of_subprocess(tmp_path):
    # The shell path really is subprocess-free (the point of _spawn), and a
    # working folder still runs (importing subprocess then).
    folder = str(tmp_path)
    code = ("import sys, overspill\n"
            "assert overspill.run('echo hi').stdout == b'hi\\n'\n"
            "assert 'subprocess' not in sys.modules and 'signal' not in sys.modules\n"
            f"assert overspill.run('pwd', cwd={folder!r}).stdout.decode() == {folder!r} + chr(10)\n"
            "assert 'subprocess' in sys.modules\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
