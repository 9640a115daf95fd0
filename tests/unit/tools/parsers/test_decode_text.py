"""tools.parsers.base.decode_text: strict UTF-8, and a file with no content (or only blanks) is an error."""

from __future__ import annotations

import pytest

from tools.errors import ParseError
from tools.parsers.base import decode_text


@pytest.mark.parametrize("data", [b"", b" ", b"\n\n", b"\t \r\n\x0b\x0c", "\u00a0\u2028\u3000\x85\n".encode()])
def test_blank_files_are_empty(data: bytes) -> None:
    with pytest.raises(ParseError, match="file is empty"):
        decode_text(data, path="p")
    assert decode_text(data, path="p", allow_empty=True) == data.decode()


@pytest.mark.parametrize("data", [b"x", b"\n x\n", b"\x00", "\u200b".encode(), b"# HELP a b\n" * 1000])
def test_files_with_content_decode_whole(data: bytes) -> None:
    assert decode_text(data, path="p") == data.decode()


def test_bytes_that_are_not_utf8_name_line_and_offset() -> None:
    with pytest.raises(ParseError, match=r"not UTF-8 text \(byte 0xff at offset 3\)"):
        decode_text(b"ab\n\xff", path="p")
