"""Real ``redis-server`` processes for the tests: one server, or a 3-node Cluster.

Each server runs from the Debian (or any) ``redis-server`` binary on a free
loopback port, in its own temporary folder, without persistence
(``--save '' --appendonly no``), as a child process stopped by its pid.
Nothing here uses the ``redis`` client: the servers are started and checked
with plain RESP over a socket and ``redis-cli``, so the fixtures can say
precisely which half is missing when the tests have to skip.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

__all__ = ["RedisServer", "missing_reason", "start_cluster", "start_server"]

_READY_SECONDS = 20.0


def missing_reason() -> Optional[str]:
    """Why the Redis tests cannot run here, or None when they can."""
    if shutil.which("redis-server") is None:
        return "no redis-server binary on PATH (Debian: apt-get install redis-server)"
    if shutil.which("redis-cli") is None:
        return "no redis-cli binary on PATH (Debian: apt-get install redis-tools)"
    if importlib.util.find_spec("redis") is None:
        return "the redis client is not installed (pip install 'overspill[redis]')"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _command(port: int, *words: str, timeout: float = 5.0) -> bytes:
    """Send one inline command and return its reply: a status line, or a bulk string's bytes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as connection:
        connection.sendall((" ".join(words) + "\r\n").encode("ascii"))
        reply = b""
        while b"\r\n" not in reply:
            piece = connection.recv(65536)
            if not piece:
                return reply
            reply += piece
        first, _, rest = reply.partition(b"\r\n")
        if not first.startswith(b"$") or first == b"$-1":
            return first
        length = int(first[1:])
        while len(rest) < length:
            piece = connection.recv(65536)
            if not piece:
                break
            rest += piece
        return rest[:length]


@dataclass
class RedisServer:
    """One running ``redis-server`` child process."""

    port: int
    directory: Path
    process: subprocess.Popen = field(repr=False)
    host: str = "127.0.0.1"

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"redis://{self.address}/0"

    def log(self) -> str:
        try:
            return (self.directory / "redis.log").read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def info(self, section: str) -> str:
        return _command(self.port, "INFO", section).decode("utf-8", "replace")

    def stop(self) -> None:
        """Stop this server by its pid: SIGTERM, then SIGKILL if it lingers."""
        if self.process.poll() is None:
            try:
                os.kill(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait()
            except ProcessLookupError:
                pass
        shutil.rmtree(self.directory, ignore_errors=True)


def _wait_ready(server: RedisServer) -> None:
    deadline = time.monotonic() + _READY_SECONDS
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"redis-server on {server.address} exited ({server.process.returncode}):\n{server.log()}")
        try:
            # A server with --requirepass answers NOAUTH: it is up all the same.
            if _command(server.port, "PING").startswith((b"+PONG", b"-NOAUTH")):
                return
        except OSError:
            pass
        time.sleep(0.02)
    server.stop()
    raise RuntimeError(f"redis-server on {server.address} did not answer PING in {_READY_SECONDS} s:\n{server.log()}")


def start_server(*options: str, parent: Optional[Path] = None, attempts: int = 5) -> RedisServer:
    """Start a ``redis-server`` on a free 127.0.0.1 port in a fresh temporary folder.

    :param options: extra command-line options, e.g. ``"--cluster-enabled", "yes"``.
    :raises RuntimeError: it would not start (the message holds its log).
    """
    last_error: Optional[Exception] = None
    for _ in range(attempts):
        directory = Path(tempfile.mkdtemp(prefix="overspill-redis-", dir=parent))
        port = _free_port()
        extra = list(options)
        if "--cluster-enabled" in extra:
            # The bus port would be port + 10000 by default, possibly taken or past 65535.
            extra += ["--cluster-port", str(_free_port()), "--cluster-config-file", str(directory / "nodes.conf")]
        process = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(directory), "--logfile", str(directory / "redis.log"), "--daemonize", "no", *extra],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        server = RedisServer(port, directory, process)
        try:
            _wait_ready(server)
            return server
        except RuntimeError as error:  # most likely the port was taken between probe and bind
            last_error = error
            server.stop()
    raise RuntimeError(f"could not start redis-server: {last_error}")


def start_cluster(nodes: int = 3, parent: Optional[Path] = None, options: tuple[str, ...] = ()) -> list[RedisServer]:
    """A Redis Cluster of ``nodes`` masters without replicas, once ``cluster_state:ok``.

    :param options: more command-line options for every node.
    :raises RuntimeError: it did not form (the message holds redis-cli's output).
    """
    servers: list[RedisServer] = []
    try:
        for _ in range(nodes):
            servers.append(start_server("--cluster-enabled", "yes", "--cluster-node-timeout", "5000", *options,
                                        parent=parent))
        created = subprocess.run(
            ["redis-cli", "--cluster", "create", *(server.address for server in servers),
             "--cluster-replicas", "0", "--cluster-yes"],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
        )
        if created.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create failed:\n{created.stdout}\n{created.stderr}")
        deadline = time.monotonic() + 30
        while True:
            states = [_command(server.port, "CLUSTER", "INFO") for server in servers]
            if all(b"cluster_state:ok" in state for state in states):
                return servers
            if time.monotonic() > deadline:
                raise RuntimeError(f"the cluster did not reach cluster_state:ok: {states!r}")
            time.sleep(0.05)
    except BaseException:
        for server in servers:
            server.stop()
        raise
