"""What importing overspill loads: heavy or optional modules only where they are used.

Each check runs in a fresh interpreter, so modules this test process already
imported cannot hide a regression.  (Timings are for benchmarks/, not here.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# Never loaded by ``import overspill``: the optional extras' clients, and the
# standard-library modules that cost more than the package itself.
NEVER_ON_IMPORT = ["asyncio", "concurrent.futures", "ssl", "http", "http.client", "html", "html.parser",
                   "urllib.request", "email", "json", "secrets", "hmac", "redis", "mcp"]
# Only running a command needs these.
CAPTURE_ONLY = ["subprocess", "selectors", "overspill.capture"]
# ``import overspill`` loads the rest on first use; this touches every name but the capture's.
USE_THE_STORE = ("import overspill\n"
                 "for name in overspill.__all__:\n"
                 "    if name not in ('MAX_CAPTURE_BYTES', 'Collected', 'ProcessResult', 'arun', 'collect_stream', 'run'):\n"
                 "        getattr(overspill, name)\n")


def loaded_after(code: str, env: dict[str, str]) -> set[str]:
    """The modules ``code`` added to sys.modules in a fresh interpreter."""
    probe = (
        "import sys\nbefore = set(sys.modules)\n"
        f"{code}\n"
        "print('--- loaded ---')\nprint('\\n'.join(sorted(set(sys.modules) - before)))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    return set(result.stdout.split("--- loaded ---\n")[1].split())


def bare(env: dict[str, str]) -> set[str]:
    result = subprocess.run([sys.executable, "-c", "import sys; print('\\n'.join(sys.modules))"],
                            capture_output=True, text=True, env=env, timeout=60)
    return set(result.stdout.split())


def runs_cleanly(code: str, env: dict[str, str], *args: str) -> None:
    """``code`` runs to its end in a fresh interpreter (its asserts hold)."""
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr


def test_import_overspill_loads_no_heavy_or_optional_module(subprocess_env):
    preloaded = bare(subprocess_env)
    assert loaded_after("import overspill", subprocess_env) <= {"overspill", "overspill.errors", "__future__"}
    loaded = loaded_after(USE_THE_STORE, subprocess_env)
    assert "overspill.store" in loaded
    for name in NEVER_ON_IMPORT + CAPTURE_ONLY:
        if name not in preloaded:
            assert name not in loaded, f"import overspill imported {name}"
    # The test is meaningful only if the probe could have seen these appear.
    assert "asyncio" not in preloaded and "redis" not in preloaded and "mcp" not in preloaded


def test_asyncio_only_with_arun(subprocess_env):
    loaded = loaded_after("import asyncio, overspill\n"
                          "print(asyncio.run(overspill.arun('echo hi')).stdout)", subprocess_env)
    assert "overspill.capture" in loaded


def test_tools_and_store_use_load_no_network_or_html_module(subprocess_env, tmp_path):
    preloaded = bare(subprocess_env)
    code = ("import overspill, overspill.tools, overspill.cli\n"
            f"store = overspill.ToolOutputStore({str(tmp_path)!r})\n"
            "uri = store.truncate('s', 'c', 'x\\n' * 5000).resource.uri\n"
            "store.read('s', uri)\n"
            "store.records('s')\n"
            "overspill.tools.schemas()\n")
    loaded = loaded_after(code, subprocess_env)
    for name in ["asyncio", "concurrent.futures", "ssl", "http.client", "html.parser", "urllib.request",
                 "email", "redis", "mcp"]:
        if name not in preloaded:
            assert name not in loaded, f"the store, tools and CLI imported {name} without a fetch"


def test_webfetch_still_loads_what_it_needs(subprocess_env):
    # The deferred imports resolve (a refused URL never opens a socket, but a
    # valid-looking one runs the whole path up to the connection).
    code = ("import tempfile, overspill, overspill.tools as t\n"
            "store = overspill.ToolOutputStore(tempfile.mkdtemp())\n"
            "r = t.webfetch(store, 's', 'c', 'http://127.0.0.1:9/', timeout=5)\n"
            "assert r.is_error and 'could not fetch' in r.output, r.output\n")
    loaded = loaded_after(code, subprocess_env)
    assert {"http.client", "urllib.request", "overspill.tools._html", "overspill.tools._regex"} <= loaded


def test_capture_names_load_on_first_use(subprocess_env):
    code = ("import sys, overspill\n"
            "assert 'overspill.capture' not in sys.modules\n"
            "from overspill import run, ProcessResult\n"
            "import overspill.capture as capture\n"
            "assert run is capture.run and ProcessResult is capture.ProcessResult\n"
            "assert overspill.arun is capture.arun and overspill.MAX_CAPTURE_BYTES == capture.MAX_CAPTURE_BYTES\n"
            "assert {'run', 'arun', 'collect_stream', 'Collected'} <= set(dir(overspill))\n"
            "ns = {}\n"
            "exec('from overspill import *', ns)\n"
            "assert set(overspill.__all__) <= set(ns)\n"
            "try:\n"
            "    overspill.no_such_name\n"
            "except AttributeError as error:\n"
            "    assert 'no_such_name' in str(error)\n"
            "else:\n"
            "    raise AssertionError('no AttributeError')\n")
    runs_cleanly(code, subprocess_env)


def test_version_fast_path_matches_argparse(subprocess_env):
    import overspill

    script = Path(sys.executable).with_name("overspill")
    for command in ([str(script), "--version"], [sys.executable, "-m", "overspill", "--version"]):
        result = subprocess.run(command, capture_output=True, text=True, env=subprocess_env, timeout=60)
        assert (result.returncode, result.stdout, result.stderr) == (0, f"overspill {overspill.__version__}\n", "")
    # The parser still knows the option (in help, and when combined with others).
    helped = subprocess.run([str(script), "--help"], capture_output=True, text=True, env=subprocess_env,
                            timeout=60)
    assert "--version" in helped.stdout
    combined = subprocess.run([str(script), "--version", "ls"], capture_output=True, text=True,
                              env=subprocess_env, timeout=60)
    assert combined.returncode == 0 and combined.stdout == f"overspill {overspill.__version__}\n"


# What the commonest command lines load (issue 21, goals 4 and 5): never argparse
# (its import, with gettext and shutil, is most of a short call), and none of
# the standard library's costliest modules: dataclasses (with inspect, ast, dis,
# tokenize), pathlib (with urllib.parse and ipaddress), json, datetime.py.
CLI_NEVER = ["argparse", "asyncio", "dataclasses", "inspect", "ast", "pathlib", "urllib.parse", "ipaddress", "json",
             "datetime"]


@pytest.mark.parametrize("words, never", [
    (["--version"], CLI_NEVER + ["re", "typing", "overspill.store", "overspill.config", "subprocess"]),
    # A local store is opened only for an output that must be stored.
    # It starts its command without subprocess (``_spawn``), so without selectors, threading, locale, re;
    # its signals come from _signal, without signal's enums.
    (["run", "--", "true"], CLI_NEVER + ["typing", "overspill.store", "overspill.backends.local", "subprocess",
                                         "selectors", "threading", "contextlib", "locale", "re", "signal",
                                         "enum"]),
    # collections: Cython's typed memoryviews made the extension import it (with collections.abc);
    # zlib and fcntl are the listing index's and the quota's; operator was loaded for one attrgetter.
    (["read", "URI", "--all"], CLI_NEVER + ["typing", "re", "contextlib", "functools", "subprocess", "collections",
                                            "collections.abc", "zlib", "fcntl", "operator"]),
])
def test_the_commonest_command_lines_load_only_what_they_need(subprocess_env, tmp_path, words, never, implementation):
    if implementation == "python":
        never = [name for name in never if name != "zlib"]  # the twin's crc32 is zlib's
    env = dict(subprocess_env, OVERSPILL_DATA_DIR=str(tmp_path), OVERSPILL_SESSION="s")
    if "URI" in words:
        setup = subprocess.run([sys.executable, "-c", "import sys, overspill\n"
                                "print(overspill.ToolOutputStore(sys.argv[1]).write('s', 'c', 'x' * 100).uri)",
                                str(tmp_path)], capture_output=True, text=True, env=env, timeout=60)
        words = [setup.stdout.strip() if word == "URI" else word for word in words]
    preloaded = bare(env)
    loaded = loaded_after(f"import overspill.cli\nstatus = overspill.cli.main({words!r})\n"
                          "assert status == 0, status", env)
    for name in never:
        if name not in preloaded:
            assert name not in loaded, f"overspill {' '.join(words)} imported {name}"


def test_the_extension_imports_no_collections(subprocess_env, implementation, compiled):
    # Raw buffers, not Cython's typed memoryviews, whose support imports
    # collections.abc when the module initialises (3 ms of a 10 ms start-up).
    if implementation != "cython":
        pytest.skip("the compiled module is the same under both; checked once")
    preloaded = bare(subprocess_env)
    loaded = loaded_after("import overspill._speedups", subprocess_env)
    assert "overspill._speedups" in loaded
    for name in ["collections", "collections.abc", "typing", "re", "enum", "functools"]:
        if name not in preloaded:
            assert name not in loaded, f"import overspill._speedups imported {name}"
    assert "collections" not in preloaded  # else the check above could not fail


def imported_by(argv: list[str], env: dict[str, str]) -> set[str]:
    """The modules ``python -X importtime ARGV`` imports (start-up's own included)."""
    result = subprocess.run([sys.executable, "-X", "importtime", *argv], capture_output=True, text=True, env=env,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    return {line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}


def test_the_installed_command_is_our_launcher(subprocess_env):
    # The ``overspill`` executable is scripts/overspill, not pip's console-script
    # template, which imports ``re`` (with enum, functools, collections) before
    # the CLI: ``overspill --version`` as a user runs it imports neither.
    script = str(Path(sys.executable).with_name("overspill"))
    loaded = imported_by([script, "--version"], subprocess_env) - imported_by(["-c", "pass"], subprocess_env)
    assert "overspill.cli" in loaded
    for name in CLI_NEVER + ["re", "typing", "enum", "functools", "overspill.store", "subprocess"]:
        assert name not in loaded, f"the overspill command imported {name} for --version"


@pytest.mark.parametrize("draws", [3000])
def test_ids_use_every_base62_digit(draws):
    from overspill.records import ID_LENGTH, is_resource_id, new_id

    ids = [new_id() for _ in range(draws)]
    assert len(set(ids)) == draws and ids == sorted(ids)
    assert all(len(i) == ID_LENGTH and is_resource_id(i) for i in ids)
    digits = "".join(i[12:] for i in ids)
    # 42,000 digits over 62 values: each expected 677 times; a missing or
    # halved digit would mean a biased draw.
    counts = {c: digits.count(c) for c in "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"}
    assert min(counts.values()) > 677 * 0.75 and max(counts.values()) < 677 * 1.25


def test_value_classes_compile_their_init_when_first_made(subprocess_env):
    # A frozen class's __init__ is compiled on its first call (a compile is
    # ~0.1-0.2 ms at import, and most classes are not made by a given
    # command); until then inspect.signature still gives the fields.
    code = ("import inspect, overspill._frozen as frozen\n"
            "from overspill import Page\n"
            "from overspill.records import Resource\n"
            "placeholder = frozen._placeholder_init.__code__\n"
            "assert Resource.__init__.__code__ is placeholder and Page.__init__.__code__ is placeholder\n"
            "init = Resource.__init__\n"
            "made = init.__globals__['__init__']\n"
            "resource = Resource('tool-output://x', 'text/plain', 3)\n"
            "assert Resource.__init__ is init is made and init.__code__ is not placeholder\n"
            "assert resource == Resource('tool-output://x', 'text/plain', 3, None) and resource.name is None\n"
            "try:\n"
            "    Resource('tool-output://x')\n"
            "except TypeError as error:\n"
            "    assert 'Resource.__init__() missing 2 required positional arguments' in str(error), error\n"
            "else:\n"
            "    raise AssertionError('no TypeError')\n"
            "assert Page.__init__.__code__ is placeholder\n"
            "assert str(inspect.signature(Page)) == '(resource, content, offset, truncated, next, complete=True)'\n"
            "assert Page.__init__.__code__ is not placeholder\n"
            "assert Page(resource, 'x', 0, False, None).complete is True\n")
    runs_cleanly(code, subprocess_env)


def test_a_read_runs_without_the_cyclic_collector(subprocess_env, tmp_path):
    # A read's imports set the collector off ~8 times with nothing to free:
    # it waits until the read is done, and is on again after it.
    env = dict(subprocess_env, OVERSPILL_DATA_DIR=str(tmp_path), OVERSPILL_SESSION="s")
    code = ("import gc, sys\n"
            "import overspill\n"
            "uri = overspill.ToolOutputStore(sys.argv[1]).write('s', 'c', 'x\\n' * 100000).uri\n"
            "from overspill.cli import main\n"
            "runs = []\n"
            "gc.callbacks.append(lambda phase, info: runs.append(phase))\n"
            # Each form first in a fresh interpreter, where its imports would set the collector off;
            # the shared options first too, as README's example writes a read.
            "first = [uri if word == 'URI' else word for word in sys.argv[2:]]\n"
            "for words in ([first] if first else []) + [['read', uri, '--all'], ['read', uri, '--offset', '5']]:\n"
            # The count the setup's write or the read before left (anywhere up to the threshold) is not this read's.
            "    gc.collect()\n"
            "    runs.clear()\n"
            "    assert main(words) == 0 and gc.isenabled()\n"
            "    assert runs == [], (words, runs)\n"
            "gc.collect()\n"
            "assert runs, 'the probe sees no collection'\n")
    runs_cleanly(code, env, str(tmp_path))
    runs_cleanly(code, env, str(tmp_path), "--data-dir", str(tmp_path), "--session", "s", "read", "URI", "--offset", "5")
