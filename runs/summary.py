"""From parsed records to the contract's JSON (DESIGN, "Contract"): medians over windows.

Medians, not means, because the first window of a run carries warm-up (CUDA graph capture,
the first tiny `gen throughput` after idle) and would drag a mean.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from statistics import median, quantiles
from typing import TYPE_CHECKING

from runs.display import figure
from runs.nccl import analyze, launch_verdicts, person_conflicts
from runs.processes import LAUNCHER, NCCL_TESTS, WORKER, Launch, Layout, layout, merge_orphans

if TYPE_CHECKING:  # the parsers' record shapes; runs never loads ingest at run time
    from ingest.parsers.records import Metric, ParseResult

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


def series(metrics: list[Metric], *names: str, exclude: tuple[str, ...] = ()) -> list[float]:
    """Per-window values of one metric from the best source that has it.

    With several names (`throughput_tok_s`, `gen_throughput_tok_s`) the best source reporting
    any of them wins, and within it the first name it reports. Values come in window order
    whatever the order of the records. Several ranks reporting the same window (SGLang DP
    attention) are combined per window: throughput adds up across ranks, other figures are
    weighted by each rank's throughput.
    """
    by_source: dict[str, list[Metric]] = defaultdict(list)
    for m in metrics:
        if m.name in names and m.source not in exclude:
            by_source[m.source].append(m)
    if not by_source:
        return []
    source = min(by_source, key=lambda s: (source_rank(s), s))
    rows = by_source[source]
    name = next(n for n in names if any(m.name == n for m in rows))
    rows = sorted((m for m in rows if m.name == name), key=lambda m: (m.window, m.line, m.rank))
    if len({m.rank for m in rows}) <= 1:
        return [m.value for m in rows]
    return _combine_ranks(rows, metrics, source, name)


def _combine_ranks(rows: list[Metric], metrics: list[Metric], source: str, name: str) -> list[float]:
    per_window: dict[int, list[Metric]] = defaultdict(list)
    for m in rows:  # sorted by window, then line and rank
        per_window[m.window].append(m)
    if name in ("gen_throughput_tok_s", "throughput_tok_s"):
        return [sum(m.value for m in ms) for _, ms in sorted(per_window.items())]
    weight = {
        (m.window, m.rank): m.value
        for m in metrics
        if m.source == source and m.name in ("gen_throughput_tok_s", "throughput_tok_s")
    }
    out = []
    for w, ms in sorted(per_window.items()):
        ws = [weight.get((w, m.rank), 0.0) for m in ms]
        if name == "tokens_per_cycle":
            # Tokens per verify step over all ranks is total tokens / total steps, and a rank's
            # steps are its tokens / its tokens per step: weight by steps, not by tokens.
            ws = [x / m.value if m.value > 0 else 0.0 for m, x in zip(ms, ws, strict=True)]
        total = sum(ws)
        weighted = sum(m.value * x for m, x in zip(ms, ws, strict=True))
        out.append(weighted / total if total else median(m.value for m in ms))
    return out


def robust_median(values: list[float]) -> float | None:
    return round(median(values), 4) if values else None


def spread(values: list[float]) -> float | None:
    """Half the interquartile range of per-window values: the noise a change must exceed to count
    (the comparison's one rule, for every figure). None under four windows: too few to tell."""
    if len(values) < 4:
        return None
    q1, _, q3 = quantiles(values, n=4, method="inclusive")
    return round((q3 - q1) / 2, 4)


THROUGHPUT_NAMES = ("throughput_tok_s", "gen_throughput_tok_s")


def throughput_series(metrics: list[Metric]) -> list[float]:
    values = series(metrics, *THROUGHPUT_NAMES)
    # SGLang's first decode line after idle shows a tiny rate (0.39 tok/s): not a real window.
    # Only SGLang's: a vLLM engine interval, the first one too, averages real generation.
    sources = {m.source for m in metrics if m.name in THROUGHPUT_NAMES}
    best = min(sources, key=lambda s: (source_rank(s), s)) if sources else None
    if best == "sglang_decode" and len(values) > 2 and values[0] < 0.25 * median(values[1:]):
        values = values[1:]
    return values


def throughput_scope(metrics: list[Metric], settings: dict) -> dict | None:
    """What the throughput figure covers when a server runs several data-parallel ranks, else None.

    Each DP rank (SGLang with DP attention, vLLM's `Engine 00N`) logs its own rate and the summary
    adds them up per window: the figure is the server's, a sum over the ranks, not one rank's.
    `ranks` counts the ranks the log shows; `dp_size` is what the launch declared (None if unsaid).
    """
    rows = [m for m in metrics if m.name in THROUGHPUT_NAMES]
    if not rows:
        return None
    best = min({m.source for m in rows}, key=lambda s: (source_rank(s), s))
    ranks = {m.rank for m in rows if m.source == best}
    dp_attention = bool(_value(settings, "sglang.enable_dp_attention"))
    dp_size = _value(settings, "dp_size")
    if len(ranks) > 1:
        return {"kind": "sum_over_dp_ranks", "ranks": len(ranks), "dp_size": dp_size, "dp_attention": dp_attention}
    return None


# The raw figure each source prints for tokens per cycle, and whether it already counts the bonus token.
RAW_ACCEPT = {"eagle_profile": ("Accept len", "accept_len_raw", False), "sglang_decode": ("accept len", None, True)}


def _tokens_per_cycle_origin(metrics: list[Metric], tokens_per_cycle: float | None) -> dict | None:
    """{label, raw, bonus_added}: `Accept len 1.61` in an EAGLE profile is 2.61 tokens per cycle."""
    if tokens_per_cycle is None:
        return None
    sources = {m.source for m in metrics if m.name == "tokens_per_cycle"}
    if not sources:
        return None
    source = min(sources, key=lambda s: (source_rank(s), s))
    if source not in RAW_ACCEPT:
        return None
    label, raw_name, includes_bonus = RAW_ACCEPT[source]
    raw = robust_median(series(metrics, raw_name)) if raw_name else tokens_per_cycle
    return {"label": label, "raw": raw, "bonus_added": not includes_bonus, "source": source}


def phase_table(result: ParseResult, cycle_ms: float | None) -> list[dict]:
    by_name: dict[str, list] = {}
    for p in result.phases:
        by_name.setdefault(p.name, []).append(p)
    rows = []
    for name, samples in by_name.items():
        ms = robust_median([p.ms for p in samples])
        pcts = [p.pct for p in samples if p.pct is not None]
        pct = robust_median(pcts)
        if pct is None and ms is not None and cycle_ms:
            pct = round(100 * ms / cycle_ms, 2)
        rows.append({"name": name, "ms": ms, "pct": pct, "windows": len(samples),
                     "spread": spread([p.ms for p in samples])})
    return rows


def figures(result: ParseResult) -> tuple[dict, list[dict]]:
    """The summary figures (medians over windows, with their spread) and the phase table."""
    metrics = result.metrics
    throughput = throughput_series(metrics)
    # SGLang bench_serving's `Accept length` covers the server's whole life (FORMATS §2.1):
    # never the run's figure when the server's own decode lines are there.
    has_decode = any(m.source == "sglang_decode" for m in metrics)
    tokens = series(metrics, "tokens_per_cycle", exclude=("sglang_bench",) if has_decode else ())
    tokens_from = _tokens_per_cycle_origin(metrics, robust_median(tokens))
    cycle = series(metrics, "cycle_ms")
    if not cycle and result.phases:
        per_window: dict[int, float] = defaultdict(float)
        for p in sorted(result.phases, key=lambda p: (p.window, p.line, p.name)):
            if p.source not in PARTIAL_PHASE_SOURCES:
                per_window[p.window] += p.ms
        cycle = list(per_window.values())
    cycle_ms = robust_median(cycle)
    windows = max(len(throughput), len(tokens), len(cycle)) or None
    summary = {
        "throughput_tok_s": robust_median(throughput),
        "tokens_per_cycle": robust_median(tokens),
        "cycle_ms": cycle_ms,
        "windows": windows,
        # The noise of each figure across windows (half the IQR), for the comparison's rule.
        "spread": {"throughput_tok_s": spread(throughput), "tokens_per_cycle": spread(tokens),
                   "cycle_ms": spread(cycle)},
        # What the log printed for tokens per cycle, before the bonus token was added (DESIGN, Words).
        "tokens_per_cycle_from": tokens_from,
    }
    scope = throughput_scope(metrics, result.settings)
    if scope:  # only when it applies: a one-rank figure needs no qualifier (and goldens stay as they were)
        summary["throughput_scope"] = scope
    return summary, phase_table(result, cycle_ms)


def summarize(result: ParseResult) -> dict:
    """The contract's parse JSON for one file (or one run's files parsed into one result).

    Processes and launches (runs/processes.py) decide what counts: the run's `nccl` and
    `summary` are its one serving launch's; with several, each launch has its own and the
    run-level ones carry `launches_count` and a warning instead of passing for one verdict.
    """
    s = result.settings
    version = _value(s, "nccl.version")
    lay, records = launch_records(result)
    launches_count = len(lay.launches)
    warnings = [{"line": w.line, "message": w.message} for w in result.warnings]
    verdicts = launch_verdicts(result.nccl, lay, version)
    launches = []
    for i, launch in enumerate(lay.launches):
        summary, phases = figures(replace(result, metrics=records[i][0], phases=records[i][1]))
        launches.append({
            "id": launch.number,
            "processes": list(launch.processes),
            "logfiles": sorted(lf for lf in launch.starts if lf is not None),
            "starts": [{"logfile": lf, "line": line} for lf, line in launch.starts.items()],
            "launcher": [p for p in launch.processes if lay.roles[p] == LAUNCHER],
            "workers": [p for p in launch.processes if lay.roles[p] == WORKER],
            "nccl": verdicts["launches"][i],
            "summary": summary,
            "phases": phases,
            "spec": launch_spec(result, launch),
        })
    if launches_count == 1:
        summary, phases = launches[0]["summary"], launches[0]["phases"]
    else:
        summary, phases = figures(result)
        if launches_count > 1:
            summary = {**summary, "blended": True}
            warnings.insert(0, {"line": None, "message": several_launches_warning(launches)})
    nccl = verdicts["run"]
    if nccl is None:
        other = verdicts["other_values"]
        tests = verdicts["nccl_tests"]
        # A run of nccl-tests alone: its verdict is the tests' own (there is no serving worker).
        nccl = next(iter(tests.values())) if len(tests) == 1 and not other else analyze(other, version=version)
    return {
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
        "nccl": {**nccl, "conflicts": person_conflicts(result.nccl)},
        "processes": lay.processes,
        "launches": launches,
        "launches_count": launches_count,
        "nccl_tests": nccl_tests_panels(result, lay, verdicts["nccl_tests"]),
        "collectives": [
            {
                "op": c.op, "size_bytes": c.size_bytes, "time_us": c.time_us,
                "algbw_gbs": c.algbw_gbs, "busbw_gbs": c.busbw_gbs, "in_place": c.in_place,
            }
            for c in result.collectives
        ],
        "serving": {k[len("serving."):]: v.value for k, v in s.items() if k.startswith("serving.")},
        "errors": [{"line": e.line, "message": e.message} for e in result.errors],
        "warnings": warnings,
    }


def nccl_tests_panels(result: ParseResult, lay: Layout, verdicts: dict) -> list[dict]:
    """One panel per log file holding nccl-tests processes: their NCCL settings and bandwidth."""
    files = {p["logfile"] for p in lay.processes if p["role"] == NCCL_TESTS}
    panels = []
    for logfile in sorted(files, key=lambda f: (f is None, f or 0)):
        busbw = [c.busbw_gbs for c in result.collectives
                 if c.logfile == logfile and c.busbw_gbs is not None
                 and lay.role(logfile, c.process) == NCCL_TESTS]
        avg = [m.value for m in result.metrics if m.logfile == logfile and m.name == "avg_busbw_gbs"]
        panels.append({
            "logfile": logfile,
            "file": (process_files(result).get(logfile) or {}).get("name"),
            "processes": [p["id"] for p in lay.processes if p["logfile"] == logfile and p["role"] == NCCL_TESTS],
            "nccl": verdicts.get(logfile) or analyze([]),
            "avg_busbw_gbs": avg[-1] if avg else None,
            "peak_busbw_gbs": max(busbw) if busbw else None,
            "rows": len(busbw),
        })
    return panels


def process_files(result: ParseResult) -> dict:
    """The per-file process tables of a run, or the one file of a lone parse (logfile None)."""
    if result.files:
        return result.files
    return {None: {"name": None, "role": "", "processes": result.processes,
                   "launch_lines": result.launch_lines, "settings": {}}}


def launch_records(result: ParseResult) -> tuple[Layout, list[tuple[list, list]]]:
    """The run's layout and, per launch, its (metrics, phases)."""
    lay = layout(process_files(result))

    def assign() -> list[tuple[list, list]]:
        out: list[tuple[list, list]] = [([], []) for _ in lay.launches]
        for m in result.metrics:
            i = lay.launch_index(m.logfile, m.process, m.line)
            if i is not None:
                out[i][0].append(m)
        for p in result.phases:
            i = lay.launch_index(p.logfile, p.process, p.line)
            if i is not None:
                out[i][1].append(p)
        return out

    records = assign()
    before = len(lay.launches)
    # Serving figures of its own (not an nccl-tests bandwidth) keep a worker-only launch apart.
    merge_orphans(lay, {i for i, (ms, ps) in enumerate(records) if ps or any(m.source in SOURCE_ORDER for m in ms)})
    if len(lay.launches) != before:
        records = assign()
    return lay, records


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
