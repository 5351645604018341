"""A streams application's topology description (KIP-1331, Kafka 4.4): the
``TopologyDescription`` struct of StreamsGroupTopologyDescriptionUpdate (key
93) and StreamsGroupDescribe v1, which the group coordinator also keeps in its
``StreamsGroupMetadata`` record.  Apart from the message modules, which are
imported per API on first use, because the coordinator's records need it at
start-up.

Each sub-topology's nodes (``node_type`` 1 SOURCE, 2 PROCESSOR, 3 SINK) with
the topics they read and write, the state stores they use and their
successors, and the global stores.
"""

from kafka_net.protocol.schema import INT8, STRING, Array, Field, Struct

TOPOLOGY_NODE = Struct(
    Field("name", STRING),
    Field("node_type", INT8),
    Field("source_topics", Array(STRING)),
    Field("sink_topic", STRING, nullable="0+", default=None),
    Field("stores", Array(STRING)),
    Field("successors", Array(STRING)),
)

TOPOLOGY_DESCRIPTION = Struct(
    Field("subtopologies", Array(Struct(
        Field("subtopology_id", STRING),
        Field("nodes", Array(TOPOLOGY_NODE)),
    ))),
    Field("global_stores", Array(Struct(
        Field("source", TOPOLOGY_NODE),
        Field("processor", TOPOLOGY_NODE),
    ))),
)
