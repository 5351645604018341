"""A message schema: one request or response, its versions, and its codecs.

Kafka generates one Java class per message from JSON files such as
``ApiVersionsRequest.json``.  We keep the same information, field by field,
as Python data (the parts, and the version rules they follow, are in
:mod:`kafka_net.protocol.fields`)::

    API_VERSIONS_RESPONSE = Schema(
        "ApiVersionsResponse", valid="0-4", flexible="3+",
        fields=[
            Field("error_code", INT16),
            Field("api_keys", Array(Struct(Field("api_key", INT16), ...))),
            Field("throttle_time_ms", INT32, versions="1+"),
        ])

and interpret it (``encode_interpreted`` / ``decode_interpreted``, the readable
reference).  ``encode`` / ``decode`` run the same rules compiled once per
version into straight-line Python: see :mod:`kafka_net.protocol.codegen`.
A Schema keeps its compiled codecs, so this module is the one that imports
the code generator; the generator reads only :mod:`.fields`.

A decoded message is a plain ``dict``; every field of the schema is present,
those absent at the decoded version holding their default, so handlers read
fields without checking versions.

The message modules (:mod:`kafka_net.protocol.messages`) import everything
they declare with from here: the field types and parts are re-exported.
"""

from __future__ import annotations

from dataclasses import dataclass, field as dc_field
from typing import Callable

from kafka_net.protocol import readable
from kafka_net.protocol.fields import (  # noqa: F401 -- re-exported: schemas import them here
    MAX_ARRAY_ELEMENTS, MAX_TAGGED_FIELDS, NO_VERSIONS, Array, Field, Struct, Versions,
    too_many_tagged_fields, walk_fields)
from kafka_net.protocol.primitives import Reader, Writer
from kafka_net.protocol.wire_types import (  # noqa: F401 -- re-exported: schemas import them here
    BOOL, BYTES, FLOAT64, INT8, INT16, INT32, INT64, RECORDS, STRING, UINT16, UINT32, UUID,
    ZERO_UUID)


@dataclass
class Schema:
    """A top-level request or response body for one API."""

    name: str
    valid: Versions | str
    flexible: Versions | str
    fields: list[Field] = dc_field(default_factory=list)

    def __post_init__(self) -> None:
        self.valid = Versions.parse(self.valid)
        self.flexible = Versions.parse(self.flexible)
        self.struct = Struct(*self.fields)
        # Compiled codecs by version, made at first use (kafka_net.protocol.codegen).
        self._encoders: dict[int, Callable] = {}
        self._decoders: dict[int, Callable] = {}

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible

    def defaults(self) -> dict:
        return self.struct.defaults()

    def decode(self, data: bytes | memoryview | Reader, version: int, offset: int = 0) -> dict:
        """The body at ``offset`` of ``data`` (or at a Reader's position, advancing it)."""
        decoder = self.decoder(version)
        if decoder is None:  # not a version of this message: nothing worth compiling
            return self.decode_interpreted(data, version, offset)
        if isinstance(data, Reader):
            body, data.pos = decoder(data.buf, data.pos)
            return body
        return decoder(data, offset)[0]

    def decoder(self, version: int) -> Callable | None:
        """The compiled decoder of ``version``, ``(buf, offset) -> (body, next
        offset)``; None if ``version`` is not one of this message's.  With
        KAFKA_NET_READABLE (:mod:`kafka_net.protocol.readable`), the interpreter."""
        return self._decoders.get(version) or self._compile(self._decoders, version)

    def encode(self, value: dict, version: int) -> bytes:
        buf = bytearray()
        self.encode_into(buf, value, version)
        return bytes(buf)

    def encoder(self, version: int) -> Callable | None:
        """The compiled encoder of ``version``, ``(value, bytearray) -> None``; None
        if ``version`` is not one of this message's.  With KAFKA_NET_READABLE, the
        interpreter."""
        return self._encoders.get(version) or self._compile(self._encoders, version)

    def encode_into(self, out: Writer | bytearray, value: dict, version: int) -> None:
        """Append the encoding of ``value`` to a Writer or a bytearray."""
        encoder = self.encoder(version)
        if encoder is None:
            raise ValueError(f"{self.name} has no version {version} (valid {self.valid})")
        encoder(value, out.buf if isinstance(out, Writer) else out)

    def _compile(self, cache: dict, version: int) -> Callable | None:
        if version not in self.valid:
            return None
        encode = cache is self._encoders
        if readable.READABLE and not encode:   # KAFKA_NET_READABLE: the interpreter
            cache[version] = self._interpreted_decoder(version)
            return cache[version]
        if readable.READABLE:
            cache[version] = self._interpreted_encoder(version)
            return cache[version]
        # Imported at the first compile, not with this module: start-up imports this
        # module (codec.py does) and compiles nothing before the first request.
        from kafka_net.protocol.codegen import compile_codec
        cache[version] = compile_codec(self, version, "encode" if encode else "decode")
        return cache[version]

    def _interpreted_decoder(self, version: int) -> Callable:
        def decode(buf, offset: int) -> tuple[dict, int]:
            reader = Reader(buf, offset)
            return self.decode_interpreted(reader, version), reader.pos
        return decode

    def _interpreted_encoder(self, version: int) -> Callable:
        flexible = self.is_flexible(version)

        def encode(value: dict, buf: bytearray) -> None:
            # Into ``buf`` itself: a ChunkBuffer notes its regions' offsets in it.
            self.struct.write_struct(Writer(buf), value, version, flexible)
        return encode

    # The interpreter: the reference the compiled codecs are tested against.

    def decode_interpreted(self, data: bytes | memoryview | Reader, version: int,
                           offset: int = 0) -> dict:
        r = data if isinstance(data, Reader) else Reader(data, offset)
        return self.struct.read_struct(r, version, self.is_flexible(version))

    def encode_interpreted(self, value: dict, version: int) -> bytes:
        if version not in self.valid:
            raise ValueError(f"{self.name} has no version {version} (valid {self.valid})")
        w = Writer()
        self.struct.write_struct(w, value, version, self.is_flexible(version))
        return w.getvalue()
