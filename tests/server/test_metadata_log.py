"""MetadataLog: records appended as batches, replayed in order to their owners."""

from kafka_net.server.metadata_log import MetadataLog
from kafka_net.server.storage import InMemoryLog


def test_records_replay_in_order_with_bytes_fields():
    store = InMemoryLog()
    first = MetadataLog(store)
    first.append_all([("TopicRecord", {"name": "t", "topicId": "abc"}),
                      ("PartitionRecord", {"partitionId": 0, "topicId": "abc"})])
    first.append("UserScramCredentialRecord", {"name": "alice", "salt": b"\x00\xff"})
    assert store.log_end_offset == 3

    seen = []
    second = MetadataLog(store)   # a restart: a new owner of the same stored log
    second.register("TopicRecord", lambda f: seen.append(("topic", f["name"])))
    second.register("PartitionRecord", lambda f: seen.append(("partition", f["partitionId"])))
    second.register("UserScramCredentialRecord", lambda f: seen.append(("scram", f["salt"])))
    assert second.replay() == 3
    assert seen == [("topic", "t"), ("partition", 0), ("scram", b"\x00\xff")]


def test_unknown_record_types_are_skipped_and_logged(caplog):
    log = MetadataLog()
    log.append("SomeFutureRecord", {"x": 1})
    log.append("TopicRecord", {"name": "t"})
    names = []
    log.register("TopicRecord", lambda f: names.append(f["name"]))
    assert log.replay() == 1
    assert names == ["t"]
    assert "SomeFutureRecord" in caplog.text


def test_an_empty_log_replays_nothing():
    assert MetadataLog().replay() == 0
