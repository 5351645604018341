"""The small files of a log directory, in Kafka's formats.

* ``recovery-point-offset-checkpoint`` and ``log-start-offset-checkpoint``
  (Kafka's ``OffsetCheckpointFile``): a version line (0), an entry-count
  line, then ``topic partition offset`` lines.  Written to a ``.tmp`` file,
  fsynced, renamed over the old one and the folder fsynced, so a crash
  leaves the old file or the new one.
* ``meta.properties`` (KRaft's ``MetaProperties``, version 1): node.id,
  cluster.id, directory.id; a folder already formatted for another node or
  cluster is refused at startup, as Kafka does.
* ``partition.metadata`` (``PartitionMetadataFile``): the topic id of the
  partition's folder.
* ``.kafka_cleanshutdown``: written last at a clean shutdown, removed once
  the logs are loaded; its absence at startup means a crash.
"""

from __future__ import annotations

import base64
import json
import os
import time
import uuid

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
META_PROPERTIES = "meta.properties"
PARTITION_METADATA = "partition.metadata"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
LOCK_FILE = ".lock"
CHECKPOINT_VERSION = 0


class StorageError(OSError):
    """Kafka's KafkaStorageException at log loading: the broker does not start
    (an OSError, so the daemon reports it as a startup failure, exit code 3)."""


def uuid_to_string(value: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def uuid_from_string(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def write_atomically(path: str, data: bytes, sync: bool = True) -> None:
    temp = path + ".tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)
    if sync:
        fsync_dir(os.path.dirname(path))


def fsync_dir(directory: str) -> None:
    fsync_path(directory or ".")


def fsync_path(path: str) -> None:
    """fsync a file or a folder by its path."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class OffsetCheckpointFile:
    def __init__(self, path: str) -> None:
        self.path = path

    def write(self, offsets: dict[tuple[str, int], int]) -> None:
        lines = [str(CHECKPOINT_VERSION), str(len(offsets))]
        lines += [f"{topic} {partition} {offset}"
                  for (topic, partition), offset in sorted(offsets.items())]
        write_atomically(self.path, ("\n".join(lines) + "\n").encode())

    def read(self) -> dict[tuple[str, int], int]:
        """The entries; {} if the file does not exist.  A malformed file raises
        StorageError (Kafka: "Malformed line in checkpoint file")."""
        try:
            with open(self.path, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except FileNotFoundError:
            return {}
        try:
            if int(lines[0]) != CHECKPOINT_VERSION:
                raise StorageError(f"Unrecognized version of the checkpoint file "
                                   f"({self.path}): {lines[0]}")
            count = int(lines[1])
            entries = {}
            for line in lines[2:2 + count]:
                topic, partition, offset = line.split(" ")
                entries[(topic, int(partition))] = int(offset)
            if len(entries) != count:
                raise ValueError("entry count")
            return entries
        except (IndexError, ValueError):
            raise StorageError(f"Malformed line in checkpoint file ({self.path}): "
                               f"expected {CHECKPOINT_VERSION}, a count and that many "
                               f"'topic partition offset' lines") from None


def read_properties(path: str) -> dict[str, str] | None:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        return None
    props = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            props[key.strip()] = value.strip()
    return props


def _meta_properties_problem(props: dict[str, str]) -> str | None:
    """What makes a read ``meta.properties`` unusable (KRaft's ``MetaProperties``
    requires a version, and a node id and cluster id in version 1), or None."""
    version = props.get("version")
    if version not in ("0", "1"):
        return f"version is {version!r}, not 0 or 1"
    node_id = props.get("node.id", props.get("broker.id"))
    if node_id is None or not node_id.lstrip("-").isdigit():
        return f"node.id is {node_id!r}, not an integer"
    if not props.get("cluster.id"):
        return "cluster.id is missing"
    return None


def stored_cluster_id(directory: str) -> str | None:
    """The ``cluster.id`` of a formatted folder's meta.properties, else None."""
    props = read_properties(os.path.join(directory, META_PROPERTIES))
    return None if props is None else props.get("cluster.id") or None


def new_cluster_id() -> str:
    """A new cluster id, as ``kafka-storage random-uuid`` makes one: a random
    Uuid in Kafka's text form (22 characters of URL-safe base64)."""
    return uuid_to_string(uuid.uuid4())


def ensure_meta_properties(directory: str, node_id: int, cluster_id: str) -> str:
    """Check or write ``meta.properties``; returns the directory id.  A file that
    is there but is no meta.properties is refused: writing over it could hand
    this folder's logs to another cluster."""
    path = os.path.join(directory, META_PROPERTIES)
    props = read_properties(path)
    if props is not None:
        problem = _meta_properties_problem(props)
        if problem is not None:
            raise StorageError(
                f"Failed to load {path}: {problem}. This folder's logs are not opened: "
                f"restore the file, or move the folder away to start on an empty one")
        if props.get("cluster.id") != cluster_id:
            raise StorageError(f"Invalid cluster.id in: {path}. Expected {cluster_id}, but "
                               f"read {props.get('cluster.id')}")
        if props.get("node.id", props.get("broker.id")) != str(node_id):
            raise StorageError(f"Stored node id {props.get('node.id')} doesn't match "
                               f"previous node id {node_id} in {path}. If you moved your "
                               f"data, make sure your configured node id matches.")
        if "directory.id" in props:
            return props["directory.id"]
    directory_id = uuid_to_string(uuid.uuid4())
    text = (f"#\n#{time.strftime('%a %b %d %H:%M:%S UTC %Y', time.gmtime())}\n"
            f"node.id={node_id}\ndirectory.id={directory_id}\nversion=1\n"
            f"cluster.id={cluster_id}\n")
    write_atomically(path, text.encode())
    return directory_id


def write_partition_metadata(directory: str, topic_id: uuid.UUID) -> None:
    """Not fsynced: creating thousands of partitions would wait on thousands of
    fsyncs, and a file lost in a crash only means the topic id is taken from
    metadata again (LogManager._check_topic_id)."""
    write_atomically(os.path.join(directory, PARTITION_METADATA),
                     f"version: 0\ntopic_id: {uuid_to_string(topic_id)}\n".encode(), sync=False)


def read_partition_metadata(directory: str) -> uuid.UUID | None:
    try:
        with open(os.path.join(directory, PARTITION_METADATA), encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("topic_id:"):
                    return uuid_from_string(line.split(":", 1)[1].strip())
    except (FileNotFoundError, ValueError):
        return None
    return None


def write_clean_shutdown_file(directory: str, broker_epoch: int = -1) -> None:
    write_atomically(os.path.join(directory, CLEAN_SHUTDOWN_FILE),
                     json.dumps({"version": 0, "brokerEpoch": broker_epoch}).encode())
