"""``KAFKA_NET_READABLE=1``: run on the readable reference paths only.

Some paths have a fast version beside a readable one that shows what they do
(and that tests hold the fast one against).  With ``KAFKA_NET_READABLE`` set
to anything but ``0`` in the environment when kafka-net is imported, each of
these takes its readable reference instead, so a test run with it shows that
the references alone give the same answers, and a reader can step through
the plain code:

* the generated codec (:mod:`kafka_net.protocol.codegen`): bodies are read and
  written by the schema interpreter (``Schema.decode_interpreted``,
  ``Struct.write_struct``);
* the route caches (:func:`kafka_net.protocol.codec.parse_request`'s
  ``routes``, ``encode_response``'s): every request and response looks its
  schema and versions up again;
* the cached constant frames (``KafkaApis._encode``): a read-only body such as
  ApiVersions' is encoded for every response.

* the conformance job's column-wise paths (``spark_jobs/check_columns.py``,
  with its per-frame loops compiled in ``kafka_net/capture/_plain_checks.pyx``,
  and ``spark_jobs/kncap_arrow.py``, over ``kafka_net/capture/_kncap_scan.pyx``;
  neither compiled module imported): every connection is checked by the pairing
  walk and every .kncap segment read by the capture reader's ``kncap_columns``;
* the conformance job's compiled record-batch checks
  (``kafka_net/protocol/records/_batches.pyx``, called from
  ``kafka_net.capture.pairing_checks``): every Produce and Fetch records field
  goes through ``validate_produce_records`` / ``_check_fetched_batches``
  alone, and the compiled module is not even imported;
* the body walkers' compiled programs (``kafka_net.protocol._walk``, run by
  ``kafka_net.capture.pairing_checks``): every body is walked by the generated
  Python walker, and the compiled module is not imported;
* the one-unpack Ethernet/IPv4/TCP parse of pcap packets
  (``kafka_net.capture.packet.FAST_PATH``): every packet goes the general way;
* the compiled pcap passes (``spark_jobs/pcap_arrow.py`` over
  ``kafka_net/capture/_flows.pyx``, not even imported): every pcap range is read
  into ``Packet`` objects and every flow reassembled by ``kafka_net.capture.tcp``;
* the capture writer's record encoding (``kafka_net.capture.writer``): each
  record is built as a ``CaptureRecord`` and encoded whole by
  ``format.encode_record``, its strings encoded every time (checked when a
  writer is made).

* the report's aggregates column by column (``spark_jobs/summary_arrow.py``):
  every share is counted one row at a time by ``spark_jobs/summary_rows.py``.

Read once: a flag checked where a cache is made or a codec chosen, never on
a request's common path.
"""

from __future__ import annotations

import os

VARIABLE = "KAFKA_NET_READABLE"


def from_environment(environ=os.environ) -> bool:
    return environ.get(VARIABLE, "0") not in ("", "0")


READABLE: bool = from_environment()
