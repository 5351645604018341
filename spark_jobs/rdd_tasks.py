"""Running the job's task functions on Spark as plain RDDs, their results coming
back as Arrow IPC streams.

The task functions (:mod:`.task_reads`) are ``mapInArrow`` functions: Arrow
batches in, Arrow batches out.  Given to ``spark.range(n).mapInArrow(...)``, they
made the JVM plan, compile and run a query and convert every batch to its own
Arrow and back, for what is n task ids in and a few hundred rows out.  Here task
i of ``sc.parallelize(range(n), n)`` calls the same function on a batch holding
id i and sends its batches back as one Arrow IPC stream: bytes the JVM carries
and never reads.  On the 919,785-frame capture of bench/RESULTS.md that took a
``local[2]`` job's JVM from 2.5 to 1.1 CPU s (.kncap) and from 3.6-3.8 to 2.1
(pcap).

A pcap's packet index must meet per flow first: :func:`run` with ``then`` cuts
each index batch by a CRC32 of its ``by`` column into the checking tasks'
partitions (rows without one go to the first), each index task writes a
partition's rows to an Arrow file of its own in a folder under the job's
output, and each checking task reads its partition's files into ``then``, in a
second job (:func:`_exchange`).  Spark's own shuffle (``partitionBy``) carried
the same bytes through the JVM for more CPU than the rest of the job's JVM
work.  A CRC32, not Python's ``hash``: every worker process must put a flow in
the same partition, and ``hash`` of a str differs between processes.

:func:`run_here` runs the same tasks one after another in this process, with
no Spark at all: a small input, or any local input given
``--in-process-below-mb`` above its size.  Each task is the executors' own
function on the same ids, so the run writes and returns what Spark's would.
Tasks, not one pass over the whole input: a task holds one Processor's frames
(or a partition's flows) at a time, and the memory a task lets go is what the
next one uses.  On the 919,785-frame capture one pass over all of it held
1.4 GB, and the system's time to hand out that much fresh memory (1.0-2.0
CPU s) was more than reading and checking its segments' records (0.6-0.9 s).
"""

from __future__ import annotations

import os
import shutil

# The partition of the task run_here is running (None: none, or on Spark).
_here: int | None = None


def run(sc, apply, n: int, schema, then=None, by: str | None = None,
        partitions: int = 0, exchange: str | None = None) -> list:
    """The tables of n tasks' batches (``schema``, an Arrow schema): task i runs
    ``apply`` on id i, or, with ``then``, its rows go by ``by`` to ``partitions``
    tasks that run ``then`` on them, through Arrow files in the folder
    ``exchange`` (:func:`_exchange`)."""
    import pyarrow as pa
    if then is None:
        rdd = sc.parallelize(range(n), n).mapPartitionsWithIndex(_streams(apply, schema))
        return [pa.ipc.open_stream(stream).read_all() for stream in rdd.collect()]
    try:
        return [pa.ipc.open_stream(stream).read_all() for stream in
                _exchange(sc, apply, n, by, partitions, exchange, then, schema).collect()]
    finally:
        shutil.rmtree(exchange, ignore_errors=True)


def _exchange(sc, apply, n: int, by: str, partitions: int, exchange: str, then, schema):
    """Rows by ``by`` from n tasks to ``partitions`` tasks, as files, not Spark's
    shuffle: task i of a first job writes the rows bound to partition p to
    ``exchange/i-p.arrow`` and says which it wrote, and how many bytes; a task
    of a second job (the RDD returned) reads one partition's files, in the
    first tasks' order, the partitions with the most bytes first (a partition
    that got no rows gets no task).  ``exchange`` is a folder every executor
    reaches, as the job's output folder is (its tasks write their tables
    there); a file that is not there fails the task, naming it.  :func:`run`
    removes the folder once the second job has run.

    Spark's shuffle (``partitionBy``) carried the same bytes through the JVM:
    on the 333 MB pcap of bench/RESULTS.md a ``local[2]`` job's JVM took
    1.18-1.39 CPU s with it, 0.63-0.77 s with the files (three pairs), its
    task threads 0.61 s of the 1.28 s with the shuffle."""
    os.makedirs(exchange, exist_ok=True)
    written = sc.parallelize(range(n), n) \
        .mapPartitionsWithIndex(_keyed_files(apply, by, partitions, exchange)).collect()
    files: dict[int, list[str]] = {}
    size: dict[int, int] = {}
    for index, partition, length in sorted(written):
        files.setdefault(partition, []).append(_exchange_file(exchange, index, partition))
        size[partition] = size.get(partition, 0) + length
    # the largest partitions first: Spark starts tasks in order, each on the
    # slot free first, so this is the longest-first packing of the slots
    order = [files[p] for p in sorted(files, key=lambda p: (-size[p], p))]
    if not order:
        return sc.emptyRDD()
    return sc.parallelize(range(len(order)), len(order)) \
        .mapPartitionsWithIndex(_exchanged(then, schema, order))


def run_here(apply, n: int, schema, then=None, by: str | None = None,
             partitions: int = 0, exchange: str | None = None) -> list:
    """:func:`run` in this process: task i's batches as a table, in order;
    with ``then``, each of ``partitions`` tasks gets the rows bound to it (by
    the same CRC32 of ``by``), in the order the first tasks made them, in
    memory (``exchange`` is not used)."""
    import pyarrow as pa
    shuffled: dict[int, list] = {}
    tables = []
    for index in range(n):
        batches = _as_task(index, apply(iter([_id_batch(index)])))
        if then is None:
            tables.append(pa.Table.from_batches(batches, schema=schema))
            continue
        for batch in batches:
            for partition, rows in _keyed(batch, by, partitions):
                shuffled.setdefault(partition, []).append(rows)
    for partition in sorted(shuffled):
        tables.append(pa.Table.from_batches(
            _as_task(partition, then(iter(shuffled.pop(partition)))), schema=schema))
    return tables


def _as_task(index: int, batches) -> list:
    """The batches of a task function's generator, run as partition ``index``."""
    global _here
    _here = index
    try:
        return list(batches)
    finally:
        _here = None


def partition() -> int:
    """The partition of the task running now: Spark's, or :func:`run_here`'s."""
    if _here is not None:
        return _here
    from pyspark import TaskContext
    context = TaskContext.get()
    return context.partitionId() if context is not None else 0


def _streams(apply, schema):
    """Task id -> one Arrow stream of ``apply``'s batches."""
    def task(index, _ids):
        yield _stream(apply(iter([_id_batch(index)])), schema)
    return task


def _keyed_files(apply, by: str, partitions: int, exchange: str):
    """Task id -> (its id, partition, bytes) for each partition it wrote rows
    for, to :func:`_exchange_file`: each written under a hidden name and renamed
    when complete, so a retried task replaces its own."""
    def task(index, _ids):
        import pyarrow as pa
        writers: dict[int, tuple] = {}
        try:
            for batch in apply(iter([_id_batch(index)])):
                for partition, rows in _keyed(batch, by, partitions):
                    if partition not in writers:
                        final = _exchange_file(exchange, index, partition)
                        hidden = os.path.join(exchange, f".{os.path.basename(final)}."
                                                        f"{os.getpid()}")
                        sink = pa.OSFile(hidden, "wb")
                        writers[partition] = (final, hidden, sink,
                                              pa.ipc.new_stream(sink, batch.schema))
                    writers[partition][3].write_batch(rows)
            written = []
            for partition, (final, hidden, sink, writer) in sorted(writers.items()):
                writer.close()
                written.append((index, partition, sink.tell()))
                sink.close()
                os.replace(hidden, final)
        finally:
            for _, hidden, sink, _ in writers.values():
                if not sink.closed:
                    sink.close()
                if os.path.exists(hidden):
                    os.unlink(hidden)
        return iter(written)
    return task


def _exchange_file(exchange: str, index: int, partition: int) -> str:
    return os.path.join(exchange, f"{index}-{partition}.arrow")


def _keyed(batch, by: str, partitions: int):
    """(partition, its rows of ``batch``) for each partition that gets rows."""
    import zlib
    import pyarrow as pa
    import pyarrow.compute as pc
    keys = [0 if key is None else zlib.crc32(key.encode()) % partitions
            for key in batch.column(by).to_pylist()]
    where = pa.array(keys, pa.int32())
    for partition in sorted(set(keys)):
        yield partition, batch.filter(pc.equal(where, partition))


def _exchanged(then, schema, files: list[list[str]]):
    """Task t -> one Arrow stream of ``then``'s batches over the rows of
    ``files[t]`` (one partition's), in their order."""
    def task(t, _ids):
        import pyarrow as pa
        mine = files[t]
        missing = [f for f in mine if not os.path.exists(f)]
        if missing:
            raise FileNotFoundError(
                f"{len(missing)} of the packet index's files are not here, {missing[0]} the "
                f"first: the output folder must be one every executor reaches (a shared "
                f"mount on a cluster)")
        batches = (batch for f in mine for batch in pa.ipc.open_stream(pa.memory_map(f)))
        yield _stream(then(batches), schema)
    return task


def _id_batch(index: int):
    import pyarrow as pa
    return pa.record_batch([pa.array([index], pa.int64())], names=["id"])


def _stream(batches, schema) -> bytes:
    import pyarrow as pa
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return sink.getvalue().to_pybytes()
