"""grep's glob, read as rg --glob reads it (overspill.tools._glob), for the search without rg."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys

import pytest

from overspill.tools._glob import Overrides, translate

grep_module = importlib.import_module("overspill.tools.grep")


def matches(glob: str, path: str) -> bool:
    rule = translate(glob)
    assert rule is not None
    return rule.regex.fullmatch(path.encode("utf-8")) is not None


@pytest.mark.parametrize(("glob", "path", "expected"), [
    ("*.py", "a.py", True), ("*.py", "x/y/a.py", True), ("*.py", "a.pyc", False), ("*.py", ".py", True),
    ("sub/*.py", "sub/d.py", True), ("sub/*.py", "sub/deep/e.py", False), ("sub/*.py", "x/sub/d.py", False),
    ("sub/**", "sub/a", True), ("sub/**", "sub/a/b", True), ("sub/**", "sub", False),
    ("**/e.py", "e.py", True), ("**/e.py", "a/b/e.py", True), ("a/**/b", "a/b", True), ("a/**/b", "a/x/y/b", True),
    ("a**.py", "ab.py", True), ("a**.py", "a/b.py", False), ("**", "any/thing", True),
    ("*.{py,md}", "b.md", True), ("*.{py,md}", "c.txt", False), ("{a,b}*", "x/bz", True), ("{}", "x", False),
    ("a}b", "ab", True), ("a,b", "a,b", True), ("?.py", "a.py", True), ("?.py", "é.py", False),
    ("??.py", "é.py", True), ("[ab].py", "b.py", True), ("[!a].py", "b.py", True), ("[^a].py", "a.py", False),
    ("sub[/]d", "sub/d", True), ("sub?d", "sub/d", False), ("[]]", "]", True), ("[a-]", "-", True),
    ("we\\[ir\\]d", "we[ir]d", True), ("we\\[ir\\]d", "wed", False), ("/a.py", "a.py", True),
    ("/a.py", "x/a.py", False), ("\\!a", "!a", True), ("\\#a", "#a", True), ("x y\\ ", "x y ", True),
    ("x y ", "x y", True), ("a.b", "axb", False), ("(a)", "(a)", True), ("a+", "aa", False)])
def test_translate_is_rgs_glob(glob, path, expected):
    """The regex of a glob as ripgrep 13 builds it (globset under its ignore overrides)."""
    assert matches(glob, path) is expected


def test_translate_reads_the_rules_kind():
    assert translate("!*.txt").excludes and not translate("*.txt").excludes
    assert translate("deep/").folders_only and translate("!sub/").folders_only and not translate("sub").folders_only
    # rg reads these as no glob at all.
    assert translate("") is None and translate("   ") is None and translate("#a.py") is None


@pytest.mark.parametrize(("glob", "message"), [
    ("[", "unclosed character class; missing ']'"), ("a[b", "unclosed character class; missing ']'"),
    ("{", "unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)"),
    ("*.{py,{md}}", "nested alternate groups are not allowed"), ("a\\", "dangling '\\'"),
    ("[z-a]", "invalid range; 'z' > 'a'")])
def test_translate_refuses_what_rg_refuses(glob, message):
    with pytest.raises(ValueError) as raised:
        translate(glob)
    assert str(raised.value) == message


def test_overrides_order_negation_and_paths(tmp_path):
    overrides = Overrides(["*.py", "!.git"], tmp_path)
    assert not overrides.skips("./a.py", False) and overrides.skips("./a.md", False)
    assert not overrides.skips("./sub", True)  # a folder is entered though no glob selects it
    assert overrides.skips("./.git", True) and overrides.skips("sub/.git", False)  # the last match decides
    assert not overrides.skips(str(tmp_path / "x" / "a.py"), False)
    anchored = Overrides(["sub/*.py"], tmp_path)
    assert not anchored.skips(str(tmp_path / "sub" / "d.py"), False)  # under rg's folder: matched relatively
    assert anchored.skips("../sub/d.py", False)


GLOBS = ["*.py", "*.{py,md}", "!*.txt", "sub/*.py", "sub/**", "**/e.py", "sub/**/*.py", "/a.py", "deep", "deep/",
         "!sub", "!sub/", "sub", "**", "a**.py", "*", "[ab].py", "[!a].py", "we\\[ir\\]d.py", "{a,b}*", "x.txt",
         "!deep", "e.py", "?.py", "??.py", "**/", "*/*.py", "sub/", "{}", "{a}.py", ".git", "!.git", "sub[!a]d.py",
         "sub[/]d.py", "[é].py", "[!é].py", "a}b.py", "a,b.py", "x y.py ", "x y.py\\ ", "#c.py", "\\#c.py", "",
         "[a-]*.py", "[]]", "**/deep/**", "{sub/**,*.md}", "{**/e.py,z.py}", "sub/**e.py", "**e.py", "/sub/*.py",
         "!/sub", "!**/deep", "{,a}.py", "[--z]*", "**/**/*.py", "sub/*/e.py", ".*", "!{*.md,sub}"]
FILES = ["a.py", "ab.py", "b.md", "c.txt", "z.py", "sub/d.py", "sub/.git", "sub/deep/e.py", "x.txt/f.py",
         "src/sub/g.py", ".git/h.py", ".hg", "we[ir]d.py", "a}b.py", "a,b.py", "x y.py ", "#c.py", "é.py",
         "odd dir/.svn/x", "odd dir/k.py"]


@pytest.mark.skipif(shutil.which("rg") is None, reason="rg is not on PATH")
def test_the_walk_picks_what_rg_picks_in_its_order(tmp_path):
    """The Python search's files, for each glob and way of naming the folder, are rg's, in rg's order."""
    for name in FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("needle\n")
    differences = []
    for root in (".", "sub", "./sub/", str(tmp_path / "src")):
        for glob in GLOBS:
            globs = ([glob] if glob else []) + list(grep_module._SKIPPED_GLOBS)
            listed = subprocess.run(["rg", "--files", "--hidden", "--no-ignore", "--sort=path",
                                     *[f"--glob={each}" for each in globs], "--", root],
                                    cwd=tmp_path, capture_output=True, check=False)
            assert listed.returncode in (0, 1), listed.stderr
            by_rg = [os.fsdecode(line) for line in listed.stdout.split(b"\n")[:-1]]
            walked = [name for _, _, name in grep_module._walk(tmp_path / root, root, Overrides(globs, tmp_path))]
            if walked != by_rg:
                differences.append((root, glob, by_rg, walked))
    assert differences == []


def test_a_glob_of_many_stars_matches_a_long_name_in_linear_time(tmp_path):
    """Review (stop 14): each ``*`` became ``[^/]*``, and ``*a*a*a*a*b`` against a 200-character
    name backtracked exponentially on the caller's thread (7.6 s; one ``*a`` more, minutes).
    ``*X*`` now takes X's first match atomically; the subprocess's bound is for a hang only."""
    code = ("from overspill.tools._glob import translate\n"
            "glob = translate('*a' * 14 + '*b')\n"
            "assert not glob.regex.fullmatch(b'a' * 200)\n"
            "assert glob.regex.fullmatch(b'a' * 200 + b'b') and glob.regex.fullmatch(b'dir/' + b'xa' * 14 + b'b')\n"
            "assert not glob.regex.fullmatch(b'a' * 13 + b'/' + b'a' + b'b')\n"
            "print('ok')\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert result.stdout == "ok\n", result.stderr


@pytest.mark.parametrize(("glob", "name", "matches"), [
    ("*ab*c", "xabyabzc", True), ("*a?c*", "zzabcq", True), ("*a?c*", "zzacq", False), ("x*ab*", "xaab", True),
    ("*ab*ab*", "abab", True), ("*ab*ab*", "aba", False), ("*.t*t", "a.tt", True), ("*.t*t", "a.t", False),
    ("*a*/b", "xay/b", True), ("*a*b", "a/b", False)])
def test_a_star_takes_the_first_match_of_what_follows_without_losing_a_match(glob, name, matches):
    assert bool(translate(glob).regex.fullmatch(name.encode())) is matches
