"""runs/layout.py's merges of launches, pure: launches that share a pid (one launch seen in two
files) and worker-only launches joining the one with a launcher, held equal to the rule they
always followed (the quadratic merge loop, kept here as the reference) and timed on thousands."""

from __future__ import annotations

import copy
import time
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from runs.layout import LAUNCHER, WORKER, Launch, Layout, _merge_same_pids, layout, merge_orphans


def _reference_merge(lay: Layout, into: int, other: int) -> None:
    def remap(i: int) -> int:
        i = into if i == other else i
        return i - 1 if i > other else i

    a, b = lay.launches[into], lay.launches[other]
    a.processes.extend(b.processes)
    for logfile, line in b.starts.items():
        a.starts.setdefault(logfile, line)
    del lay.launches[other]
    lay.launch_of_process = {pid: remap(i) for pid, i in lay.launch_of_process.items()}
    lay.segments = {lf: [(s, remap(i)) for s, i in segs] for lf, segs in lay.segments.items()}
    for n, launch in enumerate(lay.launches, 1):
        launch.number = n


def _reference_same_pids(lay: Layout) -> None:
    """The merge loop before it was made linear: look from the first launch, merge the first pair, again."""
    while True:
        info = {p["id"]: p for p in lay.processes}
        owner: dict[tuple, int] = {}
        keys_of_pid: dict[Any, list[tuple]] = {}
        merged = False
        for i, launch in enumerate(lay.launches):
            for pid in launch.processes:
                p = info[pid]
                if p["pid"] is None:
                    continue
                key = (p["host"] or "", p["pid"])
                j = owner.get(key)
                if j is None:
                    j = next((owner[k] for k in keys_of_pid.get(p["pid"], ()) if not k[0] or not key[0]), None)
                if j is not None and j != i:
                    _reference_merge(lay, j, i)
                    merged = True
                    break
                if key not in owner:
                    keys_of_pid.setdefault(p["pid"], []).append(key)
                owner[key] = i
            if merged:
                break
        if not merged:
            return


def _reference_orphans(lay: Layout, has_figures: set[int]) -> None:
    with_launcher = [i for i, launch in enumerate(lay.launches) if launch.has(LAUNCHER, lay.roles)]
    if len(with_launcher) != 1:
        return
    target = with_launcher[0]
    for i in range(len(lay.launches) - 1, -1, -1):
        if i != target and i not in has_figures and not lay.launches[i].has(LAUNCHER, lay.roles):
            _reference_merge(lay, target, i)
            if i < target:
                target -= 1


def _made(spec: list[list[tuple[str, int | None, str]]]) -> Layout:
    """A layout of launches as given: per launch, its processes' (host, pid, role); each launch
    its own file segment, so segments and launch_of_process are remapped as a real run's are."""
    processes, launches, roles, launch_of = [], [], {}, {}
    segments: dict[int | None, list[tuple[int, int]]] = {}
    for i, procs in enumerate(spec):
        launch = Launch(i + 1, starts={i % 3: 10 * i, (i + 1) % 3: 10 * i + 1})
        for n, (host, pid, role) in enumerate(procs):
            ident = f"{i}:{n}"
            processes.append({"id": ident, "host": host or None, "pid": pid, "role": role})
            roles[ident] = role
            launch.processes.append(ident)
            launch_of[ident] = i
        launches.append(launch)
        segments.setdefault(i % 3, []).append((10 * i, i))
    return Layout(processes, launches, {}, roles, launch_of, segments)


def _state(lay: Layout) -> tuple:
    return ([(la.number, la.processes, list(la.starts.items())) for la in lay.launches],
            list(lay.launch_of_process.items()), lay.segments)


PROCESS = st.tuples(st.sampled_from(["", "a", "b"]), st.one_of(st.none(), st.integers(1, 6)),
                    st.sampled_from([LAUNCHER, WORKER]))


@given(st.lists(st.lists(PROCESS, max_size=4), max_size=9))
def test_launches_sharing_pids_merge_as_the_merge_loop_did(spec):
    lay, ref = _made(spec), _made(spec)
    _merge_same_pids(lay)
    _reference_same_pids(ref)
    assert _state(lay) == _state(ref)


@given(st.lists(st.lists(PROCESS, max_size=3), max_size=8), st.sets(st.integers(0, 8)))
def test_orphans_join_the_one_launcher_as_the_merge_loop_did(spec, figures):
    lay = _made(spec)
    ref = copy.deepcopy(lay)
    merge_orphans(lay, figures)
    _reference_orphans(ref, figures)
    assert _state(lay) == _state(ref)


def test_three_thousand_launches_sharing_pids_merge_in_linear_time():
    """3,000 launches, each sharing a pid with the one before it (a chain: all one launch) and
    3,000 more in pairs across two files with and without hosts: the merge loop took ~25 s."""
    chain: list[list[tuple[str, int | None, str]]] = [[("vm", n, LAUNCHER), ("vm", n + 1, WORKER)] for n in range(3000)]
    pairs: list[list[tuple[str, int | None, str]]] = [[("h", 10_000 + n, WORKER)] for n in range(1500)]
    pairs += [[("", 10_000 + n, WORKER)] for n in range(1500)]
    lay = _made(chain + pairs)
    start = time.process_time()
    _merge_same_pids(lay)
    took = time.process_time() - start
    assert len(lay.launches) == 1 + 1500
    assert lay.launches[0].processes[:4] == ["0:0", "0:1", "1:0", "1:1"] and len(lay.launches[0].processes) == 6000
    assert lay.launches[1].processes == ["3000:0", "4500:0"] and lay.launches[-1].number == 1501
    assert took < 2, took


def test_many_hosts_of_one_pid_and_one_without_a_host_fold_in_order():
    """pid 7 on hosts a and b (two launches), then pid 7 with no host: it matches both, goes to the
    first, and the second follows (it now matches the first)."""
    lay = layout({1: {"name": "x.log", "processes": {
        "pid 7a": {"pid": 7, "host": "a", "role": WORKER, "first_line": 1},
        "pid 9": {"pid": 9, "host": "a", "role": LAUNCHER, "first_line": 5},
        "pid 7b": {"pid": 7, "host": "b", "role": WORKER, "first_line": 6},
        "pid 8": {"pid": 8, "host": "a", "role": LAUNCHER, "first_line": 10},
        "pid 7": {"pid": 7, "host": None, "role": WORKER, "first_line": 11},
    }}})
    assert [la.processes for la in lay.launches] == [["1:pid 7a", "1:pid 8", "1:pid 7", "1:pid 9", "1:pid 7b"]]
    assert lay.segments == {1: [(1, 0), (5, 0), (10, 0)]}
