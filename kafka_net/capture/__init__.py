"""Wire captures: what each Processor read and wrote, for conformance checks.

:mod:`.format` (sans-IO) defines the file layout and reads it back;
:mod:`.writer` appends records to per-processor segment files;
:mod:`.model` is the frame model (frames and gap/close markers);
:mod:`.pairing` (sans-IO) pairs requests with responses per connection and
finds protocol violations, :mod:`.pairing_checks` says how far each frame
was checked.  Captures of any broker: :mod:`.pcap` reads pcap and pcapng
files (:mod:`.packet` decodes each record's headers, :mod:`.ip_fragments`
reassembles IP fragments), :mod:`.tcp` reassembles connections
(:mod:`.tcp_stream` the byte streams, :mod:`.tcp_frames` the Kafka frames).
:mod:`.reader` is the one reader of capture files: it alone tells a file's
kind and turns .kncap records into frame rows, for ``kafka-net decode`` and
the conformance job alike;
:mod:`.findings` says where each violation is (file, Wireshark frame number or
.kncap offset, bytes) and counts the API x version x client cells;
:mod:`.decode` prints frames as text (``kafka-net decode``).  The Spark jobs in
``spark_jobs/`` import these.
"""
