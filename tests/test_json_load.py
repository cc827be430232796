"""``_json_load.loads`` (a record's JSON without importing json) against ``json.loads`` itself."""

from __future__ import annotations

import json
import math

from hypothesis import example, given
from hypothesis import strategies as st

from overspill._json_load import loads

_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                     max_leaves=12)


def outcome(parse, data: bytes) -> object:
    try:
        value = parse(data)
    except ValueError:
        return ValueError
    except RecursionError:
        return RecursionError
    # NaN never equals itself: compare its repr.
    return ("nan",) if isinstance(value, float) and math.isnan(value) else value


@given(_JSON, st.sampled_from(["", " ", "\n\t", "\r\n "]), st.sampled_from(["", " ", "\n", "x", "{}", " 1"]))
def test_documents_parse_as_json_parses_them(value, before, after):
    for ensure_ascii in (True, False):
        data = (before + json.dumps(value, ensure_ascii=ensure_ascii) + after).encode("utf-8", "surrogatepass")
        assert outcome(loads, data) == outcome(json.loads, data)


@given(st.binary(max_size=40))
@example(b"\xef\xbb\xbf{}")  # a UTF-8 byte-order mark: json decodes it as utf-8-sig
@example(b'\x00{\x00}')  # UTF-16
@example(b"NaN  ")
@example(b"[1, -Infinity]")
@example(b"  ")
@example(b"{\"a\": 1} x")
@example(b"\"\xed\xa0\x80\"")  # a lone surrogate, passed through
@example(b"[" * 100_000 + b"]" * 100_000)
def test_any_bytes_give_what_json_gives(data):
    assert outcome(loads, data) == outcome(json.loads, data)


def test_malformed_json_is_a_value_error_before_json_is_imported():
    """The C scanner raises its JSONDecodeError only when ``json.decoder`` is
    loaded; without it, a syntax error must still be a ValueError (a damaged
    record is then not found, never a SystemError)."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from overspill._json_load import loads\n"
        "from overspill.records import new_id, parse_record\n"
        "from overspill.errors import ResourceNotFoundError\n"
        "assert 'json.decoder' not in sys.modules\n"
        "for data in (b'{\"a\": 1,}', b'{\"a\" 1}', b'[1, 2', b'{\"a\": tru}'):\n"
        "    try:\n"
        "        loads(data)\n"
        "    except ValueError:\n"
        "        pass\n"
        "    else:\n"
        "        raise AssertionError(data)\n"
        "try:\n"
        "    parse_record(b'{\"version\": 1,}', new_id())\n"
        "except ResourceNotFoundError:\n"
        "    pass\n"
        "else:\n"
        "    raise AssertionError('parsed')\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
