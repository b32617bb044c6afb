"""From parsed records to the contract's JSON (DESIGN, "Contract"): medians over windows.

Medians, not means, because the first window of a run carries warm-up (CUDA graph capture,
the first tiny `gen throughput` after idle) and would drag a mean.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter, defaultdict
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from statistics import median, quantiles
from typing import TYPE_CHECKING, Any

import numpy as np

from runs.digest import Group, Rows, rows_from_result
from runs.display import figure
from runs.layout import LAUNCHER, NCCL_TESTS, WORKER, Launch, Layout, layout, merge_orphans
from runs.nccl import analyze, launch_verdicts, p2p_level_note, person_conflicts

if TYPE_CHECKING:  # the parsers' record shapes; runs never loads ingest at run time
    from ingest.parsers.records import ParseResult

# Which source to believe first when several report the same figure for the same run: the
# summary, the run page's provenance links and the comparison's per-window series all ask here.
SOURCE_ORDER = (
    "eagle_profile", "sglang_decode", "vllm_spec", "vllm_engine", "llamacpp", "llamacpp_slot",
    # Benchmark clients: one figure per benchmark run, for logs that have no server windows.
    "sglang_bench_one_batch", "sglang_bench", "vllm_bench",
)

# Phase sources that time only part of a cycle (llama.cpp times the drafting side): their phases
# never add up to a cycle time, so percentages need a cycle time from elsewhere.
PARTIAL_PHASE_SOURCES = frozenset({"llamacpp"})


def source_rank(source: str) -> int:
    """Lower is believed first; unknown sources last."""
    return SOURCE_ORDER.index(source) if source in SOURCE_ORDER else len(SOURCE_ORDER)


def metric_values(metrics: list[Group], *names: str, exclude: tuple[str, ...] = ()) -> Sequence[float]:
    """Per-window values of one metric from the best source that has it.

    With several names (`throughput_tok_s`, `gen_throughput_tok_s`) the best source reporting
    any of them wins, and within it the first name it reports. Values come in window order
    (then line, then rank) whatever the order of the records. Several ranks reporting the same
    window (SGLang DP attention) are combined per window: throughput adds up across ranks, other
    figures are weighted by each rank's throughput.
    """
    groups = [g for g in metrics if len(g) and g.name in names and g.source not in exclude]
    if not groups:
        return []
    source = min({g.source for g in groups}, key=lambda s: (source_rank(s), s))
    groups = [g for g in groups if g.source == source]
    name = next(n for n in names if any(g.name == n for g in groups))
    # Records of later files first by file: ties (same window, line, rank) keep file order.
    groups = sorted((g for g in groups if g.name == name), key=lambda g: -1 if g.logfile is None else g.logfile)
    if len({g.rank for g in groups}) <= 1:
        windows = _concat([g.windows for g in groups])
        if _strictly_increasing(windows):  # the usual case: one writer, windows in order
            return _concat([g.values for g in groups])
        values = _concat([g.values for g in groups])
        at = _row_order(groups, [g.rank for g in groups], windows)
        return array("d", np.frombuffer(values, dtype=np.float64)[at].tobytes())
    return _combine_ranks(groups, metrics, source, name)


def _concat(arrays: list[array]) -> array:
    out = array(arrays[0].typecode if arrays else "d")
    for a in arrays:
        if a.typecode != out.typecode:
            out = array("q", out) if out.typecode == "i" else out
            a = array(out.typecode, a)
        out.extend(a)
    return out


def _strictly_increasing(values: array) -> bool:
    """Each number above the one before (numpy over the array's buffer: a 512 MB log has ~900k)."""
    if len(values) < 2:
        return True
    assert values.typecode in "iq", values.typecode  # windows
    a: np.ndarray = np.frombuffer(values, dtype=np.int32 if values.typecode == "i" else np.int64)
    return bool(np.all(np.greater(a[1:], a[:-1])))


def _numbers(column: array) -> np.ndarray:
    """An int array's numbers as a numpy view (no copy)."""
    return np.frombuffer(column, dtype=np.int32 if column.itemsize == 4 else np.int64)


def _row_order(groups: list[Group], labels: list[str], windows: array | None = None) -> np.ndarray:
    """Where the groups' rows (concatenated in list order) stand when sorted by window, line and
    label (one a group: its rank or name), ties in list order: the order a stable sort of
    (window, line, label) tuples gives, in ~20 bytes a row instead of ~100 with tuples.
    `windows`: the groups' windows concatenated, when the caller has them already.

    The key columns are built once over all the groups (not a frame a group: a profile of
    300k distinct phase names is 300k groups of a row)."""
    rank = {label: i for i, label in enumerate(sorted(set(labels)))}  # str order, as tuples compare
    kept = [(g, label) for g, label in zip(groups, labels, strict=True) if len(g)]
    if windows is None:
        windows = _concat([g.windows for g, _ in kept])
    label = np.repeat(np.array([rank[label] for _, label in kept], dtype=np.uint32),
                      np.array([len(g) for g, _ in kept], dtype=np.int64))
    # numpy's stable sort, not polars': memory polars' allocator freed stays the process's a while, and
    # the summary's many sorts of a large log's rows piled up as its peak.
    return np.lexsort((label, _numbers(_concat([g.lines for g, _ in kept])), _numbers(windows)))


def _by_window_line(groups: list[Group]) -> list[tuple[int, str, float]]:
    """(window, rank, value) sorted by window, line and rank, ties in the groups' (file) order."""
    windows, values = _concat([g.windows for g in groups]), _concat([g.values for g in groups])
    at = _row_order(groups, [g.rank for g in groups], windows)
    ranks = [g.rank for g in groups for _ in range(len(g))]
    return [(windows[k], ranks[k], values[k]) for k in at.tolist()]


def _window_sums(groups: list[Group]) -> list[float]:
    """Each window's values summed, windows ascending: sum() of a window's values in the order
    _by_window_line gives them (0 + v1 + v2 ..., one addition at a time), from the columns, not a
    tuple a row (a large serving log's throughput rows, each rank's, were the peak of its summary)."""
    windows, values = _concat([g.windows for g in groups]), _concat([g.values for g in groups])
    if not windows:
        return []
    at = _row_order(groups, [g.rank for g in groups], windows)
    w, v = _numbers(windows)[at], np.frombuffer(values, dtype=np.float64)[at]
    starts = np.flatnonzero(np.concatenate(([True], w[1:] != w[:-1])))  # sorted by window: each one's run
    lengths = np.diff(np.append(starts, len(w)))
    sums = 0.0 + v[starts]  # sum()'s start, 0: -0.0 becomes 0.0
    for k in range(1, int(lengths.max())):
        more = lengths > k
        sums[more] += v[starts[more] + k]
    return sums.tolist()


def _combine_ranks(groups: list[Group], metrics: list[Group], source: str, name: str) -> list[float]:
    if name in ("gen_throughput_tok_s", "throughput_tok_s"):
        return _window_sums(groups)
    per_window: dict[int, list[tuple[str, float]]] = defaultdict(list)
    for w, rank, v in _by_window_line(groups):
        per_window[w].append((rank, v))
    # The last record of a (window, rank) wins, in the records' order.
    tput = [g for g in metrics if g.source == source and g.name in ("gen_throughput_tok_s", "throughput_tok_s")]
    weight = {(w, g.rank): v for g, w, v in _ORDER.get().in_order(tput)}
    out = []
    for w, rows in sorted(per_window.items()):
        ws = [weight.get((w, rank), 0.0) for rank, _ in rows]
        if name == "tokens_per_cycle":
            # Tokens per verify step over all ranks is total tokens / total steps, and a rank's
            # steps are its tokens / its tokens per step: weight by steps, not by tokens.
            ws = [x / v if v > 0 else 0.0 for (_, v), x in zip(rows, ws, strict=True)]
        total = sum(ws)
        weighted = sum(v * x for (_, v), x in zip(rows, ws, strict=True))
        out.append(weighted / total if total else median(v for _, v in rows))
    return out


def spread(values: list[float]) -> float | None:
    """Half the interquartile range of per-window values: the noise a change must exceed to count
    (the comparison's one rule, for every figure). None under four windows: too few to tell."""
    if len(values) < 4:
        return None
    q1, _, q3 = quantiles(values, n=4, method="inclusive")
    return round((q3 - q1) / 2, 4)


@dataclass(frozen=True)
class Stats:
    """What the summary keeps of one figure's per-window values."""

    median: float | None  # rounded to 4 places; None without values
    spread: float | None  # spread()
    count: int


def describe(values: Sequence[float]) -> Stats:
    """The median (rounded to 4 places), spread() and the count of `values`, sorted once (a figure
    of a 512 MB log has ~900k values: the caller lets them go after this, one figure at a time).

    The formulas are statistics.median's and statistics.quantiles' (inclusive, n=4) on the list
    they would sort, so the figures are the same to the bit (tests/test_summary.py)."""
    n = len(values)
    if not n:
        return Stats(None, None, 0)
    quartiles = [divmod(i * (n - 1), 4) for i in (1, 3)] if n >= 4 else []
    # Only the values at these positions of the sorted order are read: those are put in place.
    data = _sorted(values, [n // 2 - 1, n // 2, *(j + k for j, _ in quartiles for k in (0, 1))])
    noise = None
    if quartiles:
        q1, q3 = ((data[j] * (4 - delta) + data[j + 1] * delta) / 4 for j, delta in quartiles)
        noise = round((q3 - q1) / 2, 4)
    return Stats(round(_middle(data), 4), noise, n)


def _middle(data: Sequence[float] | memoryview) -> float:
    """statistics.median of data sorted already."""
    n = len(data)
    return data[n // 2] if n % 2 else (data[n // 2 - 1] + data[n // 2]) / 2


def _sorted(values: Sequence[float], at: list[int] | None = None, start: int = 0) -> Sequence[float] | memoryview:
    """`values` in the order sorted() gives, or with `at` (positions in it) values whose items at
    those positions are that order's. An array of floats is sorted by numpy (8 bytes a value;
    sorted() makes a float object of each, 32), seen through a memoryview (its items are Python
    floats, as sorted()'s are): the same order, but where a NaN or a negative zero is (sorted()
    leaves those where its comparisons put them), and for a few values. Not polars: a Series' sort
    costs ~0.7 ms of its thread pool a call, most of a decode log's figures. Positions `at` are put
    in place by numpy's partition, a third of its sort's time (a decode log's figures: 45 ms).
    `start`: of values[start:], without the copy that slice is (a figure's values can be 40 MB)."""
    if isinstance(values, array) and values.typecode == "d" and len(values) - start > 1000:
        column = np.frombuffer(values, dtype=np.float64)[start:]  # a view of the array, no copy
        if at is not None:
            # One pass for the NaNs (their sum is NaN; so is that of an inf and a -inf, which only
            # sends such a column the long way), and the zeros looked at only where one is read: a
            # partition's zeros may be in another order than sorted()'s (-0.0 == 0.0). Six passes
            # of whole-column checks were a third of a decode log's figures.
            with np.errstate(invalid="ignore", over="ignore"):  # (an inf and a -inf; a sum past the floats)
                total = column.sum()
            if not math.isnan(total):
                kth = sorted({k for k in at if 0 <= k < len(column)})
                placed = np.partition(column, kth)
                if not (placed[kth] == 0).any() or not ((column == 0) & np.signbit(column)).any():
                    return placed.data
        elif not (np.isnan(column).any() or ((column == 0) & np.signbit(column)).any()):
            return np.sort(column).data
    return sorted(values[start:] if start else values)


THROUGHPUT_NAMES = ("throughput_tok_s", "gen_throughput_tok_s")


def _throughput_source(metrics: list[Group], exclude: tuple[str, ...] = ()) -> str | None:
    sources = {g.source for g in metrics if len(g) and g.name in THROUGHPUT_NAMES and g.source not in exclude}
    return min(sources, key=lambda s: (source_rank(s), s)) if sources else None


def throughput_values(metrics: list[Group], exclude: tuple[str, ...] = ()) -> Sequence[float]:
    values = metric_values(metrics, *THROUGHPUT_NAMES, exclude=exclude)
    # SGLang's first decode line after idle shows a tiny rate (0.39 tok/s): not a real window,
    # even when a single line follows it. Only SGLang's: a vLLM engine interval, the first one
    # too, averages real generation.
    rest = len(values) - 1
    if (_throughput_source(metrics, exclude) == "sglang_decode" and rest >= 1
            and values[0] < 0.25 * _middle(_sorted(values, [rest // 2 - 1, rest // 2], start=1))):
        values = values[1:]
    return values


def throughput_scope(metrics: list[Group], settings: dict) -> dict | None:
    """What the throughput figure covers when a server runs several data-parallel ranks, else None.

    Each DP rank (SGLang with DP attention, vLLM's `Engine 00N`) logs its own rate and the summary
    adds them up per window: the figure is the server's, a sum over the ranks, not one rank's.
    `ranks` counts the ranks the log shows; `dp_size` is what the launch declared (None if unsaid).

    With DP attention every DP rank's scheduler prints its own decode lines (FORMATS §1.1); when
    they carry no `DPn` tag (a logging config without the prefix) nothing tells whose line is
    whose, so no sum per window can be made: the figure is the median over all the ranks' lines,
    about one rank's rate. Kind `untagged_dp_ranks`, `ranks` None: the figure's meaning is stated,
    never passed off as the server's.
    """
    best = _throughput_source(metrics)
    if best is None:
        return None
    ranks = {g.rank for g in metrics if len(g) and g.name in THROUGHPUT_NAMES and g.source == best}
    dp_size = _value(settings, "dp_size")
    dp_attention = bool(_value(settings, "sglang.enable_dp_attention"))
    if len(ranks) > 1:
        return {"kind": "sum_over_dp_ranks", "ranks": len(ranks), "dp_size": dp_size, "dp_attention": dp_attention}
    if (best == "sglang_decode" and ranks == {""} and dp_attention
            and isinstance(dp_size, int) and dp_size > 1):
        return {"kind": UNTAGGED_DP_RANKS, "ranks": None, "dp_size": dp_size, "dp_attention": True}
    return None


UNTAGGED_DP_RANKS = "untagged_dp_ranks"


def untagged_dp_ranks_warning(dp_size: int) -> str:
    return (f"the server runs DP attention over {dp_size} DP ranks, but its decode lines carry no DP tag: "
            "the ranks' lines cannot be told apart, so the throughput is the median over all of them "
            "(about one rank's rate), not the server's total")


# The raw figure each source prints for tokens per cycle, and whether it already counts the bonus token.
RAW_ACCEPT = {"eagle_profile": ("Accept len", "accept_len_raw", False), "sglang_decode": ("accept len", None, True)}


def _tokens_per_cycle_origin(metrics: list[Group], tokens_per_cycle: float | None) -> dict | None:
    """{label, raw, bonus_added}: `Accept len 1.61` in an EAGLE profile is 2.61 tokens per cycle."""
    if tokens_per_cycle is None:
        return None
    sources = {g.source for g in metrics if len(g) and g.name == "tokens_per_cycle"}
    if not sources:
        return None
    source = min(sources, key=lambda s: (source_rank(s), s))
    if source not in RAW_ACCEPT:
        return None
    label, raw_name, includes_bonus = RAW_ACCEPT[source]
    raw = describe(metric_values(metrics, raw_name)).median if raw_name else tokens_per_cycle
    return {"label": label, "raw": raw, "bonus_added": not includes_bonus, "source": source}


def phase_table(phases: list[Group], cycle_ms: float | None) -> list[dict]:
    """One row per phase name, in the order the names first appear: median ms and pct, spread."""
    rows_of = _ORDER.get()
    by_name: dict[str, list[Group]] = defaultdict(list)
    first: dict[str, tuple] = {}
    for g in phases:
        if not len(g):
            continue
        by_name[g.name].append(g)
        key = rows_of.first_key(g)
        first[g.name] = min(first.get(g.name, key), key)
    rows = []
    for name in sorted(by_name, key=first.__getitem__):
        groups = by_name[name]
        ms = describe(_concat([g.values for g in groups]))
        pct = describe(_printed([g.pcts for g in groups if g.pcts is not None])).median
        if pct is None and ms.median is not None and cycle_ms:
            pct = round(100 * ms.median / cycle_ms, 2)
        rows.append({"name": name, "ms": ms.median, "pct": pct, "windows": ms.count, "spread": ms.spread})
    return rows


def _printed(pcts: list[array]) -> array:
    """The percentages of these columns that were printed (NaN: none), in order, in one array."""
    if not pcts:
        return array("d")
    if len(pcts) == 1 and len(pcts[0]) < 16:  # a few rows (most names): not worth numpy's calls
        return array("d", [v for v in pcts[0] if v == v])
    values = np.concatenate([np.frombuffer(p, dtype=np.float64) for p in pcts])
    return array("d", values[~np.isnan(values)].tobytes())


def _cycle_from_phases(phases: list[Group]) -> array:
    """Per-window sums of the phases that time a whole cycle, in window order.

    The rows are summed in (window, line, name) order, ties in the records' (file) order
    (_row_order): the sums a sort of (window, line, name, ms) tuples gives, in ~40 bytes a row
    instead of ~150 (every phase row of the run takes part)."""
    groups = [g for g in sorted(phases, key=lambda g: -1 if g.logfile is None else g.logfile)
              if g.source not in PARTIAL_PHASE_SOURCES and len(g)]
    sums = array("d")
    if not groups:
        return sums
    windows, values = _concat([g.windows for g in groups]), _concat([g.values for g in groups])
    at = _row_order(groups, [g.name for g in groups], windows)
    # Summed one after another in that order, as before (not numpy's pairwise sums: the same bits).
    in_order = zip(_numbers(windows)[at].tolist(), np.frombuffer(values, dtype=np.float64)[at].tolist(), strict=True)
    last, acc = None, 0.0
    for w, value in in_order:
        if w != last:
            if last is not None:
                sums.append(acc)
            last, acc = w, 0.0
        acc += value
    sums.append(acc)
    return sums


def figures(metrics: list[Group], phases: list[Group], settings: dict,
            exclude: tuple[str, ...] = ()) -> tuple[dict, list[dict]]:
    """The summary figures (medians over windows, with their spread) and the phase table.
    `exclude`: sources that must not make a figure (result blocks of different settings).

    A figure at a time: each one's values are described, then let go (memory follows the
    largest figure, not the file)."""
    throughput = describe(throughput_values(metrics, exclude))
    # SGLang bench_serving's `Accept length` covers the server's whole life (FORMATS §2.1):
    # never the run's figure when the server's own decode lines are there.
    has_decode = any(len(g) and g.source == "sglang_decode" for g in metrics)
    tokens_exclude = exclude + (("sglang_bench",) if has_decode else ())
    tokens = describe(pooled_drafts(metrics, "tokens_per_cycle", "acc_tokens", "gen_drafts", 1.0, tokens_exclude)
                      or metric_values(metrics, "tokens_per_cycle", exclude=tokens_exclude))
    tokens_from = _tokens_per_cycle_origin(metrics, tokens.median)
    cycle = describe(metric_values(metrics, "cycle_ms"))
    # A vLLM V0 proposal time per draft token, whose launch never said its draft length, is only
    # part of a cycle's drafting: the phases then do not add up to a cycle (unknown, not too short).
    if not cycle.count and any(len(g) for g in phases) and not any(g.name == PER_TOKEN_PHASE for g in phases):
        cycle = describe(_cycle_from_phases(phases))
    windows = max(throughput.count, tokens.count, cycle.count) or None
    summary = {
        "throughput_tok_s": throughput.median,
        "tokens_per_cycle": tokens.median,
        "cycle_ms": cycle.median,
        "windows": windows,
        # The noise of each figure across windows (half the IQR), for the comparison's rule.
        "spread": {"throughput_tok_s": throughput.spread, "tokens_per_cycle": tokens.spread,
                   "cycle_ms": cycle.spread},
        # What the log printed for tokens per cycle, before the bonus token was added (DESIGN, Words).
        "tokens_per_cycle_from": tokens_from,
    }
    scope = throughput_scope(metrics, settings)
    if scope:  # only when it applies: a one-rank figure needs no qualifier (and goldens stay as they were)
        summary["throughput_scope"] = scope
    return summary, phase_table(phases, cycle.median)


BLOCKS_KEY = "serving_blocks"  # ingest.parsers.serving.BLOCKS_KEY (runs never imports the parsers)
# ingest.parsers.serving.OMITTED_KEY: {"count", "first_line"} of blocks a file did not list
# (past BLOCKS_KEPT, blocks of several configurations); a run's is {"count"} summed over its files.
OMITTED_KEY = "serving_blocks_omitted"
DRAFT_TYPES_KEY = "llamacpp.draft_types"  # ingest.parsers.llamacpp.TYPES_KEY
# Block sources: one benchmark figure per block (SGLang bench_serving, vllm bench serve).
BLOCK_SOURCES = ("sglang_bench", "vllm_bench")
_SPEC_ROWS = ("accept_length", "acceptance_length", "acceptance_rate_pct")


def block_settings(block: dict) -> tuple:
    """What makes two result blocks one configuration: the tool, the model, the request rate, the
    concurrency and whether it ran speculative decoding (as far as the client printed them)."""
    return (block.get("tool"), str(block.get("model")), str(block.get("request_rate")),
            str(block.get("max_concurrency")),
            bool(block.get("speculative")) or any(key in block for key in _SPEC_ROWS))


def serving_of_blocks(blocks: list[dict], serving: dict, omitted: int = 0) -> tuple[dict, tuple[str, ...], dict | None]:
    """The run-level `serving` object, the sources no summary figure may come from, and a warning.

    One block: its rows, as printed. Several blocks of one configuration (repeats): the median of
    each figure over them, how many there were, and a warning that says so. Blocks of different
    settings (a request-rate sweep, speculative decoding off and on) are results of their own: no
    blended figure at all, the count and a warning instead; each stays in `serving_blocks`.
    `omitted` blocks were counted, not listed: only a file of several configurations omits any."""
    if len(blocks) + omitted < 2:
        return serving, (), None
    keys = {k for b in blocks for k in b} - {"tool", "line", "logfile", "model", "request_rate", "max_concurrency",
                                             "speculative"}
    others = {k: v for k, v in serving.items() if k not in keys}
    if not omitted and len({block_settings(b) for b in blocks}) == 1:
        pooled = dict(serving)
        for key in keys:
            numbers = [b[key] for b in blocks
                       if isinstance(b.get(key), int | float) and not isinstance(b.get(key), bool)]
            if numbers:
                pooled[key] = round(median(numbers), 6)
        # Flagged all the same: what the blocks print cannot tell a repeat from another dtype,
        # build or model the note names only in its own words.
        warning = {"line": blocks[0].get("line"), "message": (
            f"{len(blocks)} result blocks with the same printed settings: the run's serving figures are their "
            "median; if they were different runs (another dtype, build or model), read each block in the table")}
        return {**pooled, "result_blocks": len(blocks)}, (), warning
    described = "; ".join(
        f"line {b.get('line')}: {b.get('tool')}, request rate {b.get('request_rate')}, concurrency "
        + ("not set" if b.get("max_concurrency") is None else str(b.get("max_concurrency")))
        + (f", model {b['model']}" if b.get("model") else "")
        + (", speculative" if block_settings(b)[4] else "") for b in blocks)
    if omitted:
        described += f"; {omitted} more not listed"
    warning = {"line": blocks[0].get("line") if blocks else None, "message": (
        f"{len(blocks) + omitted} result blocks with different settings ({described}): each is a result of its "
        "own, so the run has no serving figure blended from them; see the result blocks table")}
    return {**others, "result_blocks": len(blocks) + omitted}, BLOCK_SOURCES, warning


POOLED_SOURCE = "llamacpp"  # counters per draft type, pooled per window by totals
PER_TOKEN_PHASE = "proposal per token"  # ingest.parsers.vllm: a V0 proposal time without its draft length


def pooled_drafts(metrics: list[Group], figure_name: str, numerator: str, denominator: str, plus: float,
                  exclude: tuple[str, ...] = ()) -> list[float]:
    """llama.cpp's draft types pooled per window: `plus` + Σ numerator / Σ denominator over the
    types printed together (tokens per cycle: 1 + accepted tokens / drafts). Empty when a source
    believed first reports `figure_name` itself, or there are no such counters."""
    better = {g.source for g in metrics if len(g) and g.name == figure_name and g.source not in exclude
              and source_rank(g.source) < source_rank(POOLED_SOURCE)}
    if better or POOLED_SOURCE in exclude:
        return []
    sums: dict[tuple, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for g in metrics:
        if g.source == POOLED_SOURCE and g.name in (numerator, denominator) and len(g):
            slot = 0 if g.name == numerator else 1
            for w, v in zip(g.windows, g.values, strict=True):
                sums[(-1 if g.logfile is None else g.logfile, w)][slot] += v
    return [plus + num / den for _, (num, den) in sorted(sums.items()) if den > 0]


def acceptance(metrics: list[Group], exclude: tuple[str, ...] = ()) -> dict | None:
    """The draft acceptance rate (accepted / drafted tokens, a fraction) and the per-position
    rates, medians over windows of the best source; None when the log prints none."""
    pooled = pooled_drafts(metrics, "draft_acceptance_rate", "acc_tokens", "gen_tokens", 0.0, exclude)
    rate = describe(pooled or metric_values(metrics, "draft_acceptance_rate", exclude=exclude))
    positions: list[float | None] = []
    while (position := describe(metric_values(metrics, f"acceptance_pos_{len(positions) + 1}", exclude=exclude))).count:
        positions.append(position.median)
    if rate.median is None and not positions:
        return None
    sources = {g.source for g in metrics if len(g) and g.name == "draft_acceptance_rate" and g.source not in exclude}
    if pooled:
        sources = {POOLED_SOURCE}
    return {"rate": rate.median, "positions": positions, "windows": rate.count,
            "source": min(sources, key=lambda x: (source_rank(x), x)) if sources else None}


def draft_types(table: object) -> list[dict]:
    """llama.cpp's draft types with their cumulative counters (as the last statistics line of
    each printed them), tokens per cycle and acceptance from those totals, ms per generate call."""
    if not isinstance(table, dict):
        return []
    out = []
    for row in table.values():
        row = dict(row)
        drafts, accepted, generated = row.get("gen_drafts"), row.get("acc_tokens"), row.get("gen_tokens")
        row["tokens_per_cycle"] = round(1 + accepted / drafts, 4) if drafts and accepted is not None else None
        row["acceptance_rate"] = round(accepted / generated, 4) if generated and accepted is not None else None
        calls, ms = row.get("calls_generate"), row.get("dur_generate_ms")
        row["generate_ms_per_call"] = round(ms / calls, 4) if calls and ms is not None else None
        out.append(row)
    return out


# The Rows being summarised (their original order decides ties and the phase table's order).
_ORDER: ContextVar[Rows] = ContextVar("summary_rows")


def summarize(result: ParseResult, rows: Rows | None = None) -> dict:
    """The contract's parse JSON for one file (or one run's files parsed into one result).

    `rows` are the bulky rows as columns (a run's file digests, runs/digest.py); without them
    they come from `result`'s records. Processes and launches (runs/layout.py) decide what
    counts: the run's `nccl` and `summary` are its one serving launch's; with several, each
    launch has its own and the run-level ones carry `launches_count` and a warning instead of
    passing for one verdict.
    """
    return summarize_run(result, rows if rows is not None else rows_from_result(result))[0]


def summarize_run(result: ParseResult, rows: Rows) -> tuple[dict, list[int]]:
    """summarize(), and the launches with serving figures before the merge (renew_nccl's `figured`)."""
    token = _ORDER.set(rows)
    try:
        return _summarize(result, rows)
    finally:
        _ORDER.reset(token)


def _summarize(result: ParseResult, rows: Rows) -> tuple[dict, list[int]]:
    s = result.settings
    lay, records, figured = launch_groups(result, rows)
    launches_count = len(lay.launches)
    warnings = [{"line": w.line, "message": w.message} for w in result.warnings]
    found = _value(s, BLOCKS_KEY)
    blocks: list[dict] = list(found) if isinstance(found, list) else []
    serving = {k[len("serving."):]: v.value for k, v in s.items() if k.startswith("serving.")}
    found_out = _value(s, OMITTED_KEY)
    left_out: dict = found_out if isinstance(found_out, dict) else {}
    omitted = left_out.get("count", 0)
    serving, exclude, block_warning = serving_of_blocks(blocks, serving, omitted)
    if block_warning:
        warnings.append(block_warning)
    if omitted:
        warnings.append({"line": left_out.get("first_line"), "message": (
            f"the result blocks table lists {len(blocks)} of the {len(blocks) + omitted} result blocks: a file of "
            f"blocks of several settings lists only its first ones (no figure is blended from such blocks), "
            f"the other {omitted} are counted only")})
    launches: list[dict[str, Any]] = []
    for i, launch in enumerate(lay.launches):
        summary, phases = figures(*records[i], s, exclude)
        launches.append({
            "id": launch.number,
            "processes": list(launch.processes),
            "logfiles": sorted(lf for lf in launch.starts if lf is not None),
            "starts": [{"logfile": lf, "line": line} for lf, line in launch.starts.items()],
            "launcher": [p for p in launch.processes if lay.roles[p] == LAUNCHER],
            "workers": [p for p in launch.processes if lay.roles[p] == WORKER],
            "nccl": {},
            "summary": summary,
            "phases": phases,
            "spec": launch_spec(result, launch),
        })
    if launches_count == 1:
        summary, phases = launches[0]["summary"], launches[0]["phases"]
    else:
        summary, phases = figures(rows.metrics, rows.phases, s, exclude)
        if launches_count > 1:
            summary = {**summary, "blended": True}
    untagged = [sc for sc in (summary.get("throughput_scope"), *(la["summary"].get("throughput_scope")
                                                                  for la in launches))
                if sc and sc["kind"] == UNTAGGED_DP_RANKS]
    if untagged:  # said once, in the run's warnings too: the figure beside it is not what it looks like
        warnings.append({"line": None, "message": untagged_dp_ranks_warning(untagged[0]["dp_size"])})
    panels = nccl_tests_panels(result, lay, rows)
    totals = {p["logfile"]: p["tests"] for p in panels}
    listed = Counter(p["logfile"] for p in panels)
    if untold := sum(totals[lf] - listed[lf] for lf in totals):
        warnings.append({"line": None, "message": (
            f"the nccl-tests panels list {sum(listed.values())} of the {sum(totals.values())} tests: a file lists "
            f"its first {NCCL_TESTS_KEPT - 1} tests and its last one, the other {untold} are counted only")})
    parsed = {
        "formats": list(result.formats),
        "engine": _value(s, "engine"),
        "spec": {
            "algorithm": _value(s, "spec.algorithm"),
            "steps": _value(s, "spec.steps"),
            "topk": _value(s, "spec.topk"),
            "draft_tokens": _value(s, "spec.draft_tokens"),
        },
        "summary": summary,
        "phases": phases,
        "nccl": {},
        "processes": lay.processes,
        "launches": launches,
        "launches_count": launches_count,
        "nccl_tests": panels,
        "collectives": rows.collectives,
        "serving": serving,
        "errors": [{"line": e.line, "message": e.message} for e in result.errors],
        "warnings": warnings,
        **context_fields(result),
    }
    # Keys present only when the log has them, so parses without them keep their shape.
    if blocks:
        parsed["serving_blocks"] = blocks
    accepted = acceptance(rows.metrics, exclude)
    if accepted:
        parsed["acceptance"] = accepted
    types = draft_types(_value(s, DRAFT_TYPES_KEY))
    if types:
        parsed["draft_types"] = types
    if any(g.name == PER_TOKEN_PHASE and len(g) for g in rows.phases):
        warnings.append({"line": None, "message": (
            "vLLM's proposal time is per draft token and the log never says the draft length "
            "(num_speculative_tokens) of its launch: the proposal per cycle and the cycle time are unknown")})
    if summary.get("windows") == 1 and _throughput_source(rows.metrics, exclude) == "sglang_decode":
        warnings.append({"line": None, "message": (
            "the throughput comes from a single SGLang decode interval: the first line after idle reports a "
            "near-zero rate, and with nothing after it to compare, this figure may not be the server's")})
    if rows.collectives_total > len(rows.collectives):
        # Every table row stays in the run's rows (pages chart them from there); `parsed` keeps
        # the first COLLECTIVES_KEPT and says how many there are.
        parsed["collectives_total"] = rows.collectives_total
    return renew_nccl(parsed, result, figured, lay, fresh=True), figured


def context_fields(result: ParseResult) -> dict:
    """What the files say besides their logs (ingest/parsers/context.py): the GPU topology (with
    what it means for NCCL_P2P_LEVEL), tool versions, each file's unread lines, and the files
    kept as context because they are in no log format. Per file for a run of several files."""
    per: list[tuple[int | None, str | None, dict]]
    if result.files:
        per = [(lf, info.get("name"), info.get("settings") or {}) for lf, info in result.files.items()]
    else:
        per = [(None, None, {k: v.value for k, v in result.settings.items()})]
    topology = next((dict(st["topology"]) for _, _, st in per if isinstance(st.get("topology"), dict)), None)
    if topology is not None:
        topology["p2p_level"] = p2p_level_note(topology)
    versions: dict[str, str] = {}
    for _, _, st in per:
        for name, version in (st.get("versions") or {}).items():
            versions.setdefault(name, version)
    unread = [{"logfile": lf, "file": name, **st["unread"]} for lf, name, st in per
              if isinstance(st.get("unread"), dict)]
    return {
        "topology": topology,
        "versions": versions,
        "unread": {"count": sum(u["count"] for u in unread), "lines": unread[0]["lines"] if len(unread) == 1 else [],
                   "files": unread},
        "context": [{"logfile": lf, "file": name, **st["context"]} for lf, name, st in per
                    if isinstance(st.get("context"), dict)],
    }


def launch_groups(result: ParseResult, rows: Rows) -> tuple[Layout, list[tuple[list[Group], list[Group]]], list[int]]:
    """The run's layout, per launch its (metric groups, phase groups), and the launches that had
    serving figures before worker-only launches were merged (renew_nccl rebuilds the layout with them)."""
    lay = layout(process_files(result))

    def assign() -> list[tuple[list[Group], list[Group]]]:
        out: list[tuple[list[Group], list[Group]]] = [([], []) for _ in lay.launches]
        probed: dict[tuple, set] = {}
        for k, groups in enumerate((rows.metrics, rows.phases)):
            for g in groups:
                for i, part in _split(lay, g, probed):
                    out[i][k].append(part)
        return out

    records = assign()
    before = len(lay.launches)
    # Serving figures of its own (not an nccl-tests bandwidth) keep a worker-only launch apart.
    figured = sorted(i for i, (ms, ps) in enumerate(records)
                     if any(len(g) for g in ps) or any(len(g) and g.source in SOURCE_ORDER for g in ms))
    merge_orphans(lay, set(figured))
    if len(lay.launches) != before:
        records = assign()
    return lay, records, figured


def _split(lay: Layout, g: Group, probed: dict[tuple, set] | None = None) -> list[tuple[int, Group]]:
    """The launches a group's rows belong to, with their share (most groups: one launch, all rows).
    `probed`: the probes per (log file, process) already made (they depend on nothing else; a
    profile of many distinct phase names has many groups of one process)."""
    if not len(g):
        return []
    segs = lay.segments.get(g.logfile) or []
    # launch_index reads the line only through the file's segments: probe each segment's start.
    probes = None if probed is None else probed.get((g.logfile, g.process))
    if probes is None:
        probes = {lay.launch_index(g.logfile, g.process, line) for line in [0, *(s for s, _ in segs)]}
        if probed is not None:
            probed[(g.logfile, g.process)] = probes
    if len(probes) == 1:
        (i,) = probes
        return [] if i is None else [(i, g)]
    # Probes that differ come from the segments (launch_index's other answers ignore the line): each
    # row's launch is its segment's, found for all rows at once (a call a row was 28% of a parse).
    starts = np.array([s for s, _ in segs], dtype=np.int64)
    launch_of = np.array([i for _, i in segs], dtype=np.int64)
    lines = np.frombuffer(g.lines, dtype=np.dtype(g.lines.typecode)).astype(np.int64)
    at = launch_of[np.maximum(np.searchsorted(starts, lines, side="right") - 1, 0)]
    order = np.argsort(at, kind="stable")
    cuts = np.flatnonzero(np.diff(at[order])) + 1
    parts = [(int(at[idx[0]]), idx) for idx in np.split(order, cuts) if len(idx)]
    return [(i, g.part(idx)) for i, idx in sorted(parts, key=lambda p: int(p[1][0]))]


def renew_nccl(parsed: dict, result: ParseResult, figured: list[int], lay: Layout | None = None, *,
               fresh: bool = False) -> dict:
    """`parsed` with its NCCL verdicts (run, launches, nccl-tests panels) computed afresh from
    `result` (its files and NCCL values; no phases or metrics needed): what a pasted NCCL
    annotation changes, recomputed without reading the run's bulky rows. `figured` is what
    launch_groups said; `fresh`: `parsed` has no several-launches warning yet (it names verdicts)."""
    version = _value(result.settings, "nccl.version")
    if lay is None:
        lay = layout(process_files(result))
        merge_orphans(lay, set(figured))
    verdicts = launch_verdicts(result.nccl, lay, version)
    launches = [{**launch, "nccl": verdicts["launches"][i]} for i, launch in enumerate(parsed.get("launches") or [])]
    warnings = list(parsed.get("warnings") or [])
    if len(launches) > 1:
        if not fresh:
            warnings = warnings[1:]  # the one this function put first last time
        warnings.insert(0, {"line": None, "message": several_launches_warning(launches)})
    nccl = verdicts["run"]
    if nccl is None:
        other = verdicts["other_values"]
        scripts = verdicts["nccl_tests_scripts"]
        tests = {lf: v for lf, v in verdicts["nccl_tests"].items() if lf not in scripts} or verdicts["nccl_tests"]
        # A run of nccl-tests alone (with its job script): its verdict is the tests' own (there is
        # no serving worker).
        nccl = next(iter(tests.values())) if len(tests) == 1 and not other else analyze(other, version=version)
    panels = [{**p, "nccl": verdicts["nccl_tests"].get(p["logfile"]) or analyze([])}
              for p in parsed.get("nccl_tests") or []]
    library = _value(result.settings, "nccl.library")  # NCCL or RCCL, as the log names itself; None: unknown
    return {**parsed, "nccl": {**nccl, "library": library, "conflicts": person_conflicts(result.nccl)},
            "launches": launches, "nccl_tests": panels, "warnings": warnings}


NCCL_TESTS_KEPT = 200  # panels a file lists: its first tests and its last (which shows the file's NCCL table)


def nccl_tests_panels(result: ParseResult, lay: Layout, rows: Rows) -> list[dict]:
    """One panel per nccl-tests test of each log file holding nccl-tests processes: its bandwidth
    (renew_nccl adds their NCCL settings' verdict). A footer ends a test (the parser windows its
    values by the test's number): a test's rows are the file's rows after the previous test's
    footer and up to its own; rows after the last footer are one more test, cut short.

    A file lists its first NCCL_TESTS_KEPT - 1 tests and its last one (`tests` says how many it
    has): each panel carries its file's NCCL verdict, and a long output of thousands of tests made
    a run's JSON of hundreds of MB (the worker saving 512 MB of nccl-tests outputs died)."""
    tests_procs: dict[int | None, list[str]] = defaultdict(list)
    for p in lay.processes:
        if p["role"] == NCCL_TESTS:
            tests_procs[p["logfile"]].append(p["id"])
    footers = _nccl_tests_footers(rows.metrics)
    names = process_files(result)
    # The counted runs of adjacent row lines (runs/digest.py Busbw: a table each, not a row each),
    # each (file, process) asked its role once; a test's runs are then a slice of its file's runs
    # sorted by line, found by bisection (a scan of every line per test was quadratic in the
    # tests). A run lies in one test whole (no footer line falls inside one): its last line says which.
    counted: dict[int | None, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = defaultdict(list)
    for lf, process, runs in rows.busbw.runs():
        if lf in tests_procs and lay.role(lf, process) == NCCL_TESTS:
            counted[lf].append(runs)
    panels: list[dict] = []
    for logfile in sorted(tests_procs, key=lambda f: (f is None, f or 0)):
        # The file's runs as columns sorted by last line (hundreds of thousands of tables in a
        # large output: no tuple a run), a kept test's own runs a slice found by bisection.
        parts = counted.get(logfile, [])
        lines, ns, peaks = (np.concatenate([p[k] for p in parts]) if parts else np.zeros(0) for k in range(3))
        order = np.argsort(lines, kind="stable")
        lines, ns, peaks = lines[order], ns[order], peaks[order]
        ends, avgs = footers.get(logfile, ([], []))  # each test's last footer line, its average bus bandwidth
        last = int(lines[-1]) if len(lines) else 0
        if not len(ends) or last > ends[-1]:
            ends, avgs = [*ends, last], [*avgs, None]  # rows after the last footer: a test cut short (or none)
        tests = len(ends)
        for number in (*range(1, min(tests, NCCL_TESTS_KEPT - 1) + 1), *((tests,) if tests >= NCCL_TESTS_KEPT else ())):
            start, end = (ends[number - 2] if number > 1 else 0), ends[number - 1]
            at, to = np.searchsorted(lines, [start, end], side="right")  # start < line <= end
            panels.append({
                "logfile": logfile,
                "file": (names.get(logfile) or {}).get("name"),
                "test": number,
                "tests": tests,
                "processes": list(tests_procs[logfile]),
                "nccl": {},
                "avg_busbw_gbs": avgs[number - 1],
                "peak_busbw_gbs": float(peaks[at:to].max()) if to > at else None,
                "rows": int(ns[at:to].sum()),
            })
    return panels


def _nccl_tests_footers(groups: list[Group]) -> dict[int | None, tuple[list[int], list[float | None]]]:
    """Log file -> its nccl-tests footers in order, one per test: the tests' last footer lines and
    their last `Avg bus bandwidth`s. The footer lines of one test share a window (the test's
    number). Read as columns: a large output has hundreds of thousands of tests."""
    parts: dict[int | None, list[tuple[np.ndarray, np.ndarray, np.ndarray, bool]]] = defaultdict(list)
    for g in groups:
        if g.source == "nccl_tests" and g.name in ("avg_busbw_gbs", "out_of_bounds_values"):
            parts[g.logfile].append((np.asarray(g.windows, dtype=np.int64), np.asarray(g.lines, dtype=np.int64),
                                     np.asarray(g.values, dtype=np.float64), g.name == "avg_busbw_gbs"))
    out: dict[int | None, tuple[list[int], list[float | None]]] = {}
    for logfile in sorted(parts, key=lambda f: (f is None, f or 0)):
        own = parts[logfile]
        windows = np.concatenate([w for w, _, _, _ in own])
        lines = np.concatenate([ln for _, ln, _, _ in own])
        values = np.concatenate([v for _, _, v, _ in own])
        avg = np.concatenate([np.full(len(w), a) for w, _, _, a in own])
        order = np.lexsort((lines, windows))  # by test, then line
        windows, lines, values, avg = windows[order], lines[order], values[order], avg[order]
        last = np.append(windows[1:] != windows[:-1], True)  # a test's last footer line
        # Its last average: the average footers alone in the same order, the last of each test.
        aw, av = windows[avg], values[avg]
        a_last = np.append(aw[1:] != aw[:-1], True)
        by_window = dict(zip(aw[a_last].tolist(), av[a_last].tolist(), strict=True))
        tests = windows[last].tolist()
        out[logfile] = (lines[last].tolist(), [by_window.get(w) for w in tests])
    return out


def process_files(result: ParseResult) -> dict:
    """The per-file process tables of a run, or the one file of a lone parse (logfile None)."""
    if result.files:
        return result.files
    return {None: {"name": None, "role": "", "processes": result.processes,
                   "launch_lines": result.launch_lines, "settings": {}}}


def launch_spec(result: ParseResult, launch: Launch) -> dict:
    """The speculative settings of a launch, from the first of its files that states them."""
    files = process_files(result)
    spec: dict = {}
    for lf in launch.starts:
        settings = (files.get(lf) or {}).get("settings") or {}
        for key in ("spec.algorithm", "spec.steps"):
            if key in settings:
                spec.setdefault(key.split(".")[1], settings[key])
    if not result.files:  # a lone parse: the file's own settings
        spec = {"algorithm": _value(result.settings, "spec.algorithm"), "steps": _value(result.settings, "spec.steps")}
    return {"algorithm": spec.get("algorithm"), "steps": spec.get("steps")}


def several_launches_warning(launches: list[dict]) -> str:
    parts = []
    for launch in launches:
        tput = launch["summary"].get("throughput_tok_s")
        parts.append(f"launch {launch['id']}: NCCL {launch['nccl']['status']}"
                     + (f", {figure(tput, 'tok_s')} tok/s" if tput is not None else ""))
    return (f"this run holds {len(launches)} serving launches ({'; '.join(parts)}); its figures blend "
            "them: look at each launch, or split the run into one run per launch")


def _value(settings: dict, key: str) -> object:
    item = settings.get(key)
    return item.value if item else None


def person_vs_logs(parsed: dict, steps: int | None, steps_by_person: bool) -> list[str]:
    """Sentences for every value a person set that the logs contradict (step count, declared NCCL
    variables). The person's value is used; the log's is shown beside it."""
    out = []
    logged = (parsed.get("spec") or {}).get("steps")
    if steps_by_person and steps is not None and logged is not None and str(logged) != str(steps):
        out.append(f"steps set to {steps} by a person, but the log says {logged}")
    for c in (parsed.get("nccl") or {}).get("conflicts") or []:
        out.append(f"{c['key']} declared as {c['person']} by a person ({c['person_source']}), "
                   f"but the launcher in the log declared {c['log']}")
    return out
