"""The wrapper's cut of an upstream's ``structuredContent`` to a room (``mcp_bound._shrunk``) and
the choice of a bounded result's ``structuredContent`` under an ``outputSchema``
(``mcp_bound.conforming``), checked against their spec on any JSON value."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install 'overspill[mcp]'")

from overspill import Limits  # noqa: E402
from overspill.mcp_bound import _shrunk, conforming  # noqa: E402

_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                     st.text(alphabet=st.sampled_from(["a", "\n", '"', "é", "中", "😀", "\x00"]), max_size=300))
json_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=30), st.dictionaries(st.text(max_size=5), inner, max_size=6)), max_leaves=120)


def shown(value) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


def is_cut_of(cut, value, every_key: bool = True) -> bool:
    """Whether ``cut`` is ``value`` with arrays cut to a prefix of their items (the last kept one
    itself possibly cut), strings to a prefix, and every object's keys kept in order (or, not
    ``every_key``, a prefix of its members cut as an array's items are)."""
    if isinstance(value, str):
        return isinstance(cut, str) and value.startswith(cut)
    if isinstance(value, list) or (isinstance(value, dict) and not every_key):
        if type(cut) is not type(value) or len(cut) > len(value):
            return False
        pairs, kept = list(value.items() if isinstance(value, dict) else enumerate(value)), list(
            cut.items() if isinstance(cut, dict) else enumerate(cut))
        whole = kept[:-1] if kept and kept[-1] != pairs[len(kept) - 1] else kept
        return whole == pairs[:len(whole)] and (whole is kept or (
            kept[-1][0] == pairs[len(kept) - 1][0] and is_cut_of(kept[-1][1], pairs[len(kept) - 1][1], every_key)))
    if isinstance(value, dict):
        return isinstance(cut, dict) and list(cut) == list(value) and all(
            is_cut_of(cut[key], member, every_key) for key, member in value.items())
    return cut == value and type(cut) is type(value)


@given(json_values, st.integers(-50, 3000), st.integers(-5, 120), st.booleans())
def test_a_cut_is_within_its_room_and_only_cuts(value, room_bytes, room_lines, every_key):
    cut = _shrunk(value, (room_bytes, room_lines), every_key)
    assert is_cut_of(cut, value, every_key)
    smallest = _shrunk(value, (0, 0), every_key)
    if room_bytes <= 0 or room_lines <= 0:
        assert cut == smallest  # no room: the smallest form, whatever its size
        return
    text = shown(value)
    if len(text.encode("utf-8", "surrogatepass")) <= room_bytes and text.count("\n") <= room_lines:
        assert cut is value  # within already: as it is
        return
    def fits(text: str) -> bool:
        return len(text.encode("utf-8", "surrogatepass")) <= room_bytes and text.count("\n") <= room_lines

    # A cut that fits, or the smallest form; and one that fits whenever the smallest form does.
    assert cut == smallest or fits(shown(cut))
    if fits(shown(smallest)):
        assert fits(shown(cut))


def test_a_large_list_keeps_the_longest_prefix_that_fits():
    rows = [{"i": index, "text": "r" * 50} for index in range(1000)]
    cut = _shrunk({"result": rows}, (8192, 399))
    kept = cut["result"]
    assert kept == rows[:len(kept)] and 50 < len(kept) < 1000
    assert len(shown({"result": rows[:len(kept) + 1]}).encode()) > 8192 or \
        shown({"result": rows[:len(kept) + 1]}).count("\n") > 399  # one row more would not fit


def test_an_object_shares_its_room_and_cuts_only_what_is_large():
    value = {"id": 7, "title": "small", "body": "b" * 100_000, "log": ["line %d" % n for n in range(5000)]}
    cut = _shrunk(value, (4096, 200))
    assert cut["id"] == 7 and cut["title"] == "small"
    assert 0 < len(cut["body"]) < 100_000 and 0 < len(cut["log"]) < 5000
    assert len(shown(cut).encode()) <= 4096 and shown(cut).count("\n") <= 200


ROW = {"type": "object", "properties": {"i": {"type": "integer"}}, "required": ["i"]}
LISTED = {"type": "object", "properties": {"result": {"type": "array", "items": ROW}}, "required": ["result"]}
CLOSED = {**LISTED, "additionalProperties": False}
OURS = {"uri": "tool-output://x", "size": 1, "lines": 1, "next_offset": 5, "text": "preview"}
LIMITS = Limits(max_lines=400, max_bytes=8192)


def test_conforming_prefers_ours_then_keeps_the_upstream_shape():
    rows = [{"i": index} for index in range(10_000)]
    assert conforming({"type": "object"}, OURS, {"result": rows}, LIMITS) is OURS
    merged = conforming(LISTED, OURS, {"result": rows}, LIMITS)
    assert {key: merged[key] for key in OURS} == OURS and merged["result"] == rows[:len(merged["result"])]
    alone = conforming(CLOSED, OURS, {"result": rows}, LIMITS)
    assert list(alone) == ["result"] and 0 < len(alone["result"]) < len(rows)
    assert alone["result"] == rows[:len(alone["result"])]
    # Nothing the schema admits can be had within the limits: None (overspill's own is shown).
    needy = {**CLOSED, "properties": {"result": {"type": "array", "items": ROW, "minItems": 9000}}}
    assert conforming(needy, OURS, {"result": rows}, LIMITS) is None


def test_a_large_map_keeps_a_prefix_of_its_members():
    # The SDK's server declares {"type": "object", "additionalProperties": {"type": "integer"}} for
    # a tool returning dict[str, int]: no key is required, and overspill's fields are not ints.
    schema = {"type": "object", "additionalProperties": {"type": "integer"}}
    counts = {f"k{index}": index for index in range(20_000)}
    kept = conforming(schema, OURS, counts, LIMITS)
    assert kept is not None and 10 < len(kept) < 20_000 and list(kept.items()) == list(counts.items())[:len(kept)]
    assert len(shown(kept).encode()) <= 8192 and shown(kept).count("\n") < 400
