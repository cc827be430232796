"""The wrapper's cut of an upstream's ``structuredContent`` to a room (``mcp_bound._shrunk``) and
the choice of a bounded result's ``structuredContent`` under an ``outputSchema``
(``mcp_bound.conforming``), checked against their spec on any JSON value."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install 'overspill[mcp]'")
from jsonschema.validators import validator_for  # noqa: E402  (a dependency of the SDK)

from overspill import Limits  # noqa: E402
from overspill.mcp_bound import _CHECKS, _ERRORS, _duplicates, _emptied, _shrunk, conforming  # noqa: E402

_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                     st.text(alphabet=st.sampled_from(["a", "\n", '"', "é", "中", "😀", "\x00"]), max_size=300))
json_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=30), st.dictionaries(st.text(max_size=5), inner, max_size=6)), max_leaves=120)


def shown(value) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


def is_cut_of(cut, value) -> bool:
    """Whether ``cut`` is ``value`` with strings cut to a prefix, and each array and object either
    with every item (key) kept in order, each a cut of its own, or a prefix of them (the last
    kept one itself possibly cut)."""
    if isinstance(value, str):
        return isinstance(cut, str) and value.startswith(cut)
    if type(cut) is not type(value):
        return False
    if not isinstance(value, (list, dict)):
        return cut == value
    if len(cut) > len(value):
        return False
    pairs, kept = list(value.items() if isinstance(value, dict) else enumerate(value)), list(
        cut.items() if isinstance(cut, dict) else enumerate(cut))
    if [key for key, _ in kept] == [key for key, _ in pairs] and all(
            is_cut_of(part, member) for (_, part), (_, member) in zip(kept, pairs)):
        return True  # every key (or item) kept, each cut
    whole = kept[:-1] if kept and kept[-1] != pairs[len(kept) - 1] else kept  # a prefix, its last one cut
    return whole == pairs[:len(whole)] and (whole is kept or (
        kept[-1][0] == pairs[len(kept) - 1][0] and is_cut_of(kept[-1][1], pairs[len(kept) - 1][1])))


def size_of(value) -> tuple[int, int]:
    text = shown(value)
    return len(text.encode("utf-8", "surrogatepass")), text.count("\n")


@given(json_values, st.integers(-50, 3000), st.integers(-5, 120), st.booleans())
def test_a_cut_is_within_its_room_and_only_cuts(value, room_bytes, room_lines, every_item):
    room = (room_bytes, room_lines)
    cut = _shrunk(value, room, every_item)
    assert is_cut_of(cut, value)
    smallest = _emptied(value, 0, room, every_item)[0]
    assert is_cut_of(smallest, value)
    if room_bytes <= 0 or room_lines <= 0:
        assert cut == smallest  # no room: the smallest form, whatever its size
        return
    def fits(part) -> bool:
        size, newlines = size_of(part)
        return size <= room_bytes and newlines <= room_lines

    if fits(value):
        assert cut is value  # within already: as it is
        return
    # A cut that fits, or the smallest form; and one that fits whenever the smallest form does.
    assert cut == smallest or fits(cut)
    if fits(smallest):
        assert fits(cut)


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


# Regressions from a red-team pass of the cut: each failed before its fix.
PREVIEW = {**OURS, "text": "p" * 8000}  # a preview that fills the limits, as the store's does


def test_a_map_inside_a_model_is_emptied_or_cut_not_kept_whole():
    counts = {f"k{index}": index for index in range(20_000)}
    model = {"type": "object", "properties": {"counts": {"type": "object", "additionalProperties": {
        "type": "integer"}}, "total": {"type": "integer"}}, "required": ["counts", "total"]}
    merged = conforming(model, PREVIEW, {"counts": counts, "total": 5}, LIMITS)
    part = {key: merged[key] for key in ("counts", "total")}  # was every key: 407 KB
    assert merged == {**part, **PREVIEW} and part["total"] == 5 and len(part["counts"]) < 20_000
    assert list(part["counts"].items()) == list(counts.items())[:len(part["counts"])]
    assert size_of(part)[0] <= 8192 - size_of(PREVIEW)[0]  # the room the preview leaves
    wide = {**PREVIEW, "text": "p" * 8192}  # a preview of the whole room leaves none: the map is emptied
    assert conforming(model, wide, {"counts": counts, "total": 5}, LIMITS) == {"counts": {}, "total": 5, **wide}
    alone = conforming({**model, "additionalProperties": False}, PREVIEW, {"counts": counts, "total": 5}, LIMITS)
    assert alone["total"] == 5 and 10 < len(alone["counts"]) < 20_000
    assert list(alone["counts"].items()) == list(counts.items())[:len(alone["counts"])]
    assert size_of(alone)[0] <= 8192 and size_of(alone)[1] < 400


def test_only_the_string_the_preview_shows_is_swapped_for_it():
    fields = {f"f{index}": chr(97 + index) * 20_000 for index in range(6)}
    model = {"type": "object", "properties": {key: {"type": "string"} for key in fields}, "required": list(fields)}
    said = json.dumps(fields)
    kept = conforming(model, PREVIEW, fields, LIMITS, said)  # the preview is of the whole JSON, not of a field
    part = {key: kept[key] for key in fields}  # was the preview in each field: 51 KB
    assert kept == {**part, **PREVIEW} and all(fields[key].startswith(part[key]) for key in fields)
    assert size_of(part)[0] <= 8192 - size_of(PREVIEW)[0]
    full = {**PREVIEW, "text": "p" * 8192}
    assert conforming(model, full, fields, LIMITS, said) == {**{key: "" for key in fields}, **full}
    one = {"result": "r" * 20_000}
    assert conforming(TYPED, PREVIEW, one, LIMITS, one["result"]) == {"result": PREVIEW["text"]}


TYPED = {"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"],
         "additionalProperties": False}


def test_a_tuple_keeps_each_item_cutting_the_one_that_does_not_fit():
    pair = {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 2, "maxItems": 2}
    schema = {"type": "object", "properties": {"result": pair}, "required": ["result"], "additionalProperties": False}
    kept = conforming(schema, PREVIEW, {"result": [1, "x" * 50_000]}, LIMITS)
    assert kept is not None and kept["result"][0] == 1 and 4000 < len(kept["result"][1]) < 8192


@pytest.mark.parametrize("character", ["中", "😀", "\x00", "\\", "é"])
def test_a_string_of_wide_or_escaped_characters_keeps_what_fits(character):
    value = {"result": [character * 30_000, "next"]}
    cut = _shrunk(value, (8192, 399))
    (kept,) = cut["result"]
    assert value["result"][0].startswith(kept)
    assert 8192 - 24 < size_of(cut)[0] <= 8192  # was one character of "中" where 2,700 fit


def test_a_large_map_is_cut_by_a_walk_of_about_the_room():
    # Every member was measured and sorted about nine times (1M keys took 146 s): now the cut
    # stops at the first member over the room, whatever the map's size.
    schema = {"type": "object", "additionalProperties": {"type": "integer"}}
    counts = {f"k{index}": index for index in range(1_000_000)}
    kept = conforming(schema, PREVIEW, counts, LIMITS)
    assert 100 < len(kept) < 1000 and list(kept.items()) == list(counts.items())[:len(kept)]


def test_an_upstream_value_within_the_limits_is_kept_exact():
    schema = {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
              "required": ["items"]}
    upstream = {"items": [1, 2, 3]}
    assert conforming(schema, PREVIEW, upstream, LIMITS) is upstream  # was {"items": []} beside ours


def test_booleans_are_not_the_numbers_a_text_says():
    flags = [True, False] * 3000
    assert not _duplicates({"result": flags}, json.dumps([1, 0] * 3000))
    assert _duplicates({"result": flags}, json.dumps(flags))
    assert _duplicates({"result": "text"}, "text") and not _duplicates({"result": "text", "more": 1}, "text")
    assert not _duplicates({"result": 1}, "[" * 200_000)  # was RecursionError out of the wrapper's call


def test_a_model_too_wide_for_the_room_beside_the_preview_keeps_its_keys_at_their_smallest():
    fields = {f"f{index}": index for index in range(100)}
    schema = {"type": "object", "properties": {**{key: {"type": "integer"} for key in fields},
                                               "rows": {"type": "array"}}, "required": [*fields, "rows"]}
    upstream = {**fields, "rows": list(range(5000))}
    ours = {**OURS, "text": "p" * 7500}  # leaves a room that the hundred keys alone do not fit
    kept = conforming(schema, ours, upstream, LIMITS)
    assert kept == {**fields, "rows": [], **ours}  # was the model cut alone, without the preview or link


def test_a_swapped_preview_leaves_the_rest_only_the_room_it_does_not_fill():
    schema = {"type": "object", "properties": {"note": {"type": "string"}, "summary": {"type": "string"}},
              "required": ["note", "summary"], "additionalProperties": False}
    upstream = {"note": "n" * 50_000, "summary": "s" * 8000}  # the rest within the limits on its own
    kept = conforming(schema, PREVIEW, upstream, LIMITS, upstream["note"])
    assert size_of(kept)[0] <= 8192  # was the preview and the whole summary: twice the limits
    assert upstream["note"].startswith(kept["note"]) and upstream["summary"].startswith(kept["summary"])


@pytest.mark.parametrize("items", [
    ["a" * 20_000, "b" * 20_000, "c" * 20_000],  # tuple[str, str, str], every item long
    ["x" * 50_000, 7],  # tuple[str, int], the first item long
])
def test_a_tuple_keeps_every_item_each_cut_to_its_share(items):
    kinds = [{"type": "string"} if isinstance(item, str) else {"type": "integer"} for item in items]
    pair = {"type": "array", "prefixItems": kinds, "minItems": len(items), "maxItems": len(items)}
    schema = {"type": "object", "properties": {"result": pair}, "required": ["result"]}
    kept = conforming(schema, PREVIEW, {"result": items}, LIMITS)  # was None: the first item cut, the rest dropped
    assert kept is not None and len(kept["result"]) == len(items) and size_of(kept)[0] <= 8192
    for part, item in zip(kept["result"], items):
        assert part == item if not isinstance(item, str) else (item.startswith(part) and len(part) > 2000)


def test_a_list_with_min_items_keeps_as_many_each_cut():
    schema = {"type": "object", "properties": {"rows": {"type": "array", "minItems": 2, "items": {"type": "string"}}},
              "required": ["rows"], "additionalProperties": False}
    kept = conforming(schema, PREVIEW, {"rows": ["x" * 6000, "y" * 6000]}, LIMITS)
    assert [len(row) > 3000 for row in kept["rows"]] == [True, True] and size_of(kept)[0] <= 8192


def test_a_word_is_kept_whole_or_not_at_all():
    # An enum's value cut to a prefix ("" or "e" for "error") is refused by the schema, and an id
    # or a date cut short is another one: a string of a word's length is never cut.
    rows = [{"status": "error", "log": "x" * 30_000}, {"status": "ok", "log": "y" * 30_000}]
    assert _emptied({"result": rows}, 0, (8192, 399), True)[0] == {
        "result": [{"status": "error", "log": ""}, {"status": "ok", "log": ""}]}
    for room in range(100, 200, 7):  # tight: about the smallest (a status was cut to "e" or "")
        kept = _shrunk({"result": rows}, (room, 20), True)
        statuses = [row["status"] for row in kept["result"]]
        assert statuses == ["error", "ok"][:len(statuses)] and (len(statuses) == 2 or room < 128)
    assert _shrunk({"id": "0123456789abcdef" * 4, "body": "b" * 9000}, (200, 10))["id"] == "0123456789abcdef" * 4



NULLABLE = {"anyOf": [{"type": "null"}, {"type": "string", "minLength": 50_000}]}


def test_a_member_whose_cut_the_schema_refuses_is_the_smallest_value_it_admits_red_team_b14_1():
    # A string is only ever cut to a prefix of itself, which "minLength" refuses: overspill's own
    # fields were shown (None), which the schema refuses too, though {"v": null} fits and conforms.
    closed = {"type": "object", "properties": {"v": NULLABLE}, "required": ["v"], "additionalProperties": False}
    assert conforming(closed, PREVIEW, {"v": "z" * 60_000}, LIMITS) == {"v": None}
    # Open to other keys: overspill's fields beside it, as a cut that conforms gets them.
    opened = {key: value for key, value in closed.items() if key != "additionalProperties"}
    assert conforming(opened, PREVIEW, {"v": "z" * 60_000}, LIMITS) == {"v": None, **PREVIEW}
    # Deeper, and in each row kept: a member is replaced, never the value it is in.
    rows = {"type": "object", "properties": {"rows": {"type": "array", "items": closed}}, "required": ["rows"],
            "additionalProperties": False}
    kept = conforming(rows, PREVIEW, {"rows": [{"v": "z" * 60_000}, {"v": "y" * 60_000}]}, LIMITS)
    assert kept == {"rows": [{"v": None}]}
    # The schema's own words first, in a fixed order (a const, an enum's first member, a default),
    # then null, false, 0, "", [] and {}: the first the member's schema admits.
    for member, smallest in [
        ({"anyOf": [{"const": "none"}, {"type": "string", "minLength": 50_000}]}, "none"),
        ({"anyOf": [{"enum": ["gone", "left"]}, {"type": "string", "minLength": 50_000}]}, "gone"),
        ({"anyOf": [{"type": "integer"}, {"type": "string", "minLength": 50_000}], "default": -1}, -1),
        ({"type": ["string", "boolean"], "minLength": 50_000}, False),
        ({"type": ["string", "integer"], "minLength": 50_000}, 0),
        ({"type": ["string", "array"], "minLength": 50_000}, []),
        ({"type": ["string", "object"], "minLength": 50_000}, {}),
    ]:
        schema = {"type": "object", "properties": {"v": member}, "required": ["v"], "additionalProperties": False}
        assert conforming(schema, PREVIEW, {"v": "z" * 60_000}, LIMITS) == {"v": smallest}, member
    # Nothing small that the member's schema admits: still None.
    needy = {**closed, "properties": {"v": {"type": "string", "minLength": 50_000}}}
    assert conforming(needy, PREVIEW, {"v": "z" * 60_000}, LIMITS) is None


def test_a_map_whose_first_member_is_over_the_limits_keeps_the_members_that_fit_red_team_b14_2():
    # A map was cut to a prefix of its members: a first key over the limits left none, which
    # "minProperties" refuses, though {"a": 2} fits and conforms.
    schema = {"type": "object", "additionalProperties": {"type": "integer"}, "minProperties": 1}
    assert conforming(schema, PREVIEW, {"k" * 20_000: 1, "a": 2}, LIMITS) == {"a": 2}
    # In order, skipping each that does not fit (a key or a member over what is left).
    counts = {"a": 1, "b" * 20_000: 2, "c": 3, "d": 4}
    assert conforming({**schema, "minProperties": 3}, PREVIEW, counts, LIMITS) == {"a": 1, "c": 3, "d": 4}
    nested = {"type": "object", "properties": {"counts": schema}, "required": ["counts"], "additionalProperties": False}
    assert conforming(nested, PREVIEW, {"counts": {"k" * 20_000: 1, "a": 2}}, LIMITS) == {"counts": {"a": 2}}
    # A walk of about the room past the first member skipped, whatever the map's size.
    many = {"k" * 20_000: 0, **{f"k{index}": index for index in range(1_000_000)}}
    kept = conforming(schema, PREVIEW, many, LIMITS)
    assert 100 < len(kept) < 1000 and list(kept.items()) == list(many.items())[1:len(kept) + 1]
    assert conforming({**schema, "minProperties": 5000}, PREVIEW, many, LIMITS) is None



def test_a_map_skipping_a_key_over_the_limits_still_cuts_a_long_member_review_r20_1():
    # The skipping cut skipped every member over what was left, so a first key over the limits and
    # a long value after it left nothing (None), though that value cut to fit conforms.
    schema = {"type": "object", "additionalProperties": {"type": "string"}, "minProperties": 1}
    kept = conforming(schema, PREVIEW, {"k" * 20_000: "x", "b": "y" * 20_000}, LIMITS)
    assert kept is not None and list(kept) == ["b"] and 1000 < len(kept["b"]) < 20_000
    assert set(kept["b"]) == {"y"} and len(shown(kept).encode()) <= 8192
    # The room is shared among the members kept, as an object's is: a short one after the long one
    # is kept too ("minProperties": 2).
    kept = conforming({**schema, "minProperties": 2}, PREVIEW, {"k" * 20_000: "x", "b": "y" * 20_000, "c": "s"},
                      LIMITS)
    assert kept is not None and list(kept) == ["b", "c"] and kept["c"] == "s"
    assert 1000 < len(kept["b"]) < 20_000 and len(shown(kept).encode()) <= 8192
    # Nested, and with a key too long for what is left skipped still.
    nested = {"type": "object", "properties": {"m": schema}, "required": ["m"], "additionalProperties": False}
    kept = conforming(nested, PREVIEW, {"m": {"k" * 20_000: "x", "b": "y" * 20_000}}, LIMITS)
    assert kept is not None and list(kept["m"]) == ["b"] and 1000 < len(kept["m"]["b"]) < 20_000



class Counted(dict):
    """A (sub)schema that counts how often a validator is made over it: once per evaluation of
    it against a value (``descend``), so the work of validations is observable, whatever their time."""

    seen = 0

    def items(self):
        Counted.seen += 1
        return super().items()


def test_mending_makes_a_bounded_number_of_validations_and_invents_no_rows_review_r20_2():
    # Step 6 took every error of a value (``iter_errors``), up to four rounds a cut, and checked each
    # small candidate again for every cut: rows each refused by an enum were all evaluated, round
    # after round, and became the enum's first member (values the upstream never sent), though
    # {"rows": []} conforms.
    items = Counted({"enum": [f"e{index}" for index in range(2000)]})
    rows = {"type": "object", "properties": {"rows": {"type": "array", "items": items}}, "required": ["rows"],
            "additionalProperties": False}
    Counted.seen = 0
    assert conforming(rows, PREVIEW, {"rows": ["b"] * 5000}, LIMITS) == {"rows": []}
    assert Counted.seen <= 6 + _CHECKS * (_ERRORS + 1)  # about 400 rows fit: each was evaluated 3 times and more
    # A refused item is dropped where minItems allows, replaced only where it does not.
    letters = {**rows, "properties": {"rows": {"type": "array", "items": {"enum": ["a", "c"]}, "minItems": 1}}}
    assert conforming(letters, PREVIEW, {"rows": ["a", "b", "a", "b" * 9000]}, LIMITS) == {"rows": ["a", "a"]}
    letters["properties"]["rows"]["minItems"] = 3
    assert conforming(letters, PREVIEW, {"rows": ["a", "b", "a", "b" * 9000]}, LIMITS) == {"rows": ["a", "a", "a"]}
    # Nothing conforms, and each validation of a deep anyOf is slow: steps 1 to 5's six validations
    # and step 6's budget of them at most (each small candidate checked once, not once a cut).
    member = Counted({"type": "string", "minLength": 50_000})
    for _ in range(6):
        member = Counted({"anyOf": [member, Counted({"allOf": [member, Counted({"type": "string"})]})]})
    closed = {"type": "object", "properties": {"v": member}, "required": ["v"], "additionalProperties": False}
    Counted.seen = 0
    validator_for(closed)(closed).is_valid({"v": "z"})
    one = Counted.seen
    Counted.seen = 0
    assert conforming(closed, PREVIEW, {"v": "z" * 60_000}, LIMITS) is None
    assert Counted.seen <= (6 + _CHECKS) * one



@given(json_values, st.integers(1, 3000), st.integers(1, 120), st.booleans())
def test_a_cut_skipping_a_maps_members_is_within_its_room_as_a_prefix_is(value, room_bytes, room_lines, every_item):
    # The fallback that keeps a map's members that fit (red team B14's second defect) keeps the
    # prefix's promise: a cut that fits whenever the smallest form does, or the smallest form.
    room = (room_bytes, room_lines)
    cut = _shrunk(value, room, every_item, True)
    smallest = _emptied(value, 0, room, every_item)[0]
    size, newlines = size_of(cut)
    assert cut == smallest or (size <= room_bytes and newlines <= room_lines)
    least = size_of(smallest)
    if least[0] <= room_bytes and least[1] <= room_lines:
        assert size <= room_bytes and newlines <= room_lines


def _too_large(*args, **kwargs):
    raise OSError(27, "File too large")  # EFBIG: past RLIMIT_FSIZE, or a full disk's ENOSPC alike


@pytest.mark.parametrize("failure", ["quota", "write"])
def test_a_result_the_store_cannot_keep_is_its_bounded_not_stored_preview(tmp_path, monkeypatch, failure):
    # A quota too small for the output's record: bound took the unstored result (no resource) for one
    # within the limits and passed the whole 210 KB on.  A failed write: the StorageError left bound, and the
    # wrapper's client got a JSON-RPC error (code 0) instead of the result.
    from overspill import ToolOutputStore
    from overspill.mcp_bound import bound

    limits = {"max_bytes": 8192, **({"max_total_bytes": 100} if failure == "quota" else {})}
    store = ToolOutputStore(tmp_path, config={"tool_output": limits}, durable=False)
    if failure == "write":
        monkeypatch.setattr("os.write", _too_large)
    text = "".join(f"line {index} of output\n" for index in range(10000))
    image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    structured = {"rows": list(range(5000))}
    for raw in ({"content": [{"type": "text", "text": text}, image]},
                {"content": [{"type": "text", "text": "rows"}], "structuredContent": structured},
                {"content": [{"type": "text", "text": text}], "structuredContent": structured}):
        shown = bound(raw, store, "s", "c", True)
        assert shown is not raw and len(json.dumps(shown)) < 4 * 8192  # bounded: previews, never the whole
        said = [block["text"] for block in shown["content"] if block["type"] == "text"]
        previews = said if raw["content"][0]["text"] == text else said[1:]
        assert previews and all("output not stored" in preview for preview in previews)
        why = "cannot hold even its record" if failure == "quota" else "File too large"
        assert all(why in preview for preview in previews)
        if raw["content"][0]["text"] == text:
            assert said[0].startswith("line 0 of output\n") and said[0].rstrip().endswith("line 9999 of output")
        assert not any(block["type"] == "resource_link" for block in shown["content"])
        assert "uri" not in shown["structuredContent"] and "structured" not in shown["structuredContent"]
        assert shown["content"][-1] == image or image not in raw["content"]
    assert store.resources("s") == []


def test_a_structured_copy_of_a_text_within_the_limits_is_not_measured_on_its_own(tmp_path):
    # Red team B f01: fits() and bound() measured a structuredContent that repeats the text (the SDK's
    # shapes) on its own when the text fitted, so a copy made larger by JSON's escaping or indentation
    # was stored and previewed beside the whole text: more than the upstream sent, and over the limits.
    from overspill import ToolOutputStore
    from overspill.mcp_bound import bound, fits

    store = ToolOutputStore(tmp_path, config={"tool_output": {"max_bytes": 8192, "max_lines": 400}},
                            durable=False)  # the wrapper's limits
    limits = store.limits()
    quotes = '"' * 4100
    rows = [{"i": index, "name": f"row {index}"} for index in range(100)]
    per_row = [{"type": "text", "text": json.dumps(row, indent=2)} for row in rows]  # MCPServer: a block each
    copies = [{"content": [{"type": "text", "text": quotes}], "structuredContent": {"result": quotes}},
              {"content": per_row, "structuredContent": {"result": rows}},
              {"content": [{"type": "text", "text": json.dumps(rows)}], "structuredContent": {"result": rows}}]
    for raw in copies:
        copy = json.dumps(raw["structuredContent"], indent=2)
        assert len(copy.encode()) > 8192 or copy.count("\n") >= 400  # the copy alone is over the limits
        assert fits(raw, limits) and bound(raw, store, "s", "c", True) is raw
    assert store.resources("s") == []
    assert _duplicates({"result": ["a", 1]}, "a\n1", ["a", "1"])
    assert not _duplicates({"result": ["a", 1]}, "a\n1", ["a", "true"])
    assert not _duplicates({"result": [1, 2]}, "1\n2", ["1"])

    # Not a copy (a row differs, or more is said): measured and stored on its own, as before.
    for structured in ({"result": rows[:99] + [{"i": 99, "name": "another"}]}, {"result": rows, "more": 1}):
        raw = {"content": per_row, "structuredContent": structured}
        assert not fits(raw, limits)
        shown = bound(raw, store, "s", "c", True)
        assert shown["content"][:100] == per_row and "uri" in shown["structuredContent"]


def test_a_stored_structured_content_is_named_by_structured_uri_whether_or_not_the_text_fits_red_team_f10_f03(
        tmp_path):
    # Red team F10 f03: the README names a stored structuredContent by structured_uri, but the field was set
    # only when the text blocks were over the limits too; when the text fitted, the stored JSON was only
    # under uri.  Now structured_uri names it in both cases (uri stays what it was: the text's or the JSON's).
    from overspill import ToolOutputStore
    from overspill.mcp_bound import bound

    store = ToolOutputStore(tmp_path, config={"tool_output": {"max_bytes": 8192, "max_lines": 400}},
                            durable=False)  # the wrapper's limits

    def whole(uri: str) -> str:
        pages, offset = [], 0
        while offset is not None:
            page = store.read("s", uri, offset=offset)
            pages.append(page.content)
            offset = page.next
        return "".join(pages)

    structured = {"rows": [{"row": index, "text": "r" * 40} for index in range(2000)]}
    text = "".join(f"line {index}\n" for index in range(5000))
    for said, text_over in (("2000 rows", False), (text, True)):
        shown = bound({"content": [{"type": "text", "text": said}], "structuredContent": structured},
                      store, "s", f"c-{text_over}", True)
        data = shown["structuredContent"]
        assert json.loads(whole(data["structured_uri"])) == structured
        if text_over:  # uri is the text's, stored too; structured_uri the JSON's
            assert data["uri"] != data["structured_uri"]
            assert whole(data["uri"]) == text
        else:  # the text passes through; uri and the fields beside it are the JSON's
            assert data["uri"] == data["structured_uri"] and shown["content"][0] == {"type": "text", "text": said}
            assert data["size"] == len(json.dumps(structured, ensure_ascii=False, indent=2).encode())


def test_a_text_the_store_keeps_whole_fits_with_its_final_newline(tmp_path):
    # Review R16 (2): mcp_bound._within restated the store's limits with its own line rule (newlines >=
    # max_lines: over) while store.truncate lets a final newline end the last line, so a text of exactly
    # max_lines lines ending in a newline, which truncate returns untouched, did not fit here (and the
    # PydanticAI adapter's own copy of the rule said it did).  Now both use text.fits_limits: what the
    # store keeps whole fits, and one more line does not.
    from overspill import ToolOutputStore
    from overspill.mcp_bound import error_fits, fits

    limits = Limits(max_lines=5, max_bytes=8192)
    store = ToolOutputStore(tmp_path, config={"tool_output": {"max_bytes": 8192, "max_lines": 5}}, durable=False)
    for text, kept in (("line\n" * 5, True), ("line\n" * 4 + "line", True), ("line\n" * 5 + "more", False),
                       ("line\n" * 6, False), ("x" * 8192, True), ("x" * 8193, False), ("é" * 4097, False)):
        assert (not store.truncate("s", "c", text).truncated) is kept, text[-10:]
        assert fits({"content": [{"type": "text", "text": text}]}, limits) is kept, text[-10:]
        assert error_fits(text, None, limits) is kept, text[-10:]


def test_an_error_result_whose_structured_content_nothing_conforms_to_has_none_red_team_n15_1(tmp_path):
    # Red team N15 (1): a bounded isError result of a tool with an outputSchema carried overspill's fields as
    # structuredContent, which the schema refuses and a client validating error results too (the TypeScript
    # SDK's) rejects, losing the error.  Where no cut of the upstream's own conforms, an error result has none
    # (it needs none, unlike a success); overspill's fields are under _meta, as for any result that conforms.
    from overspill import ToolOutputStore
    from overspill.mcp_bound import META_KEY, bound

    store = ToolOutputStore(tmp_path, config={"tool_output": {"max_bytes": 8192, "max_lines": 400}},
                            durable=False)  # the wrapper's limits
    schema = {"type": "object", "properties": {"result": {"type": "array", "minItems": 100_000}}, "required": ["result"]}
    rows = [{"i": index, "text": "r" * 50} for index in range(5000)]
    for is_error in (True, False):
        raw = {"content": [{"type": "text", "text": "failed: " + json.dumps(rows)}],
               "structuredContent": {"result": rows}, "isError": is_error}
        shown = bound(raw, store, "s", f"c-{is_error}", True, schema)
        assert shown.get("isError") is is_error and shown["content"][0]["text"].startswith("failed: ")
        if is_error:
            assert "structuredContent" not in shown
            ours = shown["_meta"][META_KEY]
            assert ours["uri"] == shown["content"][1]["uri"] and "structured_uri" in ours
        else:  # a success needs one: overspill's fields, as the README says, which such a client refuses
            assert "uri" in shown["structuredContent"] and "_meta" not in shown
