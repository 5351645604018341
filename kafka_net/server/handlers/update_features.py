"""UpdateFeatures (API key 57): serves v0-v2.

Behaviour (Kafka's ``QuorumController.updateFeatures`` and
``FeatureControlManager``): finalize feature levels, all or none.  Each
update is checked against :class:`~kafka_net.server.features.FeatureControl`'s
supported ranges: an unknown feature, a level outside the range, a downgrade
without SAFE_DOWNGRADE / UNSAFE_DOWNGRADE (v0: allow_downgrade), an
"upgrade" marked as a downgrade, a metadata.version downgrade (Kafka
refuses them when the metadata format changed, which it did at every level
below 4.0-IV3) or a kraft.version change: INVALID_UPDATE_VERSION, with
Kafka's message prefixed "The update failed for all features since the
following feature had an error: ".  validate_only (v1+) checks and changes
nothing.  The levels are written as FeatureLevelRecords (they survive a
restart).  A change shows in the next ApiVersions answer with a new
finalized features epoch; group.version 0 turns the consumer group protocol
off (ConsumerGroupHeartbeat answers UNSUPPORTED_VERSION), as in Kafka.

v0-v1 answer one result per feature (all NONE on success, none on error);
v2 only the top-level error.

ACL: ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED at the top level without it).
"""

from kafka_net.protocol.api_keys import ApiKey
from kafka_net.protocol.error_codes import ErrorCode
from kafka_net.server.authorizer import AclOperation
from kafka_net.server.features import SAFE_DOWNGRADE, UPGRADE, FeatureUpdateError

API_KEY = ApiKey.UPDATE_FEATURES

FAILED_PREFIX = "The update failed for all features since the following feature had an error: "


def handle(ctx, request: dict) -> dict:
    if not ctx.authorize_cluster(AclOperation.ALTER):
        return error_response(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    updates = [(u["feature"], u["max_version_level"], _upgrade_type(ctx.api_version, u))
               for u in request["feature_updates"]]
    with ctx.controller.lock:   # checks and records as one change, as Kafka's controller
        try:
            levels = ctx.features.check(updates, ctx.metadata_cache.node_id)
        except FeatureUpdateError as exc:
            return {**error_response(request, ctx.api_version,
                                     ErrorCode.INVALID_UPDATE_VERSION),
                    "error_message": FAILED_PREFIX + str(exc)}
        if not request.get("validate_only", False):
            ctx.controller.update_features(levels)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "results": [{"feature": u["feature"], "error_code": ErrorCode.NONE,
                         "error_message": None} for u in request["feature_updates"]]}


def _upgrade_type(version: int, update: dict) -> int:
    if version == 0:
        return SAFE_DOWNGRADE if update["allow_downgrade"] else UPGRADE
    return update["upgrade_type"]


def error_response(request: dict, version: int, error_code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": error_code, "error_message": None,
            "results": []}
