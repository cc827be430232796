"""When the tools treat bytes as binary: one sniff size, one place for the rules.

A file (read, grep) is binary when its first ``SNIFF_BYTES`` hold a NUL, as
ripgrep and git decide, so grep's Python fallback skips what ``rg`` skips.
A command's output (bash) is binary when its first ``SNIFF_BYTES`` hold a
NUL or are mostly invalid UTF-8: an output is shown to the model whole or as
a preview, and a preview of random bytes is worth less than their size and
first bytes.
"""

from __future__ import annotations

import codecs
from typing import BinaryIO

__all__ = ["SNIFF_BYTES", "file_is_binary", "is_binary"]

# How much of the start of a file or an output decides whether it is text.
SNIFF_BYTES = 8192


def file_is_binary(file: BinaryIO) -> bool:
    """Whether the file open at its start is binary (a NUL in its first
    ``SNIFF_BYTES``); the file is left at its start again."""
    binary = b"\0" in file.read(SNIFF_BYTES)
    file.seek(0)
    return binary


def is_binary(sample: bytes) -> bool:
    """Whether an output starting with ``sample`` is binary rather than text.

    Binary: a NUL byte, or mostly invalid UTF-8 (more than a quarter of the
    bytes are not part of a valid sequence; random bytes come to about half,
    text in a legacy 8-bit encoding to a few percent).  A sequence cut by the
    end of the sample counts as valid.
    """
    if b"\0" in sample:
        return True
    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    text = decoder.decode(sample, final=False)
    invalid = sum(1 for character in text if "\udc80" <= character <= "\udcff")
    return invalid * 4 > len(sample)
