"""A protocol-level share consumer for the API-layer tests: ShareGroupHeartbeat,
ShareFetch and ShareAcknowledge as a client sends them, each through the
broker's real wire path (tests/server/conftest.py's ``Broker.call``)."""

from __future__ import annotations

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.records import decode_records, iter_batches
from tests.server.conftest import Deferred

ACCEPT, RELEASE, REJECT, GAP, RENEW = 1, 2, 3, 0, 4


class ShareMember:
    """One member of a share group, with its share session."""

    def __init__(self, broker, group: str, member_id: str, topics=("t",)) -> None:
        self.broker, self.group, self.member_id, self.topics = broker, group, member_id, topics
        self.member_epoch = 0
        self.session_epoch = 0
        self.assignment = None

    def heartbeat(self, epoch: int | None = None, **fields) -> dict:
        epoch = self.member_epoch if epoch is None else epoch
        body = self.broker.call(
            ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=self.group, member_id=self.member_id,
            member_epoch=epoch, rack_id=None,
            subscribed_topic_names=list(self.topics) if epoch == 0 else None, **fields)
        if body["error_code"] == 0:
            self.member_epoch = body["member_epoch"]
            if body["assignment"] is not None:
                self.assignment = {t["topic_id"]: t["partitions"]
                                   for t in body["assignment"]["topic_partitions"]}
        return body

    def join(self) -> dict:
        body = self.heartbeat(0)
        assert body["error_code"] == 0, body
        return body

    def leave(self) -> dict:
        return self.heartbeat(-1)

    def topic_id(self, name: str = "t"):
        return self.broker.metadata_cache.topic(name).topic_id

    def _topics(self, partitions, acks) -> list:
        by_topic: dict = {}
        for name, index in partitions:
            by_topic.setdefault(self.topic_id(name), {})[index] = []
        for (name, index), batches in (acks or {}).items():
            by_topic.setdefault(self.topic_id(name), {})[index] = [
                {"first_offset": f, "last_offset": l, "acknowledge_types": list(types)}
                for f, l, types in batches]
        return [{"topic_id": t, "partitions": [
            {"partition_index": i, "acknowledgement_batches": b} for i, b in parts.items()]}
            for t, parts in by_topic.items()]

    def fetch(self, partitions=(("t", 0),), acks=None, max_records: int = 500,
              max_wait_ms: int = 0, epoch: int | None = None, version: int = 2,
              renew: bool = False, forgotten=()):
        """The decoded ShareFetch answer (a Deferred if it parked); the session epoch
        moves as a client's would."""
        epoch = self.session_epoch if epoch is None else epoch
        fields = dict(group_id=self.group, member_id=self.member_id, share_session_epoch=epoch,
                      max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20,
                      max_records=max_records, batch_size=max_records,
                      topics=self._topics(partitions, acks),
                      forgotten_topics_data=[{"topic_id": self.topic_id(n), "partitions": [i]}
                                             for n, i in forgotten])
        if version >= 2:
            fields["is_renew_ack"] = renew
        body = self.broker.call(ApiKey.SHARE_FETCH, version, **fields)
        if isinstance(body, Deferred) or body["error_code"] == 0:
            self.session_epoch = -1 if epoch == -1 else (epoch + 1)
        return body

    def acknowledge(self, acks, epoch: int | None = None, version: int = 2,
                    renew: bool = False) -> dict:
        epoch = self.session_epoch if epoch is None else epoch
        fields = dict(group_id=self.group, member_id=self.member_id, share_session_epoch=epoch,
                      topics=self._topics((), acks))
        if version >= 2:
            fields["is_renew_ack"] = renew
        body = self.broker.call(ApiKey.SHARE_ACKNOWLEDGE, version, **fields)
        if body["error_code"] == 0:
            self.session_epoch = -1 if epoch == -1 else epoch + 1
        return body


def acquired(body: dict) -> dict:
    """(topic id, partition) -> [(first, last, delivery count)] of a ShareFetch answer."""
    return {(t["topic_id"], p["partition_index"]): [
        (a["first_offset"], a["last_offset"], a["delivery_count"])
        for a in p["acquired_records"]]
        for t in body["responses"] for p in t["partitions"] if p["acquired_records"]}


def offsets(body: dict) -> list[int]:
    """Every acquired offset of a ShareFetch answer, sorted."""
    return sorted(o for ranges in acquired(body).values() for f, l, _ in ranges
                  for o in range(f, l + 1))


def values(body: dict) -> dict[int, bytes]:
    """offset -> value of the acquired records the answer carries."""
    out = {}
    wanted = set(offsets(body))
    for t in body["responses"]:
        for p in t["partitions"]:
            for batch in iter_batches(p["records"] or b""):
                for r in decode_records(batch):
                    if r.offset in wanted:
                        out[r.offset] = r.value
    return out


def partition_answer(body: dict, index: int = 0) -> dict:
    [answer] = [p for t in body["responses"] for p in t["partitions"]
                if p["partition_index"] == index]
    return answer
