"""The streaming multipart reader: parts arrive whatever the chunking."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from peertrain.dataset.domain.errors import InvalidUploadForm, UnsupportedMediaType
from peertrain.dataset.ingest.form import StreamingForm, boundary_of
from peertrain.dataset.usecases.upload import safe_filename

BOUNDARY = b"----peertrain-boundary"


def body(parts: list[tuple[str, str | None, bytes]]) -> bytes:
    out = b""
    for name, filename, data in parts:
        disposition = f'form-data; name="{name}"'
        if filename is not None:
            disposition += f'; filename="{filename}"'
        out += b"--" + BOUNDARY + b"\r\n"
        out += f"Content-Disposition: {disposition}\r\n\r\n".encode() + data + b"\r\n"
    return out + b"--" + BOUNDARY + b"--\r\n"


async def chunked(data: bytes, size: int) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


async def read_all(form: StreamingForm) -> list[tuple[str, str | None, bytes]]:
    parts = []
    while (part := await form.next_part()) is not None:
        data = b"".join([chunk async for chunk in part.data()])
        parts.append((part.name, part.filename, data))
    return parts


@pytest.mark.parametrize("size", [1, 7, 64, 100_000])
async def test_parts_survive_any_chunking(size: int) -> None:
    parts = [
        ("name", None, b"my data"),
        ("file", "a.csv", b"a,b\r\n1,2\r\n--not-a-boundary\r\n" * 50),
        ("label_column", None, b"b"),
    ]
    form = StreamingForm(chunked(body(parts), size), BOUNDARY)
    assert await read_all(form) == parts


async def test_unread_parts_are_skipped() -> None:
    parts = [("file", "a.csv", b"x" * 10_000), ("name", None, b"n")]
    form = StreamingForm(chunked(body(parts), 333), BOUNDARY)
    first = await form.next_part()
    assert first is not None and first.filename == "a.csv"
    second = await form.next_part()
    assert second is not None and await second.text(100) == "n"
    assert await form.next_part() is None


async def test_truncated_and_oversized() -> None:
    data = body([("file", "a.csv", b"x" * 100)])
    form = StreamingForm(chunked(data[:-30], 50), BOUNDARY)
    with pytest.raises(InvalidUploadForm):
        await read_all(form)
    form = StreamingForm(chunked(body([("name", None, b"n" * 5000)]), 50), BOUNDARY)
    part = await form.next_part()
    assert part is not None
    with pytest.raises(InvalidUploadForm, match="longer"):
        await part.text(1024)


async def test_a_nul_in_a_field_or_a_filename_is_refused() -> None:
    form = StreamingForm(chunked(body([("name", None, b"a\x00b")]), 50), BOUNDARY)
    part = await form.next_part()
    assert part is not None
    with pytest.raises(InvalidUploadForm, match="NUL"):
        await part.text(1024)
    form = StreamingForm(chunked(body([("file", "a\x00.csv", b"a,b\r\n")]), 50), BOUNDARY)
    with pytest.raises(InvalidUploadForm, match="NUL"):
        await form.next_part()


def test_content_type_must_be_multipart() -> None:
    assert boundary_of(f"multipart/form-data; boundary={BOUNDARY.decode()}") == BOUNDARY
    for bad in (None, "text/csv", "multipart/form-data"):
        with pytest.raises(UnsupportedMediaType):
            boundary_of(bad)


def test_object_keys_get_safe_names() -> None:
    assert safe_filename("../../etc/passwd") == "passwd"
    assert safe_filename("C:\\x\\my data.csv") == "my_data.csv"
    assert safe_filename(".hidden") == "hidden"
    assert safe_filename(None) == "upload"


def test_missing_values_field_replaces_the_default_list() -> None:
    from peertrain.dataset.usecases.upload import _options

    assert _options({}, 0.1).missing_values is None
    chosen = _options({"missing_values": " unknown , N/A,"}, 0.1).missing_values
    assert chosen == ("", "unknown", "N/A")
    assert _options({"missing_values": ""}, 0.1).missing_values == ("",)
    with pytest.raises(InvalidUploadForm, match="missing_values"):
        _options({"missing_values": ",".join(f"t{i}" for i in range(60))}, 0.1)
