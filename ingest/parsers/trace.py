"""PyTorch profiler traces (Kineto Chrome-trace JSON, `.json` or `.json.gz`): where each range's
GPU time goes. Pure: a binary stream in, a JSON-ready dict out; no Django.

Reading streams the `traceEvents` array one event at a time through ijson's C backend (yajl2_c):
a trace of several GB is never one value in memory. What is kept is compact columns (array
module) of the events that matter: kernels, memcpy and memset (GPU activity), GPU ranges
(`gpu_user_annotation`), CPU ranges (`user_annotation`) and kernel launches (`cuda_runtime`,
`cuda_driver`): about 50 bytes a kernel, whatever the JSON spent on it.

Analysis, per device (a file per rank; a file holding several devices gives one entry each):
- every GPU range, whatever its name, is a window [ts, ts + dur]; its cycle is the CPU cycle
  range (`cycle_N`, `step_N`, `iteration_N`; `ProfilerStep#N` when there are none) holding its
  CPU twin (the `user_annotation` with the same External id), else its occurrence number;
- wall = the range's duration; busy = the union of the kernel intervals on all streams, clipped
  to the window; time by class = each kernel's clipped duration, summed per class (kernels that
  overlap on two streams count twice there, once in busy); kernels = kernels overlapping the
  window; launches = launch calls inside the CPU twin (a CUDA graph launch is one launch, many
  kernels).
Which range names are which phases is decided later (runs/traces.py), so a person's mapping of
names to phases needs no second reading of the file.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import zlib
from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import ijson
import numpy as np

from .kernels import classify

VERSION = 1
HEAD_BYTES = 1 << 20
GPU_CATS = frozenset(("kernel", "gpu_memcpy", "gpu_memset"))
LAUNCH_CATS = frozenset(("cuda_runtime", "cuda_driver"))
KEPT = GPU_CATS | LAUNCH_CATS | {"gpu_user_annotation", "user_annotation"}
# Launch calls: cudaLaunchKernel(ExC), cuLaunchKernel(Ex), cudaLaunchCooperativeKernel, cudaGraphLaunch.
_LAUNCH = re.compile(r"Launch")
CYCLE = re.compile(r"^(?:cycle|step|decode_step|iteration|iter)[ _#-]?(\d+)$", re.IGNORECASE)
PROFILER_STEP = re.compile(r"^ProfilerStep#(\d+)$")
# A timestamp is microseconds since some epoch (Kineto: the Unix epoch or the machine's boot);
# beyond ~year 2100 in Unix microseconds, or a duration over a day, is not a measurement.
MAX_TS_US = 4.1e15
MAX_DUR_US = 86_400e6
TOP_PER_CYCLE = 3
TOP_PER_RANGE = 10
TIMELINE_CYCLES = 12
TIMELINE_KERNELS = 4000


class TraceError(Exception):
    """A trace that cannot be read into a breakdown; the message says why and what to do."""

    def __init__(self, message: str, event: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.event = event


def is_trace(head: bytes) -> bool:
    """Whether a file's first bytes (decompressed) look like a Chrome/Kineto trace, not a log."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text.startswith(b"{"):
        return False
    return any(key in head for key in (b'"traceEvents"', b'"deviceProperties"', b'"schemaVersion"'))


class _Counting:
    """A file-like reader that counts the bytes it hands on (the JSON read, for rates and messages)."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.bytes = 0

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        self.bytes += len(data)
        return data


@dataclass
class Trace:
    """The events that matter, as columns; names interned (kernel names and range names apart)."""

    meta: dict = field(default_factory=dict)
    events: int = 0
    json_bytes: int = 0
    categories: Counter = field(default_factory=Counter)
    kernel_names: list[str] = field(default_factory=list)
    range_names: list[str] = field(default_factory=list)
    # kernels (and memcpy/memset): device, stream, name id, start, duration (µs), event index
    k_dev: array = field(default_factory=lambda: array("i"))
    k_stream: array = field(default_factory=lambda: array("i"))
    k_name: array = field(default_factory=lambda: array("i"))
    k_ts: array = field(default_factory=lambda: array("d"))
    k_dur: array = field(default_factory=lambda: array("d"))
    k_idx: array = field(default_factory=lambda: array("q"))
    # GPU ranges: device, name id, start, duration, External id, event index
    g_dev: array = field(default_factory=lambda: array("i"))
    g_name: array = field(default_factory=lambda: array("i"))
    g_ts: array = field(default_factory=lambda: array("d"))
    g_dur: array = field(default_factory=lambda: array("d"))
    g_ext: array = field(default_factory=lambda: array("q"))
    g_idx: array = field(default_factory=lambda: array("q"))
    # CPU ranges: process, name id, start, duration, External id, event index
    c_pid: array = field(default_factory=lambda: array("q"))
    c_name: array = field(default_factory=lambda: array("i"))
    c_ts: array = field(default_factory=lambda: array("d"))
    c_dur: array = field(default_factory=lambda: array("d"))
    c_ext: array = field(default_factory=lambda: array("q"))
    c_idx: array = field(default_factory=lambda: array("q"))
    # launches: process, time
    l_pid: array = field(default_factory=lambda: array("q"))
    l_ts: array = field(default_factory=lambda: array("d"))
    absurd: int = 0
    first_absurd: int | None = None


def _open(stream: BinaryIO) -> BinaryIO:
    magic = stream.read(2)
    stream.seek(0)
    if magic == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=stream, mode="rb")  # type: ignore[return-value]
    return stream


def _meta(head: bytes) -> dict:
    """The trace's top-level keys written before `traceEvents` (devices, distributedInfo)."""
    at = head.find(b'"traceEvents"')
    if at < 0:
        return {}
    try:
        value = json.loads(head[:at].rstrip().rstrip(b",") + b"}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _time(ev: dict) -> tuple[float, float] | None:
    ts, dur = ev.get("ts"), ev.get("dur", 0)
    if not isinstance(ts, float | int) or not isinstance(dur, float | int) or isinstance(ts, bool):
        return None
    if not (0 <= ts < MAX_TS_US and 0 <= dur < MAX_DUR_US) or math.isnan(ts) or math.isnan(dur):
        return None
    return float(ts), float(dur)


def _int(value: Any, default: int = -1) -> int:
    return value if type(value) is int else default


def read(stream: BinaryIO) -> Trace:
    """Stream a trace (plain or gzipped JSON) into a Trace. Raises TraceError for what is no trace,
    a damaged or truncated file."""
    raw = _open(stream)
    try:
        head = raw.read(HEAD_BYTES)
        if not is_trace(head):
            raise TraceError("not a PyTorch profiler trace: no JSON object with `traceEvents` at its start")
        meta = _meta(head)
        raw.seek(0)
        counted = _Counting(raw)
        trace = Trace(meta=meta)
        _events(trace, counted)
        trace.json_bytes = counted.bytes
    except EOFError:
        raise TraceError("the .gz file is truncated (no end-of-stream marker): the trace is cut short, "
                         "so no breakdown is kept; upload the whole file") from None
    except (gzip.BadGzipFile, zlib.error) as e:
        raise TraceError(f"damaged .gz file: {e}") from None
    except ijson.IncompleteJSONError as e:
        where = f" after {counted.bytes} bytes" if "counted" in locals() else ""
        raise TraceError(f"the trace's JSON is cut short or damaged{where} ({str(e).strip()[:200]}): "
                         "no breakdown is kept from a partial trace") from None
    return trace


def _events(t: Trace, f: Any) -> None:
    kernel_ids: dict[str, int] = {}
    range_ids: dict[str, int] = {}
    # Counted in a plain dict (a Counter's += costs more, and this runs for every event).
    cats: dict[Any, int] = {}
    i = -1
    for i, ev in enumerate(ijson.items(f, "traceEvents.item", use_float=True)):
        try:
            cat = ev["cat"]
            cats[cat] = cats.get(cat, 0) + 1
        except (KeyError, TypeError):  # no category (metadata), not an object, or a category no key can be
            continue
        if cat not in KEPT or ev.get("ph") != "X":
            continue
        if cat in GPU_CATS:
            tm = _time(ev)
            args = ev.get("args") or {}
            if tm is None:
                t.absurd += 1
                if t.first_absurd is None:
                    t.first_absurd = i
                continue
            name = str(ev.get("name", ""))
            nid = kernel_ids.get(name)
            if nid is None:
                nid = kernel_ids[name] = len(t.kernel_names)
                t.kernel_names.append(name)
            t.k_dev.append(_int(ev.get("pid"), _int(args.get("device"))))
            t.k_stream.append(_int(args.get("stream"), _int(ev.get("tid"))))
            t.k_name.append(nid)
            t.k_ts.append(tm[0])
            t.k_dur.append(tm[1])
            t.k_idx.append(i)
        elif cat in LAUNCH_CATS:
            launch = ev.get("name")
            if isinstance(launch, str) and _LAUNCH.search(launch):
                tm = _time(ev)
                if tm is not None:
                    t.l_pid.append(_int(ev.get("pid")))
                    t.l_ts.append(tm[0])
        elif cat == "gpu_user_annotation" or cat == "user_annotation":
            tm = _time(ev)
            if tm is None:
                t.absurd += 1
                if t.first_absurd is None:
                    t.first_absurd = i
                continue
            name = str(ev.get("name", ""))
            rid = range_ids.get(name)
            if rid is None:
                rid = range_ids[name] = len(t.range_names)
                t.range_names.append(name)
            ext = _int((ev.get("args") or {}).get("External id"))
            if cat == "gpu_user_annotation":
                t.g_dev.append(_int(ev.get("pid")))
                t.g_name.append(rid)
                t.g_ts.append(tm[0])
                t.g_dur.append(tm[1])
                t.g_ext.append(ext)
                t.g_idx.append(i)
            else:
                t.c_pid.append(_int(ev.get("pid")))
                t.c_name.append(rid)
                t.c_ts.append(tm[0])
                t.c_dur.append(tm[1])
                t.c_ext.append(ext)
                t.c_idx.append(i)
    t.events = i + 1
    t.categories.update(cats)


def _np(a: array, dtype: Any) -> np.ndarray:
    return np.frombuffer(a, dtype=dtype) if len(a) else np.zeros(0, dtype=dtype)


def union_ms(starts: np.ndarray, ends: np.ndarray) -> float:
    """Length (ms) of the union of intervals sorted by start (µs): each adds what lies past the
    furthest end before it."""
    if not len(starts):
        return 0.0
    reach = np.maximum.accumulate(ends)
    before = np.concatenate(([-np.inf], reach[:-1]))
    return float(np.maximum(0.0, ends - np.maximum(starts, before)).clip(min=0).sum() / 1000.0)


def _r(x: float, places: int = 4) -> float:
    return round(float(x), places)


def analyse(t: Trace) -> dict:
    """The breakdown of a read trace, per device, by range and cycle. Raises TraceError when there
    is nothing to break down (no GPU activity)."""
    warnings: list[dict] = []
    if t.absurd:
        share = t.absurd / (t.absurd + len(t.k_ts) + len(t.g_ts) + len(t.c_ts))
        message = (f"{t.absurd} events have timestamps or durations that are no measurement (negative, "
                   f"not a number, or beyond a day); first at event #{t.first_absurd}: they are left out")
        if share > 0.5:
            raise TraceError(message.replace("they are left out", "most of the trace is unreadable"),
                             t.first_absurd)
        warnings.append({"event": t.first_absurd, "message": message})
    k_dev = _np(t.k_dev, np.int32)
    if not len(k_dev):
        cpu = sum(v for k, v in t.categories.items() if k in ("cpu_op", "user_annotation", "python_function"))
        raise TraceError(
            f"no GPU events in this trace ({t.events} events, {cpu} on the CPU): a CPU-only profile has no "
            "kernels to break down; record with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]")
    classes = [classify(n) for n in t.kernel_names]
    devices = sorted(set(k_dev.tolist()))
    if len(devices) > 1:
        warnings.append({"event": None, "message": (
            f"this file holds {len(devices)} GPUs ({', '.join(map(str, devices))}); each is broken down on "
            "its own (one file per rank reads the same way)")})
    dist = t.meta.get("distributedInfo")
    dist = dist if isinstance(dist, dict) else {}
    gpus = {d.get("id"): d.get("name") for d in t.meta.get("deviceProperties") or [] if isinstance(d, dict)}
    ranks = []
    for dev in devices:
        entry = _device(t, dev, classes)
        entry["gpu"] = gpus.get(dev)
        entry["rank"] = dist.get("rank") if len(devices) == 1 else None
        entry["world_size"] = dist.get("world_size")
        ranks.append(entry)
    return {
        "v": VERSION, "kind": "kineto", "events": t.events, "json_bytes": t.json_bytes,
        "schema": t.meta.get("schemaVersion"), "categories": dict(t.categories.most_common(20)),
        "kernel_names": t.kernel_names, "kernel_classes": classes,
        "ranks": ranks, "warnings": warnings,
    }


def _cpu_cycles(t: Trace) -> tuple[dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]], str]:
    """Per CPU process, its cycle ranges (start, end, cycle number) sorted by start."""
    names = t.range_names
    numbers = {i: CYCLE.match(n) for i, n in enumerate(names)}
    kind = "cycle"
    if not any(numbers.values()):
        numbers = {i: PROFILER_STEP.match(n) for i, n in enumerate(names)}
        kind = "ProfilerStep"
    c_name = _np(t.c_name, np.int32)
    c_pid, c_ts, c_dur = _np(t.c_pid, np.int64), _np(t.c_ts, np.float64), _np(t.c_dur, np.float64)
    out = {}
    for pid in set(c_pid.tolist()):
        rows = [(c_ts[j], c_ts[j] + c_dur[j], int(numbers[c_name[j]].group(1)))  # type: ignore[union-attr]
                for j in np.flatnonzero(c_pid == pid) if numbers.get(int(c_name[j]))]
        rows.sort()
        if rows:
            a = np.array(rows)
            out[pid] = (a[:, 0], a[:, 1], a[:, 2].astype(np.int64))
    return out, kind


def _device(t: Trace, dev: int, classes: list[str]) -> dict:
    sel = np.flatnonzero(_np(t.k_dev, np.int32) == dev)
    ts = _np(t.k_ts, np.float64)[sel]
    order = np.argsort(ts, kind="stable")
    sel = sel[order]
    ks = ts[order]
    kd = _np(t.k_dur, np.float64)[sel]
    ke = ks + kd
    kn = _np(t.k_name, np.int32)[sel]
    kstream = _np(t.k_stream, np.int32)[sel]
    kidx = _np(t.k_idx, np.int64)[sel]
    class_names = sorted(set(classes))
    class_of = np.array([class_names.index(c) for c in classes], dtype=np.int32)
    kc = class_of[kn] if len(kn) else np.zeros(0, dtype=np.int32)
    max_dur = float(kd.max()) if len(kd) else 0.0
    n_names = len(t.kernel_names)

    # CPU twins by External id, cycles by CPU cycle range.
    c_ext = _np(t.c_ext, np.int64)
    twin_of = {int(e): j for j, e in enumerate(c_ext.tolist()) if e >= 0}
    c_pid, c_ts, c_dur = _np(t.c_pid, np.int64), _np(t.c_ts, np.float64), _np(t.c_dur, np.float64)
    cycles, cycle_kind = _cpu_cycles(t)
    l_pid, l_ts = _np(t.l_pid, np.int64), _np(t.l_ts, np.float64)
    launches_of = {pid: np.sort(l_ts[l_pid == pid]) for pid in set(l_pid.tolist())}

    g_sel = np.flatnonzero(_np(t.g_dev, np.int32) == dev)
    g_ts = _np(t.g_ts, np.float64)[g_sel]
    g_order = np.argsort(g_ts, kind="stable")
    g_sel = g_sel[g_order]
    g_ts = g_ts[g_order]
    g_dur = _np(t.g_dur, np.float64)[g_sel]
    g_name = _np(t.g_name, np.int32)[g_sel]
    g_ext = _np(t.g_ext, np.int64)[g_sel]
    g_idx = _np(t.g_idx, np.int64)[g_sel]
    source = "gpu"
    if not len(g_sel):
        # No GPU-side ranges: the CPU ones are the windows (kernels queued in one and run in the
        # next are counted where they ran); the page says so.
        source = "cpu"
        g_order = np.argsort(c_ts, kind="stable")
        g_ts, g_dur = c_ts[g_order], c_dur[g_order]
        g_name = _np(t.c_name, np.int32)[g_order]
        g_ext = c_ext[g_order]
        g_idx = _np(t.c_idx, np.int64)[g_order]

    ranges: dict[str, dict] = {}
    totals_by_name: dict[int, np.ndarray] = {}
    occurrence: Counter = Counter()
    inside = np.zeros(len(ks), dtype=bool)
    for j in range(len(g_ts)):
        rid = int(g_name[j])
        name = t.range_names[rid]
        if CYCLE.match(name) or PROFILER_STEP.match(name):
            continue
        s, e = float(g_ts[j]), float(g_ts[j] + g_dur[j])
        lo = int(np.searchsorted(ks, s - max_dur, side="left"))
        hi = int(np.searchsorted(ks, e, side="left"))
        idx = np.arange(lo, hi)[ke[lo:hi] > s]
        cs = np.maximum(ks[idx], s)
        ce = np.minimum(ke[idx], e)
        clipped = np.maximum(ce - cs, 0.0)
        inside[idx] = True
        busy = union_ms(cs, ce)
        by_class = np.bincount(kc[idx], weights=clipped, minlength=len(class_names)) / 1000.0
        by_name = np.bincount(kn[idx], weights=clipped, minlength=n_names)
        acc = totals_by_name.get(rid)
        if acc is None:
            acc = totals_by_name[rid] = np.zeros((2, n_names))
        acc[0] += by_name
        acc[1] += np.bincount(kn[idx], minlength=n_names)
        twin = twin_of.get(int(g_ext[j])) if source == "gpu" else int(g_order[j])
        cycle = None
        launches = None
        if twin is not None:
            pid, cts = int(c_pid[twin]), float(c_ts[twin])
            cend = cts + float(c_dur[twin])
            found = cycles.get(pid)
            if found is not None:
                k = int(np.searchsorted(found[0], cts, side="right")) - 1
                # the innermost cycle range holding the twin: ranges do not overlap in a loop
                if k >= 0 and found[1][k] >= cend:
                    cycle = int(found[2][k])
            lts = launches_of.get(pid)
            if lts is not None:
                launches = int(np.searchsorted(lts, cend, side="right") - np.searchsorted(lts, cts, side="left"))
        occurrence[rid] += 1
        top = np.argsort(by_name)[::-1][:TOP_PER_CYCLE]
        entry = {
            "cycle": cycle if cycle is not None else occurrence[rid] - 1,
            "cycle_from": cycle_kind if cycle is not None else "order",
            "event": int(g_idx[j]), "ts_us": _r(s, 3), "wall_ms": _r((e - s) / 1000.0),
            "busy_ms": _r(busy), "kernels": len(idx), "launches": launches,
            "by_class": {class_names[c]: _r(v) for c, v in enumerate(by_class) if v > 0},
            "top": [[int(n), _r(by_name[n] / 1000.0)] for n in top if by_name[n] > 0],
        }
        ranges.setdefault(name, {"cycles": []})["cycles"].append(entry)
    for rid, acc in totals_by_name.items():
        ranges[t.range_names[rid]]["top"] = _top(acc, kn, kd, kidx, ks)

    busy_all = union_ms(ks, ke)
    span = (float(ke.max()) - float(ks[0])) / 1000.0 if len(ks) else 0.0
    by_class_all = np.bincount(kc, weights=kd, minlength=len(class_names)) / 1000.0
    outside = float(kd[~inside].sum()) / 1000.0
    return {
        "device": dev, "ranges_from": source, "cycles_from": cycle_kind if cycles else "order",
        "kernels": len(ks), "streams": sorted(set(kstream.tolist())),
        "launches": int(sum(len(v) for v in launches_of.values())),
        "span_ms": _r(span), "busy_ms": _r(busy_all), "kernel_ms": _r(kd.sum() / 1000.0),
        "outside_ranges_ms": _r(outside), "t0_us": _r(float(ks[0]), 3) if len(ks) else None,
        "by_class": {class_names[c]: _r(v) for c, v in enumerate(by_class_all) if v > 0},
        "ranges": ranges,
        "timelines": _timelines(ranges, ks, ke, kn, max_dur, kstream, kidx),
    }


def _top(acc: np.ndarray, kn: np.ndarray, kd: np.ndarray, kidx: np.ndarray, ks: np.ndarray) -> list[dict]:
    """A range name's kernels by time, each with its longest instance (event index, timestamp)."""
    ms, count = acc
    out = []
    for n in np.argsort(ms)[::-1][:TOP_PER_RANGE]:
        if ms[n] <= 0:
            break
        mine = np.flatnonzero(kn == n)
        longest = mine[int(np.argmax(kd[mine]))]
        out.append({"kernel": int(n), "ms": _r(ms[n] / 1000.0), "count": int(count[n]),
                    "event": int(kidx[longest]), "ts_us": _r(float(ks[longest]), 3)})
    return out


def _timelines(ranges: dict[str, dict], ks: np.ndarray, ke: np.ndarray, kn: np.ndarray, max_dur: float,
               kstream: np.ndarray, kidx: np.ndarray) -> dict[str, dict]:
    """Kernel lanes of a few cycles spread over the trace (first, last and between), for the page's
    timeline: each cycle's window is from its first range's start to its last range's end."""
    windows: dict[int, list] = {}
    for name, r in ranges.items():
        for c in r["cycles"]:
            w = windows.setdefault(c["cycle"], [math.inf, -math.inf, []])
            s = c["ts_us"]
            e = s + c["wall_ms"] * 1000.0
            w[0], w[1] = min(w[0], s), max(w[1], e)
            w[2].append([name, s, e, c["event"]])
    keys = sorted(windows)
    if len(keys) > TIMELINE_CYCLES:
        step = (len(keys) - 1) / (TIMELINE_CYCLES - 1)
        keys = sorted({keys[round(i * step)] for i in range(TIMELINE_CYCLES)})
    out = {}
    for cycle in keys:
        s, e, phases = windows[cycle]
        lo = int(np.searchsorted(ks, s - max_dur, side="left"))
        hi = int(np.searchsorted(ks, e, side="left"))
        idx = np.arange(lo, hi)[ke[lo:hi] > s]
        cut = len(idx) > TIMELINE_KERNELS
        idx = idx[:TIMELINE_KERNELS]
        out[str(cycle)] = {
            "t0_us": _r(s, 3), "ms": _r((e - s) / 1000.0), "truncated": cut,
            "ranges": [[n, _r((a - s) / 1000.0), _r((b - s) / 1000.0), ev]
                       for n, a, b, ev in sorted(phases, key=lambda p: p[1])],
            "start_ms": [_r((x - s) / 1000.0) for x in ks[idx]],
            "dur_ms": [_r((y - x) / 1000.0) for x, y in zip(ks[idx], ke[idx], strict=True)],
            "stream": kstream[idx].tolist(), "kernel": kn[idx].tolist(), "event": kidx[idx].tolist(),
        }
    return out


def event_at(stream: BinaryIO, index: int) -> dict | None:
    """The `index`-th event of `traceEvents` as the file has it (the provenance of a figure), read
    streaming up to it; None past the end. Reading costs the bytes before it."""
    if index < 0:
        return None
    try:
        for i, ev in enumerate(ijson.items(_open(stream), "traceEvents.item", use_float=True)):
            if i == index:
                return ev if isinstance(ev, dict) else {"value": ev}
    except (EOFError, gzip.BadGzipFile, zlib.error, ijson.IncompleteJSONError) as e:
        raise TraceError(f"the trace cannot be read up to event #{index}: {e}") from None
    return None


def parse(stream: BinaryIO) -> dict:
    """Read and analyse a trace: the JSON a trace file stores (LogFile.trace)."""
    return analyse(read(stream))
