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

from bisect import bisect_right
from dataclasses import dataclass, field
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
        events: list[tuple[int, int, str]] = [(line, 0, "") for line in info.get("launch_lines") or []]
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
        for line, kind, pid in sorted(events):
            if kind == 0 and (current is None or has_worker):
                current = Launch(len(launches) + 1, starts={logfile: line})
                launches.append(current)
                segments.setdefault(logfile, []).append((line, len(launches) - 1))
                has_worker = False
            elif kind == 1 and current is None:
                current = Launch(len(launches) + 1, starts={logfile: line})
                launches.append(current)
                segments.setdefault(logfile, []).append((line, len(launches) - 1))
            if pid and current is not None:
                current.processes.append(pid)
                launch_of[pid] = len(launches) - 1
                has_worker = has_worker or kind == 1
    layout_ = Layout(processes, launches, by_tag, roles, launch_of, segments)
    _merge_same_pids(layout_)
    return layout_


def _merge_same_pids(lay: Layout) -> None:
    """Two launches holding the same (host, pid) are one launch seen in two files."""
    while _merge_one_pair(lay):
        pass


def _merge_one_pair(lay: Layout) -> bool:
    """Merge the first two launches holding the same (host, pid), or one's pid with no host: True
    when two were merged (the launches are numbered again, so the caller looks again)."""
    info = {p["id"]: p for p in lay.processes}
    owner: dict[tuple, int] = {}
    keys_of_pid: dict[Any, list[tuple]] = {}  # each pid's keys in the order owner took them
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
                merge(lay, j, i)
                return True
            if key not in owner:
                keys_of_pid.setdefault(p["pid"], []).append(key)
            owner[key] = i
    return False


def merge(lay: Layout, into: int, other: int) -> None:
    """Fold launch `other` into launch `into`; the launches after `other` move down one."""
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


def merge_orphans(lay: Layout, has_figures: set[int]) -> None:
    """Worker-only launches with no figures of their own join the one launch with a launcher."""
    with_launcher = [i for i, launch in enumerate(lay.launches) if launch.has(LAUNCHER, lay.roles)]
    if len(with_launcher) != 1:
        return
    target = with_launcher[0]
    for i in range(len(lay.launches) - 1, -1, -1):
        if i != target and i not in has_figures and not lay.launches[i].has(LAUNCHER, lay.roles):
            merge(lay, target, i)
            if i < target:
                target -= 1
