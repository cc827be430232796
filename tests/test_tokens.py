"""tool_output.max_tokens: the preview within an o200k token bound, through the store, the CLI and the MCP
server's configuration; without the tokens extra, one clear error naming it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from overspill import ToolOutputStore
from overspill._tokens import counter
from overspill.errors import ConfigError
from overspill.mcp_server import limits_config


def preview_tokens(content: str) -> int:
    """Tokens of what the model is shown, less the marker (which comes on top, as with bytes)."""
    count = counter()
    lines = content.split("\n")
    kept = [line for line in lines if not line.startswith(("... output truncated", "next: read("))]
    return count("\n".join(kept))


def test_the_counter_is_o200k():
    count = counter()
    assert count("hello world") == 2
    assert count("<|endoftext|>") > 1  # special-token text is plain text


@pytest.mark.parametrize("max_tokens", [50, 400, 3000])
def test_the_preview_stays_within_the_token_bound(tmp_path, max_tokens):
    store = ToolOutputStore(tmp_path, durable=False, config={"tool_output": {"max_tokens": max_tokens}})
    # Lines of different shapes (a run of lines differing only in numbers would be trimmed: see test_outline).
    words = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta")
    data = "".join(f"{i:08x} {words[i * 3 % 7]} {i * 7919 % 100003} déjà 数据 {{\"k\": [{i}, {i + 1}]}}\n"
                   for i in range(20000))
    result = store.truncate("s", "c", data)
    assert result.truncated
    assert preview_tokens(result.content) <= max_tokens + 2
    assert preview_tokens(result.content) >= max_tokens // 3  # the bound is used, not wasted
    assert data.startswith(store.read("s", result.resource.uri, offset=0, limit=100).content)


def test_an_output_within_the_bytes_but_over_the_tokens_is_stored(tmp_path):
    store = ToolOutputStore(tmp_path, durable=False, config={"tool_output": {"max_tokens": 100}})
    data = " ".join(str(n) for n in range(3000))  # ~14 KB, far more than 100 tokens
    for result in (store.truncate("s", "a", data), store.truncate_stream("s", "b", [data.encode()])):
        assert result.truncated and result.resource is not None
        with store.view("s", result.resource.uri) as (_, stored):
            assert bytes(stored) == data.encode()
        assert preview_tokens(result.content) <= 102
    small = "just a few words"
    assert store.truncate("s", "c", small).content == small
    assert store.truncate_stream("s", "d", [small.encode()]).content == small


def test_without_max_tokens_nothing_is_counted(tmp_path):
    store = ToolOutputStore(tmp_path, durable=False)
    data = " ".join(str(n) for n in range(3000))
    assert store.truncate("s", "c", data).content == data


def test_a_bad_max_tokens_is_a_config_error(tmp_path):
    for value in (0, -1, "100", True):
        with pytest.raises(ConfigError, match="max_tokens"):
            ToolOutputStore(tmp_path, config={"tool_output": {"max_tokens": value}})


def test_without_the_extra_the_error_names_it(tmp_path):
    # A process where the tokenizer cannot be imported, as on a machine without the extra.
    code = ("import sys; sys.modules['quicktok'] = None\n"
            "import overspill\n"
            "overspill.ToolOutputStore(sys.argv[1], durable=False)\n"
            "try:\n"
            "    overspill.ToolOutputStore(sys.argv[1], config={'tool_output': {'max_tokens': 100}})\n"
            "except overspill.ConfigError as error:\n"
            "    print(error)\n")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "overspill[tokens]" in done.stdout and "max_tokens" in done.stdout


def test_the_mcp_configuration_carries_max_tokens():
    assert limits_config(400, 8192, {}, max_tokens=2000) == {
        "tool_output": {"max_lines": 400, "max_bytes": 8192, "max_tokens": 2000}}
    assert "max_tokens" not in limits_config(None, None, {})["tool_output"]


def test_the_command_line_takes_max_tokens(tmp_path, subprocess_env):
    command = [sys.executable, "-m", "overspill", "run", "--data-dir", str(tmp_path), "--session", "s",
               "--max-tokens", "60", "--json", "--", sys.executable, "-c", "print(' '.join(map(str, range(5000))))"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=subprocess_env)
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["truncated"]
    bad = subprocess.run([sys.executable, "-m", "overspill", "mcp", "--max-tokens", "0"], capture_output=True,
                         text=True, timeout=60, env=subprocess_env)
    assert bad.returncode == 2 and "max-tokens" in bad.stderr


def test_a_str_holding_lone_surrogates_is_counted_as_shown(tmp_path):
    # A str from os.fsdecode holds surrogate escapes; quicktok refuses them (a raw TypeError out of
    # truncate with max_tokens set): each counts as the U+FFFD the model is shown for it.
    count = counter()
    assert count("a\udce9b\ud800") == count("a\ufffdb\ufffd")
    store = ToolOutputStore(tmp_path, durable=False, config={"tool_output": {"max_tokens": 200}})
    small = "caf\udce9"
    assert store.truncate("s", "c", small).content == small
    names = "".join(f"fichier-{i}-\udce9t\udce9.txt\n" for i in range(5000))
    result = store.truncate("s", "d", names)
    assert result.truncated and "\ufffd" in result.content and preview_tokens(result.content) <= 202
    with store.view("s", result.resource.uri) as (_, stored):
        assert bytes(stored) == names.encode("utf-8", "surrogateescape")


def test_an_output_not_stored_is_previewed_within_the_token_bound(tmp_path):
    # Spilling off past the 1 MiB capture, or no store to hold it: the preview from memory ignored
    # max_tokens (11,308 tokens shown at --max-tokens 200), and an output within the bytes and
    # lines but over the tokens was shown whole.  Both now keep the bound, as a stored output does.
    from overspill import tools
    from overspill.config import resolve_limits
    from overspill.errors import StorageError
    from overspill.tools.bash import execute

    count = counter()
    wide = (f"{sys.executable} -c \"import sys\nfor i in range(300000): "
            f"print('line %d alpha beta gamma delta %s' % (i, 'x' * (i % 50)))\"")
    with ToolOutputStore(tmp_path / "data", durable=False, config={"tool_output": {"max_tokens": 200}}) as store:
        result = tools.bash(store, "s", "c", wide, spill=False)
    assert result.truncated and result.resource is None and not result.is_error
    shown = result.output.split("\n\nexit code")[0]
    marker = [line for line in shown.split("\n") if "omitted here" in line]
    assert len(marker) == 1
    assert count(shown.replace(marker[0], "")) <= 200 + 5, count(shown)  # (+5: the blank lines around it)
    assert shown.startswith("line 0 alpha") and "line 299999 alpha" in shown

    def unusable() -> ToolOutputStore:
        raise StorageError(0, "the output folder could not be opened")

    # Within 51,200 bytes and 2,000 lines, over 200 tokens: not shown whole.
    small = f"{sys.executable} -c \"for i in range(800): print('w%d' % (i * 7919), i)\""
    limits = resolve_limits({"tool_output": {"max_tokens": 200}})
    ran = execute(None, "s", "c", small, timeout=60, limits=limits, open_store=unusable)
    assert ran.truncated and ran.storage_error is not None and "could not be stored" in ran.shown
    kept = "\n".join(line for line in ran.shown.split("\n") if "omitted here" not in line)
    assert count(kept) <= 205, count(kept)
    within = execute(None, "s", "c", f"{sys.executable} -c \"print('hello')\"", timeout=60, limits=limits,
                     open_store=unusable)
    assert within.shown == "hello" and not within.truncated
