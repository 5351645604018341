"""The sticky task assignor of streams groups: Hypothesis invariants.

Every task is active on exactly one member; active counts differ by at most
one; an unchanged group given its own assignment back gets the same one;
a standby is never on the process of its task's active, nor twice on one
process, and only stateful tasks get standbys.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_net.server.group.streams_assignor import MemberSpec, assign
from kafka_net.server.group.streams_group import TasksTuple


def _tasks(counts: dict[str, int]) -> list[tuple[str, int]]:
    return [(s, p) for s, n in counts.items() for p in range(n)]


groups = st.fixed_dictionaries({
    "counts": st.dictionaries(st.sampled_from("0123"), st.integers(0, 12), min_size=1),
    "members": st.dictionaries(st.text("abcdefgh", min_size=1, max_size=3),
                               st.sampled_from(["p1", "p2", "p3", "p4"]), min_size=1,
                               max_size=8),
    "standbys": st.integers(0, 3),
    "stateful": st.frozensets(st.sampled_from("0123")),
})


def _flat(tasks: dict) -> list[tuple[str, int]]:
    return [(s, p) for s, parts in tasks.items() for p in parts]


@settings(max_examples=200, deadline=None)
@given(groups)
def test_every_task_is_active_exactly_once_and_counts_differ_by_at_most_one(g):
    members = {m: MemberSpec(p) for m, p in g["members"].items()}
    result = assign(members, _tasks(g["counts"]), g["standbys"])
    active = [t for r in result.values() for t in _flat(r.active)]
    assert sorted(active) == sorted(_tasks(g["counts"]))
    sizes = [len(_flat(r.active)) for r in result.values()]
    assert max(sizes) - min(sizes) <= 1


@settings(max_examples=200, deadline=None)
@given(groups)
def test_an_unchanged_group_keeps_its_assignment(g):
    members = {m: MemberSpec(p) for m, p in g["members"].items()}
    tasks = _tasks(g["counts"])
    first = assign(members, tasks, g["standbys"], g["stateful"])
    again = assign({m: MemberSpec(p, first[m]) for m, p in g["members"].items()},
                   tasks, g["standbys"], g["stateful"])
    assert {m: r.normalized() for m, r in again.items()} == \
        {m: r.normalized() for m, r in first.items()}


@settings(max_examples=200, deadline=None)
@given(groups)
def test_standbys_avoid_the_active_s_process(g):
    members = {m: MemberSpec(p) for m, p in g["members"].items()}
    result = assign(members, _tasks(g["counts"]), g["standbys"], g["stateful"])
    process_of_active = {t: g["members"][m] for m, r in result.items() for t in _flat(r.active)}
    holders: dict[tuple[str, int], list[str]] = {}
    for m, r in result.items():
        for t in _flat(r.standby):
            assert g["members"][m] != process_of_active[t]
            holders.setdefault(t, []).append(g["members"][m])
    processes = len(set(g["members"].values()))
    for t in process_of_active:
        got = holders.get(t, [])
        assert len(got) == len(set(got))                       # one per process
        wanted = g["standbys"] if t[0] in g["stateful"] else 0
        assert len(got) == min(wanted, processes - 1)          # as many as allowed


@settings(max_examples=100, deadline=None)
@given(groups, st.data())
def test_members_that_stay_keep_their_share_of_previous_tasks(g, data):
    members = {m: MemberSpec(p) for m, p in g["members"].items()}
    tasks = _tasks(g["counts"])
    first = assign(members, tasks)
    leaving = data.draw(st.sampled_from(sorted(members)))
    stay = {m: MemberSpec(p, first[m]) for m, p in g["members"].items() if m != leaving}
    if not stay:
        return
    second = assign(stay, tasks)
    base = len(tasks) // len(stay)
    for m in stay:   # each keeps what it had, up to the new fair share
        kept = set(_flat(first[m].active)) & set(_flat(second[m].active))
        assert len(kept) >= min(len(_flat(first[m].active)), base)


def test_no_members_no_assignment():
    assert assign({}, [("0", 0)]) == {}
    assert assign({"a": MemberSpec("p")}, []) == {"a": TasksTuple({}, {})}


def test_a_task_its_owner_cannot_keep_stays_on_its_process():
    previous = TasksTuple({"0": {0, 1, 2, 3}})
    members = {"a": MemberSpec("p1", previous), "b": MemberSpec("p1"), "c": MemberSpec("p2")}
    result = assign(members, _tasks({"0": 6}))
    assert result["a"].active == {"0": {0, 1}}
    assert result["b"].active == {"0": {2, 3}}   # a's state is on p1's disk
    assert result["c"].active == {"0": {4, 5}}
