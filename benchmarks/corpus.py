"""A corpus of real large tool outputs, made on this machine, with their key facts.

``python benchmarks/corpus.py`` runs ~36 real commands (pip -v building this
package and installing 60 small ones, pytest with failures buried in passing
lines, in colour in a pty, gcc with errors among warnings, make -k, find,
grep -rn, git log -p and --stat, ls -laR, a log ending in a traceback, JSON
pretty and on one line, CSV, minified one-line JS, coloured progress bars in
a pty, dpkg -l; then find/ls/tar over big trees, apt-get -s, dpkg -L, a
failing pip install, npm, cargo, pytest with many failures, git log, a JSON
API response, an HTML page, CSV metrics, javac...), keeps each output in memory with the facts a model needs
from it (error lines, failing test names, summary lines, a commit or a
package in the middle), and scores what ``ToolOutputStore.truncate`` shows of
each at the default limits (2,000 lines / 50 KiB) and at overspill mcp's
(400 lines / 8 KiB): facts kept and o200k tokens (``quicktok``'s bundled
o200k_base, tiktoken's encoding, works offline: ``pip install
'overspill[tokens]'``).

Nothing large is committed: the outputs are made afresh each run.  To compare
two versions of the code on the same outputs, save them once (``--save
DIR``), score each version with ``--load DIR --json FILE`` (the version on
``PYTHONPATH``), and print both with ``--before FILE``.  Nothing in the rules
is specific to an item here.
"""

from __future__ import annotations

import json
import os
import pty
import random
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from overspill import ToolOutputStore

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Output:
    name: str
    data: bytes
    facts: list[str]


def sh(command: str, cwd: Path | str | None = None, timeout: int = 600) -> bytes:
    """stdout and stderr as one stream, in the order written (as overspill's bash runs commands)."""
    return subprocess.run(command, shell=True, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=timeout).stdout


def in_pty(argv: list[str], cwd: Path | str | None = None) -> bytes:
    """What a program writes to a terminal (colours, \\r redraws), through a real pty."""
    pid, fd = pty.fork()
    if pid == 0:
        if cwd:
            os.chdir(cwd)
        os.environ["TERM"] = "xterm-256color"
        os.execvp(argv[0], argv)
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.waitpid(pid, 0)
    os.close(fd)
    return b"".join(chunks)


def lines_with(data: bytes, pattern: str) -> list[str]:
    text = re.sub(r"\x1b\[[0-9;?]*[ -/]*[@-~]", "", data.decode("utf-8", "replace"))
    return [line.strip().split("\r")[-1].strip() for line in text.splitlines() if re.search(pattern, line)]


# ---------------------------------------------------------------- the outputs
def pip_verbose_build(work: Path) -> Output:
    data = sh(f"{sys.executable} -m pip install -v --no-deps --no-build-isolation --target {work / 'pip-target'} "
              f"{ROOT}", timeout=900)
    return Output("pip -v install (builds the C extension)", data,
                  lines_with(data, r"Successfully installed|Building wheel for overspill")[:2])


PYTEST_FILE = textwrap.dedent("""
    import pytest

    @pytest.mark.parametrize("n", range(2500))
    def test_parser_accepts(n):
        assert n >= 0

    def test_config_loads_defaults():
        config = {"retries": 3}
        assert config["retries"] == 5, "retries default changed"

    @pytest.mark.parametrize("n", range(2500))
    def test_renderer_output(n):
        assert str(n).isdigit()

    def test_cache_eviction():
        cache = list(range(10))
        assert len(cache) == 8

    @pytest.mark.parametrize("n", range(1500))
    def test_more(n):
        pass
""")


def pytest_buried(work: Path, colour: bool) -> Output:
    folder = work / ("pytest-colour" if colour else "pytest-plain")
    folder.mkdir()
    (folder / "test_suite.py").write_text(PYTEST_FILE)
    argv = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-p", "no:randomly",
            "--color=yes" if colour else "--color=no", "test_suite.py"]
    data = in_pty(argv, folder) if colour else sh(" ".join(argv), folder)
    facts = ["test_config_loads_defaults FAILED", "test_cache_eviction FAILED", "retries default changed",
             "2 failed, 6500 passed"]
    return Output("pytest -v, failures buried" + (" (colour, pty)" if colour else ""), data, facts)


def gcc_errors(work: Path) -> Output:
    folder = work / "gcc"
    folder.mkdir()
    names = {140: "undeclared_counter", 210: "undeclared_buffer"}
    units = []
    for i in range(400):
        body = (f"int f{i}(void) {{ return {names[i]}; }}\n" if i in names
                else f"int f{i}(int *p) {{ int unused_{i}; return (int)p; }}\n")
        (folder / f"unit{i}.c").write_text(body)
        units.append(f"unit{i}.c")
    data = sh("gcc -fsyntax-only -Wall -Wextra " + " ".join(units), folder)
    return Output("gcc, 2 errors among 800 warnings", data, lines_with(data, r": error: "))


def make_k(work: Path) -> Output:
    folder = work / "make"
    folder.mkdir()
    rules = ["all: " + " ".join(f"t{i}" for i in range(1500))]
    for i in range(1500):
        command = "exit 2" if i == 700 else f"echo building component {i} of the tree; echo compiled {i} objects"
        rules.append(f"t{i}:\n\t@{command}")
    (folder / "Makefile").write_text("\n".join(rules) + "\n")
    data = sh("make -k", folder)
    return Output("make -k, one target failing", data, lines_with(data, r"\*\*\*|not remade"))


def find_tree() -> Output:
    data = sh("find /usr/share/doc /nonexistent/path /usr/lib/python3* -maxdepth 4")
    return Output("find with a missing path in the middle", data, lines_with(data, r"No such file"))


def grep_rn() -> Output:
    data = sh("grep -rn 'def ' /usr/lib/python3/dist-packages /no/such/dir /usr/lib/python3.*/json 2>&1 | head -c 3000000")
    return Output("grep -rn over libraries", data, lines_with(data, r"No such file"))


def git_log() -> Output:
    data = sh("git log -p --stat", ROOT)
    subjects = sh("git log --format=%s", ROOT).decode().splitlines()
    return Output("git log -p of this repository", data, [subjects[0], subjects[-1]])


def ls_recursive() -> Output:
    data = sh("ls -laR /usr/lib/x86_64-linux-gnu /no/such/folder /usr/share/zoneinfo 2>&1")
    return Output("ls -laR with a missing folder", data, lines_with(data, r"cannot access"))


def traceback_log(work: Path) -> Output:
    script = textwrap.dedent("""
        import logging, sys
        logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
        for i in range(12000):
            logging.info("processed record %d of batch 7", i)
        logging.warning("connection pool exhausted; falling back to a single connection")
        for i in range(12000, 24000):
            logging.info("processed record %d of batch 7", i)
        raise TimeoutError("database did not answer within 30 s")
    """)
    data = sh(f"{sys.executable} -c '{script}'")
    return Output("a log ending in a traceback", data,
                  ["connection pool exhausted", "TimeoutError: database did not answer within 30 s"])


def json_dump() -> Output:
    data = sh(f"{sys.executable} -m pip inspect")
    document = json.loads(data)
    names = [item["metadata"]["name"] for item in document["installed"]]
    return Output("pip inspect (JSON)", data, ['"version": "1"', names[0], names[-1]])


def minified_js() -> Output:
    rng = random.Random(7)
    parts = [f"function f{i}(a,b){{return a*{rng.randint(1, 99)}+b}}" for i in range(20000)]
    parts.insert(10000, 'throw new Error("unreachable state in reducer")')
    data = (";".join(parts) + ";\n").encode()
    return Output("minified one-line JS", data, ["function f0(a,b)", "function f19999(a,b)"])


def csv_dump() -> Output:
    rng = random.Random(3)
    rows = ["id,name,amount,currency,status"]
    for i in range(40000):
        rows.append(f"{i},customer-{rng.randint(1, 9999)},{rng.random() * 1000:.2f},EUR,"
                    f"{'FAILED' if i == 17000 else 'ok'}")
    data = ("\n".join(rows) + "\n").encode()
    return Output("CSV export", data, ["id,name,amount,currency,status", "17000,", rows[-1]])


def progress_pty(work: Path) -> Output:
    script = textwrap.dedent("""
        import sys, time
        for f in range(40):
            for p in range(0, 101, 2):
                bar = "#" * (p // 4)
                sys.stdout.write(f"\\r\\x1b[2K\\x1b[36mfile {f:02d}\\x1b[0m [\\x1b[32m{bar:<25}\\x1b[0m] {p:3d}%")
            sys.stdout.write("\\n")
            if f == 23:
                print("\\x1b[31mERROR: checksum mismatch for file 23, retrying\\x1b[0m")
        print("\\x1b[1mdownloaded 40 files, 1 retry\\x1b[0m")
    """)
    path = work / "progress.py"
    path.write_text(script)
    data = in_pty([sys.executable, str(path)])
    return Output("coloured progress bars in a pty", data,
                  ["ERROR: checksum mismatch for file 23", "downloaded 40 files, 1 retry"])


def pip_progress(work: Path) -> Output:
    script = textwrap.dedent("""
        import sys
        for i in range(1, 201):
            sys.stdout.write(f"\\r   \\x1b[38;5;197m{'━' * (i // 5)}\\x1b[0m\\x1b[38;5;237m{'━' * (40 - i // 5)}\\x1b[0m "
                             f"\\x1b[32m{i / 10:.1f}/20.0 MB\\x1b[0m \\x1b[31m3.1 MB/s\\x1b[0m eta \\x1b[36m0:00:0{9 - i // 25}\\x1b[0m")
        print()
        print("Successfully installed numpy-2.1.0")
    """)
    path = work / "pip_progress.py"
    path.write_text(script)
    data = in_pty([sys.executable, str(path)])
    return Output("a pip progress bar just under the limit", data, ["Successfully installed numpy-2.1.0", "20.0/20.0 MB"])


def deprecation_warnings(work: Path) -> Output:
    script = textwrap.dedent("""
        import warnings
        for i in range(30000):
            print(f"step {i}: loss={1 / (i + 1):.6f}")
            if i == 9000:
                warnings.warn("the 'lr' argument is deprecated; use 'learning_rate'", DeprecationWarning)
        print("training finished: 30000 steps")
    """)
    path = work / "train.py"
    path.write_text(script)
    data = sh(f"{sys.executable} -W always -u {path}")
    return Output("a training log with a deprecation warning", data,
                  ["the 'lr' argument is deprecated", "training finished: 30000 steps"])


def dpkg_list() -> Output:
    data = sh("dpkg -l; dpkg -s no-such-package-xyz; dpkg -l | tail -n 300")
    return Output("dpkg -l with an error", data, lines_with(data, r"is not installed")[:1])


def unittest_failures(work: Path) -> Output:
    script = textwrap.dedent("""
        import unittest
        class T(unittest.TestCase):
            pass
        for i in range(4000):
            setattr(T, f"test_{i:04d}", lambda self: None)
        def broken(self):
            self.assertEqual(sum([1, 2]), 4)
        T.test_2500_sum = broken
        unittest.main(argv=["x", "-v"])
    """)
    path = work / "ut.py"
    path.write_text(script)
    data = sh(f"{sys.executable} {path}")
    return Output("unittest -v with one failure", data, ["FAIL: test_2500_sum", "AssertionError: 3 != 4",
                                                        "FAILED (failures=1)"])


def git_log_stat() -> Output:
    data = sh("git log --stat", ROOT)
    subjects = sh("git log --format=%s", ROOT).decode().splitlines()
    return Output("git log --stat, a commit in the middle", data, [subjects[len(subjects) // 2][:60]])


def json_one_line() -> Output:
    document = json.loads(sh(f"{sys.executable} -m pip inspect"))
    data = json.dumps(document, separators=(",", ":")).encode() + b"\n"
    names = [item["metadata"]["name"] for item in document["installed"]]
    return Output("pip inspect as one-line JSON", data,
                  ['"installed"', '"environment"', names[len(names) // 2]])


def json_middle_package() -> Output:
    data = sh(f"{sys.executable} -m pip inspect")
    names = [item["metadata"]["name"] for item in json.loads(data)["installed"]]
    return Output("pip inspect (JSON), a package in the middle", data, [names[len(names) // 3],
                                                                       names[2 * len(names) // 3]])


def local_packages(folder: Path, prefix: str, count: int, major: int) -> list[str]:
    """Folders of ``count`` small pure-Python packages (``prefix_00``...), for pip to build and install."""
    names = []
    for i in range(count):
        package = folder / f"{prefix}_{i:02d}"
        (package / f"{prefix}_{i:02d}").mkdir(parents=True)
        (package / f"{prefix}_{i:02d}" / "__init__.py").write_text("VALUE = 1\n")
        (package / "pyproject.toml").write_text(
            f'[project]\nname = "{prefix.replace("_", "-")}-{i:02d}"\nversion = "{major}.{i}"\n'
            '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n')
        names.append(str(package))
    return names


def no_isolation() -> str:
    """pip's --no-build-isolation when this environment can build wheels itself (quicker), else nothing."""
    import importlib.util

    return "--no-build-isolation" if importlib.util.find_spec("wheel") else ""


def pip_install_summary(work: Path) -> Output:
    # A real install of many small local packages: each one's build, then the one summary line.
    names = local_packages(work / "pkgs", "corpus_pkg", 60, 1)
    data = sh(f"{sys.executable} -m pip install -v --no-deps {no_isolation()} --target {work / 'pkgs-target'} "
              + " ".join(names), timeout=1800)
    return Output("pip install -v of 60 packages", data,
                  lines_with(data, r"^Successfully installed")[:1] + lines_with(data, r"^Processing ")[:1])


MAKERS: list[Callable[..., Output]] = [
    pip_verbose_build, lambda w: pytest_buried(w, False), lambda w: pytest_buried(w, True), gcc_errors, make_k,
    lambda w: find_tree(), lambda w: grep_rn(), lambda w: git_log(), lambda w: ls_recursive(), traceback_log,
    lambda w: json_dump(), lambda w: minified_js(), lambda w: csv_dump(), progress_pty, pip_progress,
    deprecation_warnings, lambda w: dpkg_list(), unittest_failures, lambda w: git_log_stat(),
    lambda w: json_one_line(), lambda w: json_middle_package(), pip_install_summary,
]


# ---------------------------------------------------------------- round 2 of the corpus: more kinds
def find_big_tree() -> Output:
    # Names with "error" in them (error.py, liberror-perl, errors.go) throughout, one real error in the middle.
    data = sh("find /usr/lib/python3* /usr/share/perl5 /usr/share/doc /no/such/tree /usr/include -xdev 2>&1")
    lines = data.decode("utf-8", "replace").splitlines()
    return Output("find over a big tree (names with 'error')", data,
                  lines_with(data, r"No such file") + [lines[-1]])


def ls_big_folder() -> Output:
    data = sh("ls -la /usr/bin /usr/lib/x86_64-linux-gnu /no/such/folder /usr/share/perl5 2>&1")
    return Output("ls -la of big folders", data, lines_with(data, r"cannot access") + ["/usr/share/perl5:"])


def tar_verbose(work: Path) -> Output:
    data = sh(f"tar -cvf {work / 'out.tar'} /usr/lib/python3*/email /usr/share/perl5 /no/such/input "
              "/usr/lib/python3/dist-packages 2>&1")
    return Output("tar -cv with a missing input", data, lines_with(data, r"Cannot stat|Exiting with failure"))


def apt_simulate() -> Output:
    needs("apt-get")
    packages = sh("dpkg-query -W -f '${Package}\\n'").decode().split()
    data = sh("apt-get install -s " + " ".join(packages) + "; apt-get install -s no-such-package-xyz")
    return Output("apt-get install -s of every package, then a missing one", data,
                  lines_with(data, r"upgraded, .* newly installed") + lines_with(data, r"^E: ")
                  + [f"{packages[len(packages) // 2]} is already the newest version"])


def dpkg_files() -> Output:
    needs("dpkg")
    packages = sh("dpkg-query -W -f '${Package}\\n'").decode().split()
    half = len(packages) // 2
    names = " ".join(packages[half - 20 : half]) + " no-such-package-abc " + " ".join(packages[half : half + 20])
    data = sh(f"dpkg -L {names}")
    return Output("dpkg -L of 40 packages, one not installed", data,
                  ["package 'no-such-package-abc' is not installed"])


def pip_install_failure(work: Path) -> Output:
    # A resolver log: local packages, then one whose C extension does not compile, then a missing requirement.
    folder = work / "pipfail"
    names = local_packages(folder, "corpus_ok", 25, 2)
    broken = folder / "corpus_native"
    broken.mkdir(parents=True)
    (broken / "fast.c").write_text("#include <Python.h>\nint f(void) { return missing_symbol_table[0]; }\n")
    (broken / "setup.py").write_text("from setuptools import setup, Extension\n"
                                     "setup(name='corpus-native', version='0.1', "
                                     "ext_modules=[Extension('fast', ['fast.c'])])\n")
    names.insert(12, str(broken))
    data = sh(f"{sys.executable} -m pip install -v --no-deps {no_isolation()} --target {work / 'pipfail-target'} "
              + " ".join(names) + f"; {sys.executable} -m pip install --no-index no-such-requirement-xyz==1.0",
              timeout=1800)
    return Output("pip install -v, a C extension fails to build, a missing requirement", data,
                  lines_with(data, r"error: .missing_symbol_table. undeclared")[:1]
                  + lines_with(data, r"Failed to build|failed-wheel-build|Failed building wheel")[:1]
                  + lines_with(data, r"No matching distribution")[:1])


def npm_build(work: Path) -> Output:
    folder = work / "npm"
    folder.mkdir()
    (folder / "package.json").write_text('{"name": "corpus-app", "version": "1.0.0", '
                                         '"scripts": {"build": "node build.js"}}\n')
    (folder / "build.js").write_text(textwrap.dedent("""
        for (let i = 0; i < 4000; i++) {
          console.log(`[build] compiled src/components/widget_${i}.js (${(i * 37) % 900 + 100} bytes)`);
          if (i === 1700) console.error("(!) Circular dependency: src/store/index.js -> src/store/cart.js");
          if (i === 2600) console.error("Error: Cannot find module './theme/colors' from src/ui/Button.js");
        }
        console.log("[build] 4000 modules, 1 error");
        process.exit(1);
    """))
    needs("npm")
    data = sh("npm run build", folder)
    return Output("npm run build with an error in the middle", data,
                  ["Cannot find module './theme/colors'", "4000 modules, 1 error"])


def cargo_build(work: Path) -> Output:
    needs("cargo")
    folder = work / "cargo"
    (folder / "src").mkdir(parents=True)
    (folder / "Cargo.toml").write_text('[package]\nname = "corpus-crate"\nversion = "0.1.0"\nedition = "2021"\n')
    lines = [f"fn helper_{i}(x: i32) -> i32 {{ let unused_{i} = x * 2; x + 1 }}" for i in range(400)]
    lines.insert(200, "fn broken_a() -> i32 { missing_counter + 1 }")
    lines.insert(300, "fn broken_b() -> String { let v: i32 = 5; v }")
    lines.append("fn main() { " + " ".join(f"helper_{i}({i});" for i in range(400)) + " }")
    (folder / "src" / "main.rs").write_text("\n".join(lines) + "\n")
    data = sh("cargo build --offline --color never", folder)
    return Output("cargo build: 2 errors, 400 warnings", data,
                  ["cannot find value `missing_counter`", "mismatched types"]
                  + lines_with(data, r"could not compile")[:1])


PYTEST_MANY = textwrap.dedent("""
    import pytest

    @pytest.mark.parametrize("n", range(3000))
    def test_tokenizer(n):
        assert n % 97 != 13, f"token {n} split wrongly"

    def test_config_round_trip():
        assert {"a": 1} == {"a": 2}
""")


def pytest_many_failures(work: Path) -> Output:
    folder = work / "pytest-many"
    folder.mkdir()
    (folder / "test_many.py").write_text(PYTEST_MANY)
    data = sh(f"{sys.executable} -m pytest -p no:cacheprovider -p no:randomly --color=no test_many.py", folder)
    return Output("pytest, 32 failures with tracebacks", data,
                  ["32 failed, 2969 passed", "FAILED test_many.py::test_config_round_trip",
                   "FAILED test_many.py::test_tokenizer[13]", "test_tokenizer[1565]"])


def git_log_plain() -> Output:
    data = sh("git log", ROOT)
    subjects = sh("git log --format=%s", ROOT).decode().splitlines()
    return Output("git log, a commit a third of the way", data,
                  [subjects[0][:60], subjects[len(subjects) // 3][:60]])


def json_api(work: Path) -> Output:
    # An API's list response: items with nested objects, a cursor and an error entry after them.
    rng = random.Random(11)
    words = ["cache", "parser", "login", "upload", "timeout", "render", "sync", "export", "search", "billing"]
    items = []
    for i in range(1500):
        items.append({"id": 10000 + i, "number": i + 1,
                      "title": f"{rng.choice(words)} {rng.choice(words)} fails on {rng.choice(words)} #{i + 1}",
                      "state": rng.choice(["open", "closed"]),
                      "user": {"login": f"user{rng.randint(1, 500)}", "id": rng.randint(1, 10**6),
                               "site_admin": False},
                      "labels": [{"name": rng.choice(["bug", "feature", "docs"]), "color": "d73a4a"}],
                      "comments": rng.randint(0, 40), "created_at": f"2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T10:00:00Z"})
    items[900]["title"] = "payment webhook drops events under load"
    document = {"total_count": len(items), "items": items, "next_cursor": "c2VxOjE1MDA=",
                "errors": [{"code": "rate_limited", "message": "secondary rate limit exceeded, retry after 60 s"}]}
    data = json.dumps(document, indent=2).encode() + b"\n"
    return Output("a JSON API response (1,500 issues)", data,
                  ['"total_count"', "payment webhook drops events under load", "secondary rate limit exceeded"])


def html_page() -> Output:
    candidates = sorted(Path.home().glob(".rustup/toolchains/*/share/doc/rust/html/book/print.html"))
    path = candidates[0] if candidates else None
    if path is None:
        found = sh("find /usr/share/doc -name '*.html' -size +200k 2>/dev/null | head -n 1").decode().strip()
        path = Path(found)
    data = path.read_bytes()
    title = re.search(rb"<title>(.*?)</title>", data, re.S)
    text = data.decode("utf-8", "replace")
    last_heading = re.findall(r"<h1[^>]*>(?:<a[^>]*>)?([^<]+)", text)
    return Output("a large HTML page", data, [title.group(1).decode().strip()] + last_heading[-1:])


def csv_metrics() -> Output:
    rng = random.Random(5)
    rows = ["timestamp,host,cpu_pct,mem_mb,disk_io_kbps,errors"]
    for i in range(30000):
        host = f"web-{rng.randint(1, 24):02d}"
        errors = 57 if i == 21000 else 0
        rows.append(f"2026-03-01T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}Z,{host},"
                    f"{rng.random() * 100:.1f},{rng.randint(900, 4000)},{rng.randint(0, 9000)},{errors}")
    rows.append("# summary: 30000 samples, 24 hosts, 1 sample with errors")
    data = ("\n".join(rows) + "\n").encode()
    return Output("CSV metrics with a summary line", data,
                  ["timestamp,host,cpu_pct,mem_mb,disk_io_kbps,errors", "30000 samples, 24 hosts"])


def javac_errors(work: Path) -> Output:
    needs("javac")
    folder = work / "javac"
    folder.mkdir()
    names = []
    for i in range(150):
        body = (f"public class C{i} {{ int f() {{ return undefinedField{i}; }} }}\n" if i in (60, 120) else
                f"public class C{i} {{ @Deprecated void old() {{}} void g() {{ java.util.List raw = new java.util.ArrayList(); raw.add({i}); }} }}\n")
        (folder / f"C{i}.java").write_text(body)
        names.append(f"C{i}.java")
    data = sh("javac -Xlint:all -Xmaxwarns 10000 " + " ".join(names), folder)
    return Output("javac: 2 errors among 300 warnings", data,
                  lines_with(data, r"error: cannot find symbol")[:1] + lines_with(data, r"\d+ errors?$")[:1])


NEW_MAKERS: list[Callable[..., Output]] = [
    lambda w: find_big_tree(), lambda w: ls_big_folder(), tar_verbose, lambda w: apt_simulate(),
    lambda w: dpkg_files(), pip_install_failure, npm_build, cargo_build, pytest_many_failures,
    lambda w: git_log_plain(), json_api, lambda w: html_page(), lambda w: csv_metrics(), javac_errors,
]


class Missing(Exception):
    """A tool an output needs is not installed here: that output is left out (and said so)."""


def needs(tool: str) -> None:
    if shutil.which(tool) is None:
        raise Missing(tool)


def build(work: Path, makers: list[Callable[..., Output]] | None = None) -> list[Output]:
    outputs = []
    for make in MAKERS + NEW_MAKERS if makers is None else makers:
        try:
            output = make(work)
        except Missing as missing:
            print(f"left out: {getattr(make, '__name__', make)} needs {missing}", file=sys.stderr)
            continue
        assert output.facts and all(output.facts), f"{output.name}: no key facts found"
        outputs.append(output)
    return outputs


# ---------------------------------------------------------------- scoring
def kept(content: str, facts: list[str]) -> int:
    return sum(fact in content for fact in facts)


#: The limits scored: the store's defaults, and overspill mcp's (results under the ~10 KB cut of Codex and
#: Copilot CLI).
LIMITS = {"default": (2000, 50 * 1024), "mcp": (400, 8 * 1024)}


def save(outputs: list[Output], folder: Path) -> None:
    """Keep the outputs (not committed: they are this machine's) to score other versions of the code on them."""
    folder.mkdir(parents=True, exist_ok=True)
    index = []
    for number, output in enumerate(outputs):
        (folder / f"{number:02d}.out").write_bytes(output.data)
        index.append({"name": output.name, "facts": output.facts})
    (folder / "index.json").write_text(json.dumps(index, indent=1))


def load(folder: Path) -> list[Output]:
    index = json.loads((folder / "index.json").read_text())
    return [Output(item["name"], (folder / f"{number:02d}.out").read_bytes(), item["facts"])
            for number, item in enumerate(index)]


def score(outputs: list[Output], work: Path) -> dict:
    """Facts kept and o200k tokens of what the code in use shows, at each of LIMITS."""
    import quicktok

    encoding = quicktok.get_encoding("o200k_base")
    store = ToolOutputStore(work / "store", durable=False)
    rows = []
    for output in outputs:
        row = {"name": output.name, "bytes": len(output.data), "facts": len(output.facts)}
        for label, (lines, size) in LIMITS.items():
            shown = store.truncate("corpus", "c", output.data, max_lines=lines, max_bytes=size).content
            row[label] = (kept(shown, output.facts), len(encoding.encode_ordinary(shown)))
        rows.append(row)
    return {"rows": rows}


def table(after: dict, before: dict | None) -> str:
    """A markdown table: facts kept and tokens per output at each limit, before (if given) and after."""
    head = "| output | bytes | facts |"
    rule = "|---|---:|---:|"
    for label in LIMITS:
        head += f" {label}: kept | {label}: tokens |"
        rule += "---:|---:|"
    lines = [head, rule]
    totals: dict = {}
    previous = {row["name"]: row for row in before["rows"]} if before else {}
    for row in after["rows"]:
        old = previous.get(row["name"])
        cells = f"| {row['name']} | {row['bytes']:,} | {row['facts']} |"
        for label in LIMITS:
            facts, tokens = row[label]
            total = totals.setdefault(label, [0, 0, 0, 0])
            total[0] += facts
            total[1] += tokens
            if old is not None:
                total[2] += old[label][0]
                total[3] += old[label][1]
                cells += f" {old[label][0]} → {facts} | {old[label][1]:,} → {tokens:,} |"
            else:
                cells += f" {facts} | {tokens:,} |"
        lines.append(cells)
    cells = f"| **total ({len(after['rows'])} outputs)** | {sum(r['bytes'] for r in after['rows']):,} | " \
            f"{sum(r['facts'] for r in after['rows'])} |"
    for label in LIMITS:
        facts, tokens, old_facts, old_tokens = totals[label]
        cells += (f" {old_facts} → {facts} | {old_tokens:,} → {tokens:,} |" if before
                  else f" {facts} | {tokens:,} |")
    lines.append(cells)
    return "\n".join(lines)


def main() -> None:
    """``corpus.py``: build, then score the code in use.  ``--save DIR`` keeps the outputs there;
    ``--load DIR`` scores saved outputs; ``--json FILE`` writes the scores; ``--before FILE`` adds a
    previous run's scores to the table (the same outputs scored by an older version of the code)."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--save", type=Path)
    parser.add_argument("--load", type=Path)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--before", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="overspill-corpus-"))
    try:
        outputs = load(args.load) if args.load else build(work)
        if args.save:
            save(outputs, args.save)
        result = score(outputs, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(result))
    before = json.loads(args.before.read_text()) if args.before else None
    print(table(result, before))


if __name__ == "__main__":
    main()
