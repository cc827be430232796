"""The store's fast paths give exactly what the general paths give."""

from __future__ import annotations

import dataclasses

import pytest

from overspill import ToolOutputStore, TruncateResult


class Tagged(str):
    """A str subclass: takes the general argument check, must behave the same."""


@pytest.fixture
def store(tmp_path):
    with ToolOutputStore(tmp_path / "store", durable=False) as opened:
        yield opened


@pytest.mark.parametrize("content", ["", "one line", "a\nb\n" * 10, "é😀\udc80", b"raw \xff bytes"])
def test_under_the_limits_equals_the_plain_result(store, content):
    result = store.truncate("s", "c", content)
    expected_text = content if isinstance(content, str) else content.decode("utf-8", "replace")
    plain = TruncateResult(expected_text, False, None)
    assert result == plain and hash(result) == hash(plain) and repr(result) == repr(plain)
    assert type(result) is TruncateResult and dataclasses.asdict(result) == dataclasses.asdict(plain)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.content = "changed"  # type: ignore[misc]
    assert dataclasses.replace(result, truncated=True).truncated is True
    assert list(store.directory.iterdir()) == []


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        (dict(session_id=1), TypeError),
        (dict(session_id=""), ValueError),
        (dict(tool_call_id=None), TypeError),
        (dict(tool_call_id=""), ValueError),
        (dict(mime=""), ValueError),
        (dict(mime=b"text/plain"), TypeError),
        (dict(name=3), TypeError),
    ],
)
def test_bad_arguments_are_refused_as_before(store, arguments, error):
    call = {"session_id": "s", "tool_call_id": "c", **arguments}
    with pytest.raises(error):
        store.truncate(call.pop("session_id"), call.pop("tool_call_id"), "small", **call)


def test_str_subclasses_and_names_take_the_general_check(store):
    assert store.truncate(Tagged("s"), Tagged("c"), "small", mime=Tagged("text/x"), name="n").content == "small"
    over = store.truncate(Tagged("s"), "c", "x\n" * 5000, name="big")
    assert over.truncated and over.resource is not None and over.resource.name == "big"
