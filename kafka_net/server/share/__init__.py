"""Share groups (KIP-932): SharePartition, the share sessions, the share group
coordinator and the state kept in ``__share_group_state``.  docs/design.md,
"Share groups", says where to start reading."""
