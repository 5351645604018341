"""Wire captures: what each Processor read and wrote, for conformance checks.

:mod:`.format` (sans-IO) defines the file layout and reads it back;
:mod:`.writer` appends records to per-processor segment files;
:mod:`.pairing` (sans-IO) pairs requests with responses per connection and
finds protocol violations.  The Spark jobs in ``spark_jobs/`` import these.
"""
