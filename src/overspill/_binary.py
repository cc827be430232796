"""When bytes count as binary: one sniff size, two rules for two purposes.

* A **file** (the read tool) is binary when its first ``SNIFF_BYTES`` hold
  a NUL, as git decides, or (found as it reads) a line it would show does, as
  rg and grep decide; a file in a legacy 8-bit encoding stays text.  The
  grep tool skips these too, and also a file with a NUL further on, as
  ``rg`` does (it stops at the NUL and drops the file); its Python search
  reads the whole file anyway, so it applies rg's rule, not this sniff alone.
* A command's **output** (bash, and the background jobs' results) is binary
  by the file rule or when its first ``SNIFF_BYTES`` are mostly invalid
  UTF-8, with at least ``MIN_INVALID_BYTES`` invalid bytes as evidence.  An
  output is shown to the model, whole or as a preview, and a preview of
  random bytes is worth less than their size and first bytes, so this rule
  is stricter about what it shows as text; but a few bytes of legacy 8-bit
  text (Latin-1 ``été``: 2 invalid bytes of 4) are text, shown with U+FFFD.
"""

from __future__ import annotations

import codecs

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up (issue 21); annotations are never evaluated
    from typing import BinaryIO

__all__ = ["BINARY_MIME", "MIN_INVALID_BYTES", "SNIFF_BYTES", "file_is_binary", "output_is_binary"]

# How much of the start of a file or an output decides whether it is binary.
SNIFF_BYTES = 8192
# The fewest invalid UTF-8 bytes that make an output binary by their share: a short
# output in a legacy 8-bit encoding is often mostly accented letters ("été", "né"),
# while random bytes reach this many by their 40th byte or so.  From 64 bytes on the
# share alone decides (a quarter of them is already 16); a shorter output needs these
# 16, else it is text, shown with its invalid bytes as U+FFFD as a longer Latin-1 one is.
MIN_INVALID_BYTES = 16
# The MIME type a binary output is stored under.
BINARY_MIME = "application/octet-stream"


def _holds_nul(sample: bytes) -> bool:
    """The file rule, as ripgrep and git apply it."""
    return b"\0" in sample


def file_is_binary(file: BinaryIO) -> bool:
    """Whether the file open at its start is binary (a NUL in its first
    ``SNIFF_BYTES``); the file is left at its start again."""
    binary = _holds_nul(file.read(SNIFF_BYTES))
    file.seek(0)
    return binary


def output_is_binary(sample: bytes) -> bool:
    """Whether a command's output starting with ``sample`` is binary rather than text.

    Binary: a NUL byte, or mostly invalid UTF-8: more than a quarter of the
    bytes are not part of a valid sequence (random bytes come to about half,
    text in a legacy 8-bit encoding to a few percent), and at least
    ``MIN_INVALID_BYTES`` of them (a few words of Latin-1 can be half
    accented letters; a ratio over so few bytes proves nothing).  A sequence
    cut by the end of the sample counts as valid.
    """
    if _holds_nul(sample):
        return True
    if len(sample) < MIN_INVALID_BYTES:
        return False  # too few bytes to hold enough invalid ones (the decoding is not needed)
    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    text = decoder.decode(sample, final=False)
    invalid = sum(1 for character in text if "\udc80" <= character <= "\udcff")
    return invalid >= MIN_INVALID_BYTES and invalid * 4 > len(sample)
