"""A run's layout: its processes, their roles and its serving launches (DESIGN, "Words":
process, role, launch). Pure.

Input: the process tables the parser wrote per log file (ingest/parsers/processes.py), each
with the tags its rows carry, plus a person's role correction per file. Output: one entry per
process, and the launches: one start of a serving engine = its launcher processes and the
worker processes started after them in the same file. Files are cut into launches at the
lines that start an engine (a launch command, ServerArgs, a launcher env dump); launchers
that follow each other with no worker between them are one launch (`$ cmd` then its
`launcher pid=` dump). The same pid on the same host in two files is one launch (a log and
its rotated half). A file of worker processes with no launcher and no figures of its own
(per-process NCCL_DEBUG_FILE output) joins the run's launch when there is exactly one.

Records then find their launch: a worker's or a named launcher's through its process, the
untagged stream's (`main`, benchmark blocks) through the launch its line falls in.
"""

from __future__ import annotations

import heapq
import operator
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

LAUNCHER, WORKER, BENCH, NCCL_TESTS, UNKNOWN = (
    "serving launcher", "serving worker", "benchmark client", "nccl-tests", "unknown",
)
ROLES = (WORKER, LAUNCHER, BENCH, NCCL_TESTS, UNKNOWN)
SERVING = (WORKER, LAUNCHER)
MAIN, BENCH_TAG = "main", "bench"


@dataclass
class Launch:
    number: int
    processes: list[str] = field(default_factory=list)  # process ids
    starts: dict[int | None, int] = field(default_factory=dict)  # logfile -> first line

    def has(self, role: str, roles: dict[str, str]) -> bool:
        return any(roles[p] == role for p in self.processes)


@dataclass
class Layout:
    processes: list[dict]
    launches: list[Launch]
    by_tag: dict[tuple[int | None, str], str]  # (logfile, raw tag) -> process id
    roles: dict[str, str]  # process id -> role
    launch_of_process: dict[str, int]  # process id -> index in launches
    segments: dict[int | None, list[tuple[int, int]]]  # logfile -> [(start line, launch index)]

    def process_id(self, logfile: int | None, tag: str) -> str | None:
        return self.by_tag.get((logfile, tag or MAIN))

    def role(self, logfile: int | None, tag: str) -> str:
        pid = self.process_id(logfile, tag)
        return self.roles.get(pid, UNKNOWN) if pid else UNKNOWN

    def launch_index(self, logfile: int | None, tag: str, line: int) -> int | None:
        """The launch a record belongs to, or None (nccl-tests, unknown, no launch)."""
        pid = self.process_id(logfile, tag)
        role = self.roles.get(pid, UNKNOWN) if pid else UNKNOWN
        if role == NCCL_TESTS:
            return None
        if pid and (tag or MAIN) not in (MAIN, BENCH_TAG) and pid in self.launch_of_process:
            return self.launch_of_process[pid]
        if role == UNKNOWN and (tag or MAIN) not in (MAIN, BENCH_TAG):
            return None
        segs = self.segments.get(logfile)
        if segs:
            i = bisect_right(segs, line or 0, key=_start) - 1  # (no list of the starts a record: a log of
            # 1,000 launches took 9,000 of them, 0.2 s, on the nccl_unique mix)
            return segs[max(i, 0)][1]
        return 0 if len(self.launches) == 1 else None


def _start(segment: tuple[int, int]) -> int:
    return segment[0]


def _file_role(detected: str, override: str) -> str:
    if not override or override not in ROLES:
        return detected
    if override in SERVING and detected in SERVING:
        return detected  # "this file is serving": keep which of its processes launched
    return override


def layout(files: dict[int | None, dict]) -> Layout:
    """files: {logfile id (None for a lone parse): {"name", "role", "processes", "launch_lines"}}."""
    processes: list[dict] = []
    by_tag: dict[tuple[int | None, str], str] = {}
    roles: dict[str, str] = {}
    launches: list[Launch] = []
    launch_of: dict[str, int] = {}
    segments: dict[int | None, list[tuple[int, int]]] = {}
    for logfile, info in files.items():
        table = info.get("processes") or {}
        override = info.get("role") or ""
        canonical: dict[str, str] = {}
        for tag in table:
            target, seen = tag, set()
            while table.get(target, {}).get("alias") and target not in seen:
                seen.add(target)
                target = table[target]["alias"]
            canonical[tag] = target
        # Each process's aliases, found in one pass: a file of thousands of pids (an NCCL log of many
        # jobs) made a scan of every tag per process quadratic.
        aliases: dict[str, list[str]] = {}
        for t, c in canonical.items():
            if c != t:
                aliases.setdefault(c, []).append(t)
        events: list[tuple[int, int, str]] = []  # the processes' first lines; the launch lines merged in below
        for tag, p in table.items():
            if canonical[tag] != tag:
                continue
            pid = f"{logfile}:{tag}" if logfile is not None else tag
            role = _file_role(p.get("role") or UNKNOWN, override)
            labels = aliases.get(tag, [])
            rank = p.get("rank") or next((table[t].get("rank") for t in labels if table[t].get("rank")), None)
            processes.append({
                "id": pid, "logfile": logfile, "file": info.get("name"), "tag": tag,
                "aliases": labels, "role": role, "detected_role": p.get("role") or UNKNOWN,
                "rank": rank, "host": p.get("host"), "pid": p.get("pid"),
                "label": p.get("label") or next((table[t].get("label") for t in labels), None),
                "first_line": p.get("first_line"),
            })
            roles[pid] = role
            if role == LAUNCHER:
                events.append((p.get("first_line") or 0, 0, pid))
            elif role == WORKER:
                events.append((p.get("first_line") or 0, 1, pid))
        for tag, target in canonical.items():
            by_tag[(logfile, tag)] = f"{logfile}:{target}" if logfile is not None else target
        current: Launch | None = None
        has_worker = False
        # Every APIServer line of a vLLM log is a launch line (hundreds of thousands in a large log): they come
        # ascending (checked at C speed: a generator's comparisons cost more than the rest of the layout) and
        # are merged in by bisection, in the order heapq.merge of (line, 0, "") tuples and the sorted events
        # gave: those at or before an event's line first. Of the launch lines between two events only the
        # first can act: it opens a launch or not, and either way the next sees no worker since.
        launch_lines = info.get("launch_lines") or []
        if not all(map(operator.le, launch_lines, islice(launch_lines, 1, None))):
            launch_lines = sorted(launch_lines)
        at = 0  # the first launch line not merged yet
        for line, kind, pid in [*sorted(events), (None, 0, "")]:
            upto = len(launch_lines) if line is None else bisect_right(launch_lines, line, at)
            if upto > at:
                if current is None or has_worker:
                    current = Launch(len(launches) + 1, starts={logfile: launch_lines[at]})
                    launches.append(current)
                    segments.setdefault(logfile, []).append((launch_lines[at], len(launches) - 1))
                    has_worker = False
                at = upto
            if line is None:
                break
            if kind == 0 and (current is None or has_worker) or kind == 1 and current is None:
                current = Launch(len(launches) + 1, starts={logfile: line})
                launches.append(current)
                segments.setdefault(logfile, []).append((line, len(launches) - 1))
                has_worker = False  # (it was, where no launch was open)
            if pid and current is not None:
                current.processes.append(pid)
                launch_of[pid] = len(launches) - 1
                has_worker = has_worker or kind == 1
    layout_ = Layout(processes, launches, by_tag, roles, launch_of, segments)
    _merge_same_pids(layout_)
    return layout_


def _merge_same_pids(lay: Layout) -> None:
    """Two launches holding the same (host, pid), or one's pid with no host, are one launch seen in
    two files.

    The rule that decides which launch takes which (and so the order of a merged launch's
    processes): in launch order, then each launch's process order, the first process matching a
    process of an earlier launch folds its launch into the earliest launch it matches, and the
    search starts again from the first launch. Starting again was quadratic (3,000 launches: 25 s),
    so the same merges are found without it: a heap of the places still to look at, in that order,
    and per key the launches holding it (sorted lists: the earliest one, and those a fold newly
    makes match an earlier launch)."""
    launches = lay.launches
    if len(launches) < 2:
        return
    info = {p["id"]: p for p in lay.processes}

    def key_of(pid: str) -> tuple | None:
        p = info[pid]
        return None if p["pid"] is None else (p["host"] or "", p["pid"])

    # Per exact key and per pid (any host): the launches holding it, sorted (launches are known by
    # their index before any fold; a fold keeps the earlier one, so their order stays theirs).
    by_key: dict[tuple, list[int]] = {}
    by_pid: dict[Any, list[int]] = {}
    keys: list[list[tuple | None]] = []
    for i, launch in enumerate(launches):
        own = [key_of(pid) for pid in launch.processes]
        keys.append(own)
        for key in own:
            if key is not None:
                for held in (by_key.setdefault(key, []), by_pid.setdefault(key[1], [])):
                    if not held or held[-1] != i:
                        held.append(i)

    def holders(key: tuple) -> list[list[int]]:
        """The lists of launches holding a key that matches `key`."""
        host, pid = key
        if not host:
            return [by_pid[pid]]
        return [by_key[key], *([by_key[("", pid)]] if ("", pid) in by_key else [])]

    into = list(range(len(launches)))  # each launch's: itself, or the launch it was folded into
    heap = [(i, 0) for i in range(len(launches))]  # (launch, first process to look at): sorted already
    while heap:
        i, start = heapq.heappop(heap)
        if into[i] != i:
            continue
        own = keys[i]
        for q in range(start, len(own)):
            key = own[q]
            if key is None:
                continue
            j = min(held[0] for held in holders(key))
            if j >= i:
                continue
            # Fold i into j (the earliest launch key matches): j's new processes are looked at
            # again, and so is every launch between j and i that one of them matches.
            moved = [k for k in own if k is not None]
            again: set[int] = set()
            for k in moved:
                for held in holders(k):
                    again.update(held[bisect_left(held, j + 1):bisect_left(held, i)])
            a = launches[j]
            heapq.heappush(heap, (j, len(a.processes)))
            for later in again:
                heapq.heappush(heap, (later, 0))
            a.processes.extend(launches[i].processes)
            for logfile, line in launches[i].starts.items():
                a.starts.setdefault(logfile, line)
            keys[j].extend(own)
            for k in moved:
                for held in (by_key[k], by_pid[k[1]]):
                    at = bisect_left(held, i)
                    if at < len(held) and held[at] == i:
                        del held[at]
                    at = bisect_left(held, j)
                    if at == len(held) or held[at] != j:
                        held.insert(at, j)
            into[i] = j
            break
    _drop_folded(lay, into)


def _drop_folded(lay: Layout, into: list[int]) -> None:
    """The launches folded into others (`into[i]`: the launch i went into, itself if none, both
    indices before any fold) removed, as folding them one at a time left them: the others in
    their order, numbered again, processes and segments pointing at their launch's new index."""
    final = list(into)
    for i in range(len(final)):  # a launch folded into one that was folded later: to the last one
        while final[final[i]] != final[i]:
            final[i] = final[final[i]]
    kept = [i for i, f in enumerate(final) if f == i]
    if len(kept) == len(final):
        return
    at = {i: n for n, i in enumerate(kept)}
    new = [at[f] for f in final]
    lay.launches = [lay.launches[i] for i in kept]
    lay.launch_of_process = {pid: new[i] for pid, i in lay.launch_of_process.items()}
    lay.segments = {lf: [(s, new[i]) for s, i in segs] for lf, segs in lay.segments.items()}
    for n, launch in enumerate(lay.launches, 1):
        launch.number = n


def _absorb(a: Launch, b: Launch) -> None:
    a.processes.extend(b.processes)
    for logfile, line in b.starts.items():
        a.starts.setdefault(logfile, line)


def merge_orphans(lay: Layout, has_figures: set[int]) -> None:
    """Worker-only launches with no figures of their own join the one launch with a launcher
    (the last first, as they always did: its processes come after the target's in that order),
    all in one pass: a renumbering of every launch and process a merge was quadratic in them."""
    with_launcher = [i for i, launch in enumerate(lay.launches) if launch.has(LAUNCHER, lay.roles)]
    if len(with_launcher) != 1:
        return
    target = with_launcher[0]
    into = list(range(len(lay.launches)))
    for i in range(len(lay.launches) - 1, -1, -1):
        if i != target and i not in has_figures and not lay.launches[i].has(LAUNCHER, lay.roles):
            _absorb(lay.launches[target], lay.launches[i])
            into[i] = target
    _drop_folded(lay, into)
