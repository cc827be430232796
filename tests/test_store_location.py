"""Choosing a backend: ``data_dir``, ``url``, ``$OVERSPILL_STORE_URL``, the CLI's
``--store-url``; the optional client stays optional; the extras are advertised."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from importlib import metadata
from pathlib import Path

import pytest

from overspill import ConfigError, StorageError, ToolOutputStore
from overspill.backends._location import locate, redacted_url

SCRIPT = Path(sys.executable).with_name("overspill")


def test_a_path_or_file_url_is_the_local_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("OVERSPILL_STORE_URL", raising=False)
    for given in (str(tmp_path), f"file://{tmp_path}", f"file://localhost{tmp_path}"):
        with ToolOutputStore(url=given) as store:
            assert store.directory == tmp_path / "tool-output" / "managed" and store.url is None
    assert locate(tmp_path, None).folder == tmp_path


def test_a_relative_data_dir_is_resolved_once_at_construction(tmp_path, monkeypatch):
    """Red team f08: a store opened on a relative data_dir followed every later ``os.chdir``:
    the resource it had just written was "not found", and writes and sweeps went to a folder
    whose checks had never run. The folder is the one named at construction."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    store = ToolOutputStore("data", durable=False)
    resource = store.write("s", "c", b"x" * 100)
    monkeypatch.chdir(tmp_path / "b")
    assert store.directory == tmp_path / "a" / "data" / "tool-output" / "managed"
    assert store.read("s", resource.uri).content == "x" * 100
    assert [record.resource for record in store.records("s")] == [resource]
    store.write("s", "c2", b"y")
    assert store.cleanup(now=time.time() + 30 * 86400).removed == 2
    assert not (tmp_path / "b" / "data").exists()


@pytest.mark.parametrize("url", ["", "ftp://host/x", "file://elsewhere/tmp/x", "file:relative", "memcached://h:1"])
def test_unsupported_urls_are_config_errors(url):
    with pytest.raises(ConfigError):
        ToolOutputStore(url=url)


@pytest.mark.parametrize(("kwargs", "error", "named"), [
    ({"data_dir": "a\x00b"}, ValueError, "data_dir holds a NUL character"),
    ({"data_dir": "\ud800"}, ValueError, "data_dir holds a lone surrogate"),
    ({"url": "file:///tmp/a%00b"}, ConfigError, "url's path holds a NUL character"),
    ({"url": "/tmp/a\x00b"}, ConfigError, "url holds a NUL character"),
    ({"url": "/tmp/\ud800"}, ConfigError, "url holds a lone surrogate")])
def test_a_folder_the_os_cannot_name_is_refused_naming_where_it_came_from(tmp_path, monkeypatch, kwargs, error,
                                                                          named):
    """Red team f06: a NUL in data_dir or a file:// URL gave a bare ValueError("embedded null byte"),
    a lone surrogate a raw UnicodeEncodeError; other bad locations are worded errors naming them."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(error, match=named) as raised:
        ToolOutputStore(**kwargs)
    assert not isinstance(raised.value, UnicodeError)
    if "url" in kwargs and kwargs["url"].isascii() and "\x00" not in kwargs["url"]:  # what a variable can hold
        monkeypatch.setenv("OVERSPILL_STORE_URL", kwargs["url"])
        with pytest.raises(ConfigError, match="OVERSPILL_STORE_URL"):
            ToolOutputStore()


@pytest.mark.parametrize(("url", "part"), [
    ("redis://h\x00/0", "host holds a NUL character"),
    ("redis://h%00st/0", "host holds a NUL character"),
    ("redis+cluster://h\x00:1", "host holds a NUL character"),
    ("redis://u\x00:p@127.0.0.1:1/0", "user name holds a NUL character"),
    ("redis://:p\x00w@127.0.0.1:1/0", "password holds a NUL character"),
    ("redis://:p\ud800@127.0.0.1:1/0", "password holds a lone surrogate"),
    ("unix:///tmp/a\x00b", "socket path holds a NUL character"),
    ("redis+unix:///tmp/a%00b", "socket path holds a NUL character"),
    ("rediss://127.0.0.1:1/0?ssl_ca_certs=/tmp/a%00", "option ssl_ca_certs holds a NUL character"),
    ("rediss://127.0.0.1:1/0?ssl_certfile=/tmp/\ud800", "option ssl_certfile holds a lone surrogate"),
    # Review R13: a surrogate escape (what an argument's undecodable byte becomes) is a file name's byte,
    # but a host name or a credential goes out as UTF-8, which cannot hold it.
    ("redis://u\udc80:p@127.0.0.1:1/0", "user name holds a lone surrogate"),
    ("redis://:p\udc80@127.0.0.1:1/0", "password holds a lone surrogate"),
    ("redis://h\udc80st/0", "host holds a lone surrogate")])
def test_a_redis_url_part_the_os_cannot_take_is_refused_before_connecting(monkeypatch, url, part):
    """Red team C13: README's Errors section refuses a NUL or a lone surrogate "in a store URL" with a
    ConfigError before anything opens, but a Redis URL's host, credentials, socket path or certificate
    option holding one was taken, and failed only when connecting (a StorageError, the CLI's exit 4, the
    NUL printed back).  Each part is now checked with the rest of the URL: a ConfigError naming the part,
    never the character (it may be a password's) nor the URL."""
    with pytest.raises(ConfigError, match=f"url: the Redis URL's {part}") as raised:
        ToolOutputStore(url=url)
    assert "\x00" not in str(raised.value) and "\ud800" not in str(raised.value)
    if url.isascii() and "\x00" not in url:  # what a variable can hold
        monkeypatch.setenv("OVERSPILL_STORE_URL", url)
        with pytest.raises(ConfigError, match=f"OVERSPILL_STORE_URL \\(environment\\): the Redis URL's {part}"):
            ToolOutputStore()


def test_cli_refuses_a_redis_url_part_the_os_cannot_take_as_bad_input(cli):
    """Red team C13: the command line's answer to such a URL is bad input (exit 2), not a storage failure.
    Review R13: a user name's undecodable byte too; and a NUL is never printed back, even by the error
    of another part that names the URL."""
    refused = cli("ls", "--store-url", "redis://:p%00w@127.0.0.1:1/0")
    assert refused.returncode == 2, refused.stderr
    assert b"password holds a NUL character" in refused.stderr and refused.stderr.count(b"\n") == 1
    undecodable = cli("ls", "--store-url", os.fsdecode(b"redis://u\x80:p@127.0.0.1:1/0"))
    assert undecodable.returncode == 2 and b"user name holds a lone surrogate" in undecodable.stderr
    for url in ("redis://u\x01@127.0.0.1:0/0", "redis://u\x01@127.0.0.1:1/x"):
        other = cli("ls", "--store-url", url)
        assert other.returncode == 2 and b"\x01" not in other.stderr and b"u\\x01@" in other.stderr, other.stderr



def test_the_printable_rule_has_one_home_that_the_redis_url_errors_use_too(cli):
    """Review R17 (1): the rule that shows another party's non-printable characters escaped had two
    homes, ``_frontend.printable`` (the CLI's names, webfetch's error lines) and a copy in
    ``backends/_redis_url`` (a backend may not import a front end's module), which wrote a tab or a
    newline as ``\\t``/``\\n`` where the other wrote ``\\x09``/``\\x0a``.  The rule now lives
    below both (``overspill._printable``) and every one of them uses it."""
    import re

    import overspill
    from overspill import _frontend
    from overspill._printable import printable

    assert _frontend.printable is printable
    shown = printable("a\tb\nc\rd\x00e\x1b[2J\x7f\x9b31m\u202e\U000e0001 \u00e9\\")
    assert shown == "a\\x09b\\x0ac\\x0dd\\x00e\\x1b[2J\\x7f\\x9b31m\\u202e\\U000e0001 \u00e9\\"
    package = Path(overspill.__file__).parent
    homes = sorted(str(path.relative_to(package)) for path in package.rglob("*.py")
                   if re.search(r"^def _?printable\(", path.read_text(), re.MULTILINE))
    assert homes == ["_printable.py"], homes
    # A Redis URL's error shows it by that rule, in the store's exception and on the command line.
    url = "redis://u\x1bc\x07\u202e\x7f\x9b1m@127.0.0.1:1/x"  # (no "[": urlsplit would find it malformed)
    with pytest.raises(ConfigError) as raised:
        ToolOutputStore(url=url)
    assert "u\\x1bc\\x07\\u202e\\x7f\\x9b1m@" in str(raised.value) and str(raised.value).isprintable()
    refused = cli("ls", "--store-url", url)
    assert refused.returncode == 2, refused.stderr
    assert b"u\\x1bc\\x07\\u202e\\x7f\\x9b1m@127.0.0.1:1/x" in refused.stderr, refused.stderr


def test_bad_argument_types_and_both_locations(tmp_path):
    with pytest.raises(TypeError):
        ToolOutputStore(url=b"redis://127.0.0.1:6379")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ToolOutputStore(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not both"):
        ToolOutputStore(tmp_path, url="redis://127.0.0.1:6379/0")
    with pytest.raises(ValueError, match="data_dir must not be empty"):
        ToolOutputStore("")  # an unset variable's expansion, not the working folder


def test_the_environment_url_applies_only_without_arguments(tmp_path, monkeypatch, redis_server):
    monkeypatch.setenv("OVERSPILL_STORE_URL", redis_server.url)
    with ToolOutputStore() as store:
        assert store.url == redis_server.url and store.directory is None
        resource = store.write("env", "call", "through the environment")
    with ToolOutputStore(tmp_path) as local:  # an explicit folder wins over the environment
        assert local.url is None and local.records() == []
    with ToolOutputStore(url=redis_server.url) as again:
        assert again.read("env", resource.uri).content == "through the environment"
        again.cleanup(now=10**11)
    monkeypatch.setenv("OVERSPILL_STORE_URL", "gopher://nowhere")
    with pytest.raises(ConfigError, match="OVERSPILL_STORE_URL"):
        ToolOutputStore()


def test_redacted_urls_hide_the_password_and_the_query():
    assert redacted_url("redis://:pw@h:1/0") == "redis://:***@h:1/0"
    assert redacted_url("rediss://user:pw@h/2?password=pw&ssl_cert_reqs=none") == "rediss://user:***@h/2"
    assert redacted_url("redis+cluster://h:7000") == "redis+cluster://h:7000"
    assert redacted_url("redis://u@[::1]:6379") == "redis://u@[::1]:6379"
    assert "pw" not in redacted_url("redis://:pw@h:999999/0")


def test_an_unreachable_server_is_a_storage_error_naming_it():
    with pytest.raises(StorageError, match=r"redis://127\.0\.0\.1:1/0"):
        ToolOutputStore(url="redis://127.0.0.1:1/0")


def test_import_overspill_never_imports_the_redis_client(tmp_path, subprocess_env):
    code = textwrap.dedent(f"""
        import sys
        import overspill, overspill.cli, overspill.tools, overspill.backends
        with overspill.ToolOutputStore({str(tmp_path)!r}) as store:
            store.truncate("s", "c", "x\\n" * 10000)
        print(sorted(name for name in sys.modules if name == "redis" or name.startswith("redis.")))
    """)
    child = subprocess.run([sys.executable, "-c", code], env=subprocess_env, capture_output=True, text=True,
                           timeout=60)
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "[]"


def test_without_the_client_a_redis_url_says_what_to_install(subprocess_env):
    code = textwrap.dedent("""
        import sys
        sys.modules["redis"] = None  # as if it were not installed
        from overspill import ConfigError, ToolOutputStore
        try:
            ToolOutputStore(url="redis://:pw@127.0.0.1:6379/0")
        except ConfigError as error:
            print(error)
    """)
    child = subprocess.run([sys.executable, "-c", code], env=subprocess_env, capture_output=True, text=True,
                           timeout=60)
    assert child.returncode == 0, child.stderr
    assert "pip install 'overspill[redis]'" in child.stdout and "pw" not in child.stdout


def test_the_extras_are_advertised():
    info = metadata.metadata("overspill")
    extras = set(info.get_all("Provides-Extra") or [])
    assert {"redis", "mcp", "test"} <= extras
    requirements = info.get_all("Requires-Dist") or []
    redis_requirements = [r for r in requirements if r.startswith("redis") and 'extra == "redis"' in r]
    assert redis_requirements and ">=5" in redis_requirements[0]
    # The core itself needs nothing beyond the standard library.
    assert all("extra ==" in r for r in requirements), requirements


# ------------------------------------------------------------------ the command line
@pytest.fixture
def cli(tmp_path, subprocess_env):
    assert SCRIPT.exists(), f"the console script is not installed beside {sys.executable}"
    subprocess_env.pop("OVERSPILL_STORE_URL", None)
    subprocess_env["OVERSPILL_DATA_DIR"] = str(tmp_path / "data")

    def invoke(*args: str, stdin: bytes | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([str(SCRIPT), *args], input=stdin, capture_output=True, timeout=120,
                              env={**subprocess_env, **(env or {})})

    return invoke


def test_cli_store_url_on_every_subcommand(cli, redis_server):
    for command in ("run", "read", "truncate", "ls", "cleanup", "stats"):
        shown = cli(command, "--help")
        assert b"--store-url" in shown.stdout, command
    url = redis_server.url
    text = "".join(f"row {i}\n" for i in range(5000)).encode()
    truncated = cli("truncate", "--store-url", url, "--session", "cli-redis", "--json", stdin=text)
    assert truncated.returncode == 0, truncated.stderr
    uri = json.loads(truncated.stdout)["resource"]["uri"]
    whole = cli("read", uri, "--all", "--session", "cli-redis", env={"OVERSPILL_STORE_URL": url})
    assert whole.returncode == 0 and whole.stdout == text
    listed = cli("ls", "--store-url", url, "--session", "cli-redis", "--json")
    assert uri in listed.stdout.decode()
    local = cli("ls", "--session", "cli-redis", "--json")  # the data folder holds nothing of it
    assert uri not in local.stdout.decode()
    assert cli("cleanup", "--store-url", url).returncode == 0


def test_cli_store_url_errors(cli, tmp_path):
    both = cli("ls", "--data-dir", str(tmp_path), "--store-url", "redis://127.0.0.1:1/0")
    assert both.returncode == 2 and b"not both" in both.stderr
    down = cli("ls", "--store-url", "redis://:hunter2@127.0.0.1:1/0")
    assert down.returncode == 4, down.stderr
    assert b"127.0.0.1:1" in down.stderr and b"hunter2" not in down.stderr + down.stdout
    assert down.stderr.count(b"\n") == 1
    odd = cli("ls", "--store-url", "ftp://x")
    assert odd.returncode == 2 and odd.stderr.startswith(b"overspill: error:")


@pytest.mark.parametrize("url, part", [
    ("redis://127.0.0.1:1/0?foo=bar", "unknown option 'foo'"),
    ("redis:///tmp/redis.sock", "names no host"),
    ("redis://127.0.0.1:1/abc", "database in the path must be a number"),
    ("redis://127.0.0.1:1/0/1", "database in the path must be a number"),
    ("redis://127.0.0.1:1/%37", "database in the path must be a number"),
    ("redis://127.0.0.1:1/0?db=3", "names two databases: /0 and ?db=3"),
    ("redis://127.0.0.1:1?db=x", "database in ?db= must be a number"),
    ("redis://127.0.0.1:0/0", "the port must be 1 to 65535"),
    ("redis://127.0.0.1:/0", "the port is empty"),
    ("redis://127.0.0.1:1/0?ssl_cert_reqs=none", "ssl_cert_reqs needs TLS"),
    ("rediss://127.0.0.1:1/0?ssl_cert_reqs=maybe", "must be none, optional or required"),
    ("redis://127.0.0.1:1/0?socket_timeout=0", "socket_timeout='0' must be a number of seconds"),
    ("redis://127.0.0.1:1/0?db=1&db=1", "option db is given twice"),
    ("redis+cluster://127.0.0.1:1/2", "only database 0"),
    ("unix://somehost/tmp/redis.sock", "a socket URL has no host"),
    ("unix://", "socket path must be absolute"),
])
def test_a_wrong_part_of_a_redis_url_is_one_line_naming_it(url, part):
    """Regression (issue 19, items 7 and 21): ``?foo=bar`` surfaced redis-py's
    TypeError, ``redis:///path`` silently connected to localhost:6379, a
    non-numeric database (``/abc``, ``/0/1``, ``/%37``) and port 0 were
    accepted, ``?db=3`` beside ``/0`` was decided by the client's rule, and
    ``?ssl_cert_reqs=none`` on a plain URL was a raw TypeError.  Each is now
    refused before any connection, as one ConfigError naming the part."""
    with pytest.raises(ConfigError) as raised:
        ToolOutputStore(url=url)
    message = str(raised.value)
    assert part in message and "\n" not in message, message
    assert not isinstance(raised.value, TypeError)


def test_the_database_in_force_is_one_rule_and_the_url_says_it(redis_server):
    """Regression (issue 19, item 21): ``/N`` or ``?db=N`` (the same number when
    both are given) picks the database, and ``store.url`` shows it as the path."""
    host, port = redis_server.host, redis_server.port
    for url, shown in ((f"redis://{host}:{port}?db=3", f"redis://{host}:{port}/3"),
                       (f"redis://{host}:{port}/3?db=3", f"redis://{host}:{port}/3"),
                       (f"redis://{host}:{port}", f"redis://{host}:{port}/0"),
                       (f"redis://{host}:{port}/", f"redis://{host}:{port}/0")):
        with ToolOutputStore(url=url) as store:
            assert store.url == shown
    with ToolOutputStore(url=f"redis://{host}:{port}?db=3") as three:
        stored = three.write("db-rule", "c", "in database 3")
    with ToolOutputStore(url=f"redis://{host}:{port}/3") as same, \
            ToolOutputStore(url=f"redis://{host}:{port}/0") as other:
        assert same.read("db-rule", stored.uri).content == "in database 3"
        assert other.records("db-rule") == []
        same.cleanup(now=10**11)


@pytest.mark.parametrize("scheme", ["unix", "redis+unix"])
def test_a_unix_socket_url_reaches_the_server(tmp_path, scheme):
    """Regression (issue 19, item 7): ``unix://`` was refused; ``redis+unix://`` is the same."""
    from conftest import _redis_or_skip

    _redis_or_skip()
    from redis_servers import start_server

    socket_path = tmp_path / "redis.sock"
    server = start_server("--unixsocket", str(socket_path), "--unixsocketperm", "700", parent=tmp_path)
    try:
        url = f"{scheme}://{socket_path}?db=2"
        with ToolOutputStore(url=url) as store:
            assert store.url == url
            stored = store.write("sock", "c", "over a socket\n" * 10)
            assert store.read("sock", stored.uri).content == "over a socket\n" * 10
        with pytest.raises(StorageError, match="cannot connect"):
            ToolOutputStore(url=f"{scheme}://{tmp_path}/nothing-here.sock")
    finally:
        server.stop()


@pytest.mark.parametrize("count", ["1000000000000", "10001", "0"])
def test_max_connections_past_its_bound_is_a_config_error_naming_it(count):
    """Regression (red team W f01): ``?max_connections=1000000000000`` passed the URL check,
    then the store's constructor spun at 100 % CPU for ever (redis-py's blocking pool fills a
    queue with one slot per allowed connection). It is bounded (1 to 10,000) and refused
    before anything connects, naming the option."""
    from overspill.backends._redis_url import MAX_CONNECTIONS, parse_redis_url

    with pytest.raises(ConfigError, match=f"max_connections={count!r} must be an integer from 1 to 10000"):
        parse_redis_url(f"redis://127.0.0.1:1/0?max_connections={count}")
    assert MAX_CONNECTIONS == 10_000
    accepted = parse_redis_url(f"redis://127.0.0.1:1/0?max_connections={MAX_CONNECTIONS}")
    assert accepted.options["max_connections"] == MAX_CONNECTIONS


@pytest.mark.parametrize("below", ["", "sub", "sub/deeper"])
def test_a_data_dir_with_a_file_in_the_way_names_the_file(tmp_path, cli, below):
    """Regression (red team J15): a ``--data-dir`` that is a file said ``File exists`` (the
    managed folder seems to be there) or ``Not a directory``, depending on the depth and the
    command: one line naming the file that is not a folder, from the library and the CLI alike."""
    blocking = tmp_path / "afile"
    blocking.write_bytes(b"not a folder")
    data_dir = os.path.join(blocking, below) if below else str(blocking)
    managed = os.path.join(data_dir, "tool-output", "managed")
    expected = f"cannot create {managed}: {blocking} is not a folder"
    with pytest.raises(StorageError) as raised:
        ToolOutputStore(data_dir)
    assert raised.value.strerror == expected
    for command in ("ls", "stats", "cleanup"):
        finished = cli(command, "--data-dir", data_dir)
        assert finished.returncode == 4
        assert finished.stderr.decode().splitlines() == [f"overspill: error: [Errno 20] {expected}"]
    assert blocking.read_bytes() == b"not a folder"


def test_a_managed_folder_that_is_a_file_is_named(tmp_path):
    managed = tmp_path / "tool-output" / "managed"
    managed.parent.mkdir()
    managed.write_bytes(b"")
    with pytest.raises(StorageError) as raised:
        ToolOutputStore(tmp_path)
    assert raised.value.strerror == f"cannot create {managed}: {managed} is not a folder"
