"""A ``multipart/form-data`` body read part by part as it streams in.

Starlette's own form parsing spools files to disk; an upload here must go straight to
the bucket instead, so the body is fed to python-multipart's streaming parser and each
part is handed on as it arrives: text fields as (small, capped) strings, the file as
an async iterator of its bytes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from peertrain.dataset.domain.errors import InvalidUploadForm, UnsupportedMediaType

__all__ = ["FormPart", "StreamingForm", "boundary_of"]

_MAX_PARTS = 16
_MAX_HEADER = 8 * 1024


def boundary_of(content_type: str | None) -> bytes:
    """The multipart boundary of a ``Content-Type``, or 415."""
    media, params = parse_options_header(content_type or "")
    boundary = params.get(b"boundary")
    if media != b"multipart/form-data" or not boundary:
        raise UnsupportedMediaType(
            "send the dataset as multipart/form-data (a 'file' part and optional fields)"
        )
    return boundary


@dataclass
class FormPart:
    """One part: its field name, its filename (file parts only) and its bytes."""

    name: str
    filename: str | None
    content_type: str | None
    _form: StreamingForm = field(repr=False)

    async def data(self) -> AsyncIterator[bytes]:
        """The part's bytes as they arrive."""
        async for chunk in self._form._part_data():
            yield chunk

    async def text(self, limit: int) -> str:
        """A small text field, decoded (UTF-8); 422 beyond ``limit`` bytes."""
        buffer = bytearray()
        async for chunk in self.data():
            buffer += chunk
            if len(buffer) > limit:
                raise InvalidUploadForm(f"form field {self.name!r} is longer than {limit} bytes")
        try:
            text = buffer.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidUploadForm(f"form field {self.name!r} is not UTF-8") from None
        if "\x00" in text:  # the store cannot hold it (see peertrain.common.text)
            raise InvalidUploadForm(f"form field {self.name!r} holds a NUL character")
        return text


class StreamingForm:
    """Reads the parts of a multipart body from ``chunks``, one at a time.

    Parameters
    ----------
    chunks
        The request body as it streams in.
    boundary
        From the request's ``Content-Type``.
    """

    def __init__(self, chunks: AsyncIterator[bytes], boundary: bytes) -> None:
        self._chunks = chunks
        self._events: deque[tuple[str, bytes]] = deque()
        self._header_field = bytearray()
        self._header_value = bytearray()
        self._ended = False
        self._body_done = False
        self._parts = 0
        self._in_part = False
        self._parser = MultipartParser(
            boundary,
            {
                "on_part_begin": lambda: self._events.append(("begin", b"")),
                "on_part_data": self._on_data,
                "on_part_end": lambda: self._events.append(("end", b"")),
                "on_header_field": self._on_header_field,
                "on_header_value": self._on_header_value,
                "on_header_end": self._on_header_end,
                "on_headers_finished": lambda: self._events.append(("headers", b"")),
                "on_end": self._on_end,
            },
            max_header_count=8,
            max_header_size=_MAX_HEADER,
        )

    # -- parser callbacks -------------------------------------------------------------

    def _on_data(self, data: bytes, start: int, end: int) -> None:
        self._events.append(("data", bytes(data[start:end])))

    def _on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_field += data[start:end]

    def _on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def _on_header_end(self) -> None:
        self._events.append(("header", bytes(self._header_field) + b"\0" + self._header_value))
        self._header_field.clear()
        self._header_value.clear()

    def _on_end(self) -> None:
        self._ended = True

    # -- pulling ----------------------------------------------------------------------

    async def _next_event(self) -> tuple[str, bytes] | None:
        while not self._events:
            if self._body_done:
                if not self._ended:
                    raise InvalidUploadForm("the multipart body ended before its closing boundary")
                return None
            try:
                chunk = await anext(self._chunks)
            except StopAsyncIteration:
                self._body_done = True
                try:
                    self._parser.finalize()
                except MultipartParseError as exc:
                    raise InvalidUploadForm(f"malformed multipart body: {exc}") from None
                continue
            if not chunk:
                continue
            try:
                self._parser.write(chunk)
            except MultipartParseError as exc:
                raise InvalidUploadForm(f"malformed multipart body: {exc}") from None
        return self._events.popleft()

    async def next_part(self) -> FormPart | None:
        """The next part (after skipping what is left of the current one), or None."""
        headers: dict[str, bytes] = {}
        while True:
            event = await self._next_event()
            if event is None:
                return None
            kind, payload = event
            if kind == "begin":
                self._parts += 1
                if self._parts > _MAX_PARTS:
                    raise InvalidUploadForm(f"more than {_MAX_PARTS} form parts")
                headers = {}
            elif kind == "header":
                name, _, value = payload.partition(b"\0")
                headers[name.decode("latin-1").lower()] = value
            elif kind == "headers":
                self._in_part = True
                return self._make_part(headers)
            elif kind == "end":
                self._in_part = False

    def _make_part(self, headers: dict[str, bytes]) -> FormPart:
        disposition, params = parse_options_header(headers.get("content-disposition", b""))
        if disposition != b"form-data" or b"name" not in params:
            raise InvalidUploadForm("a form part has no Content-Disposition name")
        name = params[b"name"].decode("utf-8", "replace")
        raw_filename = params.get(b"filename")
        filename = raw_filename.decode("utf-8", "replace") if raw_filename is not None else None
        if filename is not None and "\x00" in filename:
            raise InvalidUploadForm(f"the filename of form part {name!r} holds a NUL character")
        ctype = headers.get("content-type")
        return FormPart(name, filename, ctype.decode("latin-1") if ctype else None, self)

    async def _part_data(self) -> AsyncIterator[bytes]:
        while self._in_part:
            event = await self._next_event()
            if event is None:
                raise InvalidUploadForm("the multipart body ended inside a part")
            kind, payload = event
            if kind == "data":
                yield payload
            elif kind == "end":
                self._in_part = False
