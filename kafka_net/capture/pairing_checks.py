"""How deep one captured frame can be checked, and the checks themselves, sans-IO
(the decoding half of :mod:`.pairing`, which walks a connection).

Every Kafka frame ends in exactly one coverage state (:data:`STATES`):

* ``checked``: header and body decoded to the body's exact end (bytes left
  over are a ``trailing_bytes`` violation), and the record batches it
  carries (Produce requests, Fetch responses) verified as Kafka's
  LogValidator would, through :mod:`kafka_net.protocol.records.validation`:
  batch length, magic, CRC32C, record count, each record's length and
  varints, the compression codec decodes.  A compiled pass
  (``kafka_net/protocol/records/_batches.pyx``) goes first and only ever says
  "these checks accept it" or "not sure", and they run whenever it is not
  sure, so every finding is theirs, in their words (off with
  ``KAFKA_NET_READABLE=1``).  A frame found faulty is checked
  too: the check ran and said no.
* ``header_only``, with why (:data:`UNKNOWN_API`, :data:`UNKNOWN_VERSION`,
  :data:`TRUNCATED`): correlation id and pairing checked, the body not.
* ``unverifiable``: bytes of it, or the answer it waited for, were lost
  from the capture (the gap's stream byte range goes with it).
* ``not_kafka``: too short to hold a Kafka header.

Pairing checks bodies with :func:`walk_request_body` / :func:`walk_response_body`:
generated walkers (:mod:`kafka_net.protocol.walker`) prove the body reaches its
exact end under the same rules as the decoders, keeping only the values pairing
reads, without building the body; each walk runs first as a compiled program
(:mod:`kafka_net.protocol.walk_program`), the Python walker answering where the
program is not sure.  :func:`check_request_body` /
:func:`check_response_body` decode it whole: for the report's details, and to
say in the decoder's words what is wrong with a body a walker refused.
"""

from __future__ import annotations

from typing import Callable

from kafka_net.protocol import readable
from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.errors import InvalidRequestError
from kafka_net.protocol.fields import MAX_ARRAY_ELEMENTS, MAX_TAGGED_FIELDS
from kafka_net.protocol.headers import (
    decode_response_header, read_request_header, request_header_version,
    response_header_version)
from kafka_net.protocol.messages import MESSAGES
from kafka_net.protocol.primitives import Reader
from kafka_net.protocol.schema import NO_VERSIONS
from kafka_net.protocol.records.framing import (
    MAGIC_OFFSET, MAGIC_V2, RecordError, crc32c_function, iter_batches)
from kafka_net.protocol.records.validation import validate_batch, validate_produce_records
from kafka_net.protocol.walk_program import program
from kafka_net.protocol.walker import walker

if readable.READABLE:      # KAFKA_NET_READABLE, read once: the references alone
    Program = request_header = None     # the Python walkers and header reader alone
else:
    # Built with the package: a missing build is an ImportError, never a fallback.
    from kafka_net.protocol._walk import Program, request_header
    from kafka_net.protocol.records import _batches

CHECKED, HEADER_ONLY, UNVERIFIABLE, NOT_KAFKA = "checked", "header_only", "unverifiable", \
    "not_kafka"
STATES = (CHECKED, HEADER_ONLY, UNVERIFIABLE, NOT_KAFKA)
UNKNOWN_API = "unknown API (no schema)"
UNKNOWN_VERSION = "unknown version"
TRUNCATED = "truncated by capture length"


class BodyProblem(Exception):
    """A body that decodes wrong: ``check`` names the violation."""

    def __init__(self, check: str, detail: str, offset: int = -1) -> None:
        super().__init__(detail)
        self.check = check
        self.offset = offset     # where in the frame (after the size prefix); -1: unknown


def read_request(payload: bytes, api_key: int, api_version: int, corr: int,
                 truncated: bool) -> tuple[str | None, int | None, str | None]:
    """(client id, body offset or None, why the body cannot be checked) of a request whose
    first eight bytes were peeked, through the one lenient header reader
    (:func:`~kafka_net.protocol.headers.read_request_header`).  A header that does
    not fit the API's schema raises InvalidRequestError, unless the capture cut it
    or the API is unknown (its header version is unknown too: v1 is tried, whose
    client id every later header version keeps, KIP-482)."""
    message = MESSAGES.get(api_key)
    if message is not None and not truncated and request_header is not None:
        # compiled first (protocol/_walk.pyx); None where it is not sure
        got = request_header(payload, request_header_version(
            api_key, api_version, message.request.flexible))
        if got is not None:
            return got[0], got[1], None
    flexible = message.request.flexible if message is not None else NO_VERSIONS
    try:
        header, offset = read_request_header(payload, api_key, api_version, corr, flexible)
    except InvalidRequestError:
        if truncated or message is None:
            return None, None, TRUNCATED if truncated else UNKNOWN_API
        raise
    if message is None:
        return header.client_id, offset, UNKNOWN_API
    return header.client_id, offset, TRUNCATED if truncated else None


def check_request_body(payload: bytes, offset: int, api_key: int, api_version: int
                       ) -> tuple[dict | None, str | None]:
    """(body or None, why not checked) of a request; BodyProblem if it is wrong."""
    message = MESSAGES[api_key]
    if api_version not in message.request.valid:
        return None, UNKNOWN_VERSION
    title = f"{ApiKey(api_key).title} v{api_version} request"
    body = _decode_exact(message.request, payload, offset, api_version, title,
                         "undecodable_request")
    if api_key == ApiKey.PRODUCE and api_version >= 3:
        _check_records(body, title, lambda recs: validate_produce_records(recs, api_version))
    return body, None


def check_response_body(payload: bytes, api_key: int, api_version: int
                        ) -> tuple[dict | None, str | None]:
    """(body or None, why not checked) of a response to a request of this API and
    version; BodyProblem if it is wrong."""
    message = MESSAGES.get(api_key)
    if message is None:
        return None, UNKNOWN_API
    version = api_version
    if api_key == ApiKey.API_VERSIONS and version not in message.response.valid:
        version = 0  # KIP-511: an unsupported ApiVersions request gets a v0 body
    if version not in message.response.valid:
        return None, UNKNOWN_VERSION
    header_version = response_header_version(api_key, version, message.response.flexible)
    title = f"{ApiKey(api_key).title} v{version} response"
    try:
        _, offset = decode_response_header(payload, header_version)
        body = _decode_exact(message.response, payload, offset, version,
                             f"{title} (header v{header_version})", "undecodable_response")
    except (InvalidRequestError, BodyProblem):
        body = _api_versions_v0_fallback(payload, api_key, version)
        if body is None:
            raise
    if api_key == ApiKey.FETCH:
        _check_records(body, title, _check_fetched_batches)
    return body, None


# Request fields pairing reads: acks (acks=0 Produces get no answer) and how long the
# broker may rightly hold a request (pairing._wait_ms).
REQUEST_VALUES = ("acks", "timeout_ms", "max_wait_ms", "rebalance_timeout_ms",
                  "session_timeout_ms")
_REQUEST_WALKS: dict[tuple[int, int], Callable] = {}
_RESPONSE_WALKS: dict[tuple[int, int], Callable] = {}


def walk_request_body(payload: bytes, offset: int, api_key: int, api_version: int
                      ) -> tuple[dict | None, str | None]:
    """:func:`check_request_body` without building the body: ({field: value} of the
    :data:`REQUEST_VALUES` the request has, or the whole body), why not checked;
    BodyProblem if it is wrong, in the decoder's words (a body the walker refuses is
    decoded again to say why: rare, and the findings stay word for word)."""
    walk = request_walk(api_key, api_version)
    if walk is None:
        return None, UNKNOWN_VERSION
    try:
        end, values, _, records = walk(payload, offset)
        if end == len(payload):
            for recs in records:
                check_produced(recs, api_version)
            return values, None
    except (InvalidRequestError, RecordError):
        pass
    return check_request_body(payload, offset, api_key, api_version)


def request_walk(api_key: int, api_version: int) -> Callable | None:
    """The walk of a known API's request body at this version, made once:
    ``walk(payload, offset) -> (end, {REQUEST_VALUES field: value}, codes,
    [records to check with check_produced])``, InvalidRequestError where the
    body does not walk; None if the schema has no such version."""
    walk = _REQUEST_WALKS.get((api_key, api_version))
    if walk is None:
        schema = MESSAGES[api_key].request
        if api_version not in schema.valid:
            return None
        top = tuple(f.name for f in schema.struct.fields if f.name in REQUEST_VALUES)
        walk = _REQUEST_WALKS[(api_key, api_version)] = _compiled(
            schema, api_version, top, False, api_key == ApiKey.PRODUCE and api_version >= 3)
    return walk


def walk_response_body(payload: bytes, api_key: int, api_version: int
                       ) -> tuple[list[int] | None, str | None]:
    """:func:`check_response_body` without building the body: (its non-zero error
    codes, why not checked); BodyProblem if it is wrong, in the decoder's words."""
    walk = response_walk(api_key, api_version)
    if walk is None:
        body, why = check_response_body(payload, api_key, api_version)
        return None, why
    try:
        codes, records = walk(payload)
        for recs in records:
            check_fetched(recs)
        return codes, None
    except (InvalidRequestError, RecordError):
        pass
    body, why = check_response_body(payload, api_key, api_version)
    return (None if body is None else error_codes(body)), why


def response_walk(api_key: int, api_version: int) -> Callable | None:
    """The walk of a response to a request of this API and version, made once:
    ``walk(payload) -> ([non-zero error codes], [records to check with
    check_fetched])``, InvalidRequestError where it does not walk to the
    payload's end; None for an unknown API or version (check_response_body
    says which)."""
    walk = _RESPONSE_WALKS.get((api_key, api_version))
    if walk is None:
        message = MESSAGES.get(api_key)
        version = api_version
        if message is not None and api_key == ApiKey.API_VERSIONS \
                and version not in message.response.valid:
            version = 0   # KIP-511, as check_response_body
        if message is None or version not in message.response.valid:
            return None
        walk = _RESPONSE_WALKS[(api_key, api_version)] = _response_walk(
            message.response, api_key, version)
    return walk


def _compiled(schema, version: int, top: tuple[str, ...], codes: bool, records: bool,
              header_version: int = -1, response: Callable | None = None) -> Callable:
    """The body walker of these arguments: its compiled program
    (:mod:`kafka_net.protocol.walk_program`) asking the Python walker when not sure,
    or the Python walker alone (``KAFKA_NET_READABLE``, or a walk no program
    expresses).  With ``response`` (the Python response walk), the compiled
    response walk, asking ``response`` when not sure."""
    walk = walker(schema, version, top, codes=codes, records=records)
    made = program(schema, version, top, codes, records) if Program is not None else None
    if made is None:
        return walk if response is None else response
    ops, names, defaults = made
    fast = Program(ops, names, defaults, codes, records, MAX_ARRAY_ELEMENTS,
                   MAX_TAGGED_FIELDS, fallback=response or walk,
                   header_version=header_version)
    return fast if response is None else fast.response


def _response_walk(schema, api_key: int, version: int) -> Callable:
    """payload -> (error codes, records to verify) of a response that walks to its end;
    InvalidRequestError otherwise (compiled, see _compiled)."""
    header_version = response_header_version(api_key, version, schema.flexible)
    walk = walker(schema, version, codes=True, records=api_key == ApiKey.FETCH)

    def run(payload: bytes) -> tuple[list[int], list]:
        if len(payload) < 5:
            offset = decode_response_header(payload, header_version)[1]
        elif header_version == 0:
            offset = 4
        elif payload[4] == 0:
            offset = 5        # the header's tagged fields: none, as nearly always
        else:
            offset = decode_response_header(payload, header_version)[1]
        end, _, codes, records = walk(payload, offset)
        if end != len(payload):
            raise InvalidRequestError("trailing bytes")
        return codes, records
    return _compiled(schema, version, (), True, api_key == ApiKey.FETCH, header_version, run)


def produce_acks(payload: bytes, offset: int, api_version: int) -> int | None:
    """acks of a Produce request whose body is not decoded (cut by the snap length,
    or a version newer than the schema): v0-2 start with it; v3-8 after a nullable
    transactional_id, v9+ after a compact one.  None if it is not there."""
    r = Reader(payload, offset)
    try:
        if api_version >= 9:
            n = r.uvarint() - 1
        elif api_version >= 3:
            n = r.int16()
        else:
            n = 0
        if n > 0:
            r.raw(n)
        return r.int16()
    except InvalidRequestError:
        return None


def _decode_exact(schema, payload: bytes, offset: int, version: int, title: str,
                  check: str) -> dict:
    r = Reader(payload, offset)
    try:
        body = schema.decode(r, version)
    except InvalidRequestError as exc:
        raise BodyProblem(check, f"{title} does not decode: {exc}", r.pos) from None
    if r.pos != len(payload):
        raise BodyProblem("trailing_bytes", f"{title}: {len(payload) - r.pos} bytes after "
                                            f"the body's end (offset {r.pos})", r.pos)
    return body


def _api_versions_v0_fallback(payload: bytes, api_key: int, version: int) -> dict | None:
    """A broker that does not know the requested ApiVersions version answers with a
    v0 body (KIP-511); clients re-read it at v0, as Kafka's ApiVersionsResponse.parse
    does, so it is conformant."""
    if api_key != ApiKey.API_VERSIONS or version == 0:
        return None
    schema = MESSAGES[ApiKey.API_VERSIONS].response
    r = Reader(payload, 4)
    try:
        body = schema.decode(r, 0)
    except InvalidRequestError:
        return None
    return body if r.pos == len(payload) else None


def _check_records(body, title: str, verify) -> None:
    for records in _records_fields(body):
        try:
            verify(records)
        except RecordError as exc:
            raise BodyProblem("corrupt_records", f"{title}: record batch: {exc}") from None


def check_produced(records, api_version: int) -> None:
    """:func:`validate_produce_records` (the readable definition), after the
    compiled check, which only answers where it is sure the reference accepts
    (magic 2, uncompressed: nearly every batch).  In Python, these checks were a
    quarter of the job's CPU."""
    if not _batches.produce_records_ok(records, crc32c_function()):
        validate_produce_records(records, api_version)


def check_fetched(records) -> None:
    """:func:`_check_fetched_batches`, after the compiled check, as
    :func:`check_produced`."""
    if not _batches.fetched_batches_ok(records, crc32c_function()):
        _check_fetched_batches(records)


def _check_fetched_batches(records) -> None:
    """A Fetch response's records: whole batches as stored, then possibly a partial
    one (the broker cuts at the fetch size).  Batches of older magics are framed
    only (this broker stores magic 2)."""
    for batch in iter_batches(records, allow_partial_tail=True):
        if batch[MAGIC_OFFSET] == MAGIC_V2:
            validate_batch(batch, from_client=False)


if readable.READABLE:   # the references alone, chosen once
    check_produced = validate_produce_records   # noqa: F811
    check_fetched = _check_fetched_batches      # noqa: F811


def produced_checks() -> tuple:
    """What :func:`check_produced` runs, for a compiled caller that runs it itself
    (``kafka_net/capture/_plain_checks.pyx``): (the compiled check, its CRC32C
    function, the readable check)."""
    return _batches.produce_records_ok, crc32c_function(), validate_produce_records


def fetched_checks() -> tuple:
    """As :func:`produced_checks`, for :func:`check_fetched`."""
    return _batches.fetched_batches_ok, crc32c_function(), _check_fetched_batches


def _records_fields(value) -> list:
    """Every non-empty ``records`` field of a decoded body."""
    out: list = []
    _collect(value, "records", lambda v, t: t in _BYTES and len(v) > 0, out)
    return out


_BYTES = (bytes, bytearray, memoryview)


def error_codes(value) -> list[int]:
    """Every non-zero error_code anywhere in a decoded body, in body order."""
    out: list[int] = []
    _collect(value, "error_code", lambda v, t: t is int and v != 0, out)
    return out


def _collect(value, key: str, keep, out: list) -> None:
    """Append every ``key`` field of a decoded body that ``keep(value, type)`` accepts.

    Runs on every body the conformance job pairs: exact type tests (decoded
    bodies are plain dicts, lists and scalars), no generators, and a list is only
    walked when it holds structs (schema arrays hold one type; ints have no fields)."""
    if type(value) is list:
        if value and type(value[0]) in (dict, list):
            for item in value:
                _collect(item, key, keep, out)
        return
    if type(value) is not dict:
        return
    for k, v in value.items():
        t = type(v)
        if t is dict or t is list:
            _collect(v, key, keep, out)
        elif k == key and keep(v, t):
            out.append(v)
