"""kafka-net dump-log: segment files as text, read only (Kafka's kafka-dump-log.sh)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kafka_net.dump_log import dump_file
from kafka_net.protocol.records import build_batch
from kafka_net.server.metadata_log import MetadataLog
from kafka_net.server.storage.unified_log import UnifiedLog

REPO = Path(__file__).resolve().parents[1]


def metadata_segment(tmp_path: Path) -> Path:
    store = UnifiedLog(str(tmp_path / "__cluster_metadata-0"))
    log = MetadataLog(store)
    log.append_all([("TopicRecord", {"name": "t", "topicId": "id-1"}),
                    ("PartitionRecord", {"partitionId": 0, "topicId": "id-1"})])
    log.append("UserScramCredentialRecord", {"name": "alice", "mechanism": 1,
                                             "salt": b"salty", "storedKey": b"k" * 32,
                                             "serverKey": b"s" * 32, "iterations": 4096})
    store.close()
    return tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"


def test_batches_and_metadata_records_are_printed(tmp_path):
    lines = list(dump_file(str(metadata_segment(tmp_path)), metadata_decoder=True))
    batches = [line for line in lines if line.startswith("baseOffset:")]
    assert [b.split()[1] for b in batches] == ["0", "2"]
    assert all(b.endswith("isvalid: true") for b in batches)
    payloads = [json.loads(line.split("payload: ", 1)[1]) for line in lines
                if line.startswith("| offset:")]
    assert [p["type"] for p in payloads] == [
        "TopicRecord", "PartitionRecord", "UserScramCredentialRecord"]
    assert payloads[0]["data"] == {"name": "t", "topicId": "id-1"}
    # A credential's keys and salt are not printed, only their lengths.
    assert payloads[2]["data"]["storedKey"] == "<32 bytes>"
    assert "kkkk" not in "\n".join(lines)


def test_a_torn_tail_and_a_bad_crc_are_reported_and_nothing_is_changed(tmp_path):
    segment = metadata_segment(tmp_path)
    data = bytearray(segment.read_bytes())
    data[-5] ^= 0xFF                             # a flipped byte in the last batch
    data += b"\x00\x00\x00\x00\x00\x00\x00\x09\x00\x00"   # and half a batch after it
    segment.write_bytes(bytes(data))
    lines = list(dump_file(str(segment), metadata_decoder=True))
    batches = [line for line in lines if line.startswith("baseOffset:")]
    assert batches[0].endswith("isvalid: true") and batches[1].endswith("isvalid: false")
    assert lines[-1].startswith("Found 10 invalid bytes at the end of")
    assert segment.read_bytes() == bytes(data)


def test_print_data_log_shows_keys_and_values(tmp_path):
    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(build_batch([(b"k1", b"v1"), (None, b"v2")]))
    lines = list(dump_file(str(segment), print_data=True))
    assert lines[2].endswith("key: k1 payload: v1")
    assert lines[3].endswith("key: null payload: v2")


def test_the_command_line(tmp_path):
    segment = metadata_segment(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "kafka_net", "dump-log", "--cluster-metadata-decoder",
         str(segment)], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert '"type":"TopicRecord"' in result.stdout
    missing = subprocess.run(
        [sys.executable, "-m", "kafka_net", "dump-log", str(tmp_path / "nope.log")],
        cwd=REPO, capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2
    assert "cannot read" in missing.stderr and "Traceback" not in missing.stderr
