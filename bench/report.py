"""Pure helpers of the benchmark: percentiles, the target table, results.json, the machine.

No Django, no processes: tests/test_bench.py runs these directly.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
from dataclasses import asdict, dataclass, field
from typing import Any

MB = 1 << 20  # sizes and rates are in MiB ("MB" below), as the figures are

# The Targets table of issue 10, one row per figure judged (key, what, target text).
TARGETS: list[tuple[str, str, str]] = [
    ("parse_rate", "parselog, mixed log, one core", ">= 150 MB/s"),
    ("parse_rss", "parselog peak RSS", "<= 300 MB whatever the size"),
    ("ingest_time", "ingest end to end on PostgreSQL (accepted -> ready)", "<= 30 s for 512 MB (17 MB/s)"),
    ("ingest_rss", "ingest worker peak RSS", "<= 500 MB"),
    ("compare_page", "compare page, 10 runs x 100k windows", "p50 <= 300 ms, <= 2 MB"),
    ("compare_api", "compare API, 10 runs x 100k windows", "p50 <= 300 ms"),
    ("list_page", "run list page, large runs among 10k", "p50 <= 150 ms on every page"),
    ("list_api", "API run list, large runs among 10k", "p50 <= 150 ms on every page"),
    ("run_page", "run page of a 100k-window run", "p50 <= 300 ms, <= 2 MB"),
    ("annotation", "NCCL annotation on that run", "<= 100 ms, flat web memory"),
    ("workers", "4 Celery workers vs 1 on 200 logs", "report the ratio"),
]
# Which rows each section of bench/run.py measures.
SECTION_ROWS = {"parse": ("parse_rate", "parse_rss"), "ingest": ("ingest_time", "ingest_rss"),
                "compare": ("compare_page", "compare_api"), "list": ("list_page", "list_api"),
                "runpage": ("run_page", "annotation"), "workers": ("workers",)}
FLAT_MB = 32  # "flat memory": the web process grows by at most this much over an annotation


@dataclass
class Row:
    key: str
    what: str
    target: str
    measured: str = "not measured"
    met: bool | None = None  # None: nothing to judge (a ratio to report, or not measured)
    detail: dict[str, Any] = field(default_factory=dict)


def p50(values: list[float]) -> float:
    return statistics.median(values)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"


def mb(nbytes: float) -> str:
    return f"{nbytes / MB:.2f} MB" if nbytes < 10 * MB else f"{nbytes / MB:.0f} MB"


def rows() -> dict[str, Row]:
    return {key: Row(key, what, target) for key, what, target in TARGETS}


def judge_parse(row_rate: Row, row_rss: Row, *, size: int, seconds: float, startup: float, rss: int,
                grep_seconds: float, loop_seconds: float) -> None:
    # Start-up is subtracted only when the parse clearly outlasts it: on a small log under a noisy
    # load the two are of one size, and a difference of them means nothing.
    excluded = seconds > 2 * startup
    parse = seconds - startup if excluded else seconds
    rate = size / MB / parse
    row_rate.measured = (f"{rate:.1f} MB/s ({size / MB:.0f} MB in {seconds:.1f} s, start-up {startup:.1f} s "
                         f"{'excluded' if excluded else 'included'}); {seconds / grep_seconds:.0f}x grep -c, "
                         f"{seconds / loop_seconds:.1f}x a Python line loop")
    row_rate.met = rate >= 150
    row_rate.detail = {"mb_per_s": round(rate, 2), "seconds": round(seconds, 3), "startup_seconds": round(startup, 3),
                       "startup_excluded": excluded, "size_bytes": size, "x_grep": round(seconds / grep_seconds, 1),
                       "x_python_loop": round(seconds / loop_seconds, 2)}
    row_rss.measured = mb(rss)
    row_rss.met = rss <= 300 * MB
    row_rss.detail = {"peak_rss_bytes": rss}


MIX_RATE = 150  # MB/s: the parse target, on each real mix as on the generator's log
MIX_RSS = 300 * MB


def judge_mix(mix: str, made_of: dict[str, Any], *, size: int, seconds: float, startup: float, rss: int,
              grep_seconds: float, wc_seconds: float, loop_seconds: float, timeout: float,
              cpu_seconds: float | None = None) -> dict[str, Any]:
    """One row of the mixes table: parselog on one mix against the references of the same run. The
    target is judged on wall time; the rate per CPU second is shown beside it (on a shared machine
    wall time grows with the others' load, CPU time much less)."""
    row: dict[str, Any] = {"mix": mix, "real": made_of["real"], "files": made_of["files"],
                           "renumbered": made_of.get("renumbered", False), "size_bytes": size,
                           "peak_rss_bytes": rss, "grep_c_seconds": round(grep_seconds, 3),
                           "wc_l_seconds": round(wc_seconds, 3), "python_loop_seconds": round(loop_seconds, 3),
                           "startup_seconds": round(startup, 3)}
    refs = (f"grep -c {size / MB / grep_seconds:.0f} MB/s, wc -l {size / MB / wc_seconds:.0f} MB/s, "
            f"Python line loop {size / MB / loop_seconds:.0f} MB/s")
    if seconds == float("inf"):
        row.update(mb_per_s=None, seconds=None, met=False,
                   measured=f"did not finish in {timeout:.0f} s (< {size / MB / timeout:.2f} MB/s); "
                            f"peak RSS >= {mb(rss)}; {refs}")
        return row
    excluded = seconds > 2 * startup
    parse = seconds - startup if excluded else seconds
    rate = size / MB / parse
    cpu_rate = round(size / MB / cpu_seconds, 2) if cpu_seconds else None
    row.update(mb_per_s=round(rate, 2), seconds=round(parse, 3), startup_excluded=excluded,
               cpu_seconds=None if cpu_seconds is None else round(cpu_seconds, 3), mb_per_cpu_s=cpu_rate,
               x_python_loop=round(parse / loop_seconds, 1), met=rate >= MIX_RATE and rss <= MIX_RSS)
    per_cpu = f", {cpu_rate:.1f} MB per CPU second" if cpu_rate else ""
    row["measured"] = (f"{rate:.1f} MB/s ({size / MB:.0f} MB in {parse:.2f} s{per_cpu}), peak RSS {mb(rss)}; "
                       f"{parse / loop_seconds:.1f}x a Python line loop; {refs}")
    return row


def _made_of(row: dict[str, Any]) -> str:
    if not row["real"]:
        return "made"
    return f"real{', renumbered' if row.get('renumbered') else ''} ({len(row['files'])} files)"


def mix_table(mix_rows: list[dict[str, Any]]) -> str:
    """The mixes as markdown: each mix on its own, with its references."""
    lines = ["| mix | real | size | parselog | per CPU second | peak RSS | x Python loop | grep -c | wc -l "
             "| Python loop | target |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in mix_rows:
        size = r["size_bytes"] / MB
        rate = "did not finish" if r["mb_per_s"] is None else f"{r['mb_per_s']:.1f} MB/s"
        loop = "-" if r.get("x_python_loop") is None else f"{r['x_python_loop']:.1f}x"
        cpu = "-" if r.get("mb_per_cpu_s") is None else f"{r['mb_per_cpu_s']:.1f} MB/s"
        lines.append(
            f"| {r['mix']} | {_made_of(r)} "
            f"| {size:.0f} MB | {rate} | {cpu} | {mb(r['peak_rss_bytes'])} | {loop} "
            f"| {size / r['grep_c_seconds']:.0f} MB/s | {size / r['wc_l_seconds']:.0f} MB/s "
            f"| {size / r['python_loop_seconds']:.0f} MB/s | {verdict(r['met'])} |")
    return "\n".join(lines)


def judge_ingest(row_time: Row, row_rss: Row, *, size: int, seconds: float, upload_seconds: float, rss: int) -> None:
    # The target is 30 s for 512 MB, i.e. 17 MB/s: judged as a rate so smaller --size-mb runs mean the same.
    rate = size / MB / seconds
    row_time.measured = f"{seconds:.1f} s for {size / MB:.0f} MB ({rate:.1f} MB/s; upload {upload_seconds:.1f} s)"
    row_time.met = rate >= 512 / 30
    row_time.detail = {"seconds": round(seconds, 3), "mb_per_s": round(rate, 2), "size_bytes": size,
                       "upload_seconds": round(upload_seconds, 3)}
    row_rss.measured = mb(rss)
    row_rss.met = rss <= 500 * MB
    row_rss.detail = {"peak_rss_bytes": rss}


def judge_timed(row: Row, times: list[float], limit_s: float, nbytes: int | None = None,
                limit_bytes: int | None = None) -> None:
    """A request timed `len(times)` times: p50 against `limit_s`, and its size when asked."""
    mid = p50(times)
    row.measured = f"p50 {ms(mid)} (n={len(times)}, max {ms(max(times))})"
    row.met = mid <= limit_s
    row.detail = {"p50_s": round(mid, 4), "max_s": round(max(times), 4), "n": len(times)}
    if nbytes is not None:
        row.measured += f", {mb(nbytes)}"
        row.detail["bytes"] = nbytes
        if limit_bytes is not None:
            row.met = row.met and nbytes <= limit_bytes


def judge_pages(row: Row, per_page: dict[int, list[float]], limit_s: float) -> None:
    """p50 per page; the worst page decides."""
    medians = {page: p50(t) for page, t in per_page.items()}
    worst = max(medians, key=lambda p: medians[p])
    row.measured = (f"worst page {worst}: p50 {ms(medians[worst])}; "
                    + ", ".join(f"p.{p} {ms(m)}" for p, m in sorted(medians.items())))
    row.met = medians[worst] <= limit_s
    row.detail = {"p50_s_by_page": {str(p): round(m, 4) for p, m in sorted(medians.items())},
                  "n_per_page": min(len(t) for t in per_page.values())}


def judge_annotation(row: Row, times: list[float], rss_before: int, rss_after: int, peak_growth: int) -> None:
    mid = p50(times)
    flat = max(rss_after - rss_before, peak_growth) <= FLAT_MB * MB
    row.measured = (f"p50 {ms(mid)} (n={len(times)}); web RSS {mb(rss_before)} -> {mb(rss_after)}, "
                    f"peak +{mb(peak_growth)}")
    row.met = mid <= 0.1 and flat
    row.detail = {"p50_s": round(mid, 4), "n": len(times), "rss_before_bytes": rss_before,
                  "rss_after_bytes": rss_after, "peak_growth_bytes": peak_growth, "flat_limit_bytes": FLAT_MB * MB}


def judge_workers(row: Row, logs: int, total_bytes: int, one_s: float, four_s: float) -> None:
    ratio = one_s / four_s
    row.measured = (f"{ratio:.2f}x faster with 4 ({logs} logs, {mb(total_bytes)}: 1 worker {one_s:.1f} s, "
                    f"4 workers {four_s:.1f} s)")
    row.met = None
    row.detail = {"logs": logs, "total_bytes": total_bytes, "one_worker_s": round(one_s, 3),
                  "four_workers_s": round(four_s, 3), "ratio": round(ratio, 3)}


def carry_over(table_rows: dict[str, Row], previous: dict[str, Any], sections: list[str],
               refs: dict[str, Any]) -> list[str]:
    """Rows of `sections` (not run this time) taken from an earlier results.json, marked as such;
    its references too, where this run has none. Returns the notes that say so."""
    old = {t["key"]: t for t in previous.get("targets", [])}
    taken = []
    for section in sections:
        for key in SECTION_ROWS[section]:
            if key in old and old[key]["measured"] != "not measured":
                row = table_rows[key]
                row.measured, row.met, row.detail = old[key]["measured"], old[key]["met"], old[key]["detail"]
                row.detail = {**row.detail, "from_run_started": previous.get("started")}
                taken.append(key)
    for k, v in previous.get("references", {}).items():
        refs.setdefault(k, v)
    if not taken:
        return []
    cfg = previous.get("config", {})
    return [f"Rows {', '.join(taken)} come from the run started {previous.get('started')} on commit "
            f"{str(previous.get('commit'))[:12]} (config {', '.join(f'{k}={cfg[k]}' for k in sorted(cfg))})."]


def verdict(met: bool | None) -> str:
    return {True: "met", False: "NOT met", None: "-"}[met]


def table(table_rows: list[Row]) -> str:
    """The target table as markdown (it is printed, and pasted into the README as it is)."""
    lines = ["| what | measured | target | |", "|---|---|---|---|"]
    for r in table_rows:
        lines.append(f"| {r.what} | {r.measured} | {r.target} | {verdict(r.met)} |")
    return "\n".join(lines)


def markdown(res: dict[str, Any]) -> str:
    """What the bench prints at its end, from results.json: the machine, the table, the references
    measured in the same run, the notes (the README's Performance section quotes it)."""
    quick = res.get("config", {}).get("quick")
    return "\n".join([
        f"Measured on commit `{str(res['commit'])[:12]}`, {res['started'][:16].replace('T', ' ')} UTC, "
        f"{res['seconds'] / 60:.0f} min" + (" (quick: small data, not comparable to the targets)" if quick else ""),
        f"on {machine_line(res['machine'])}.",
        "",
        table([Row(**t) for t in res["targets"]]),
        "",
        *(["Parse of each mix (`bench/mixes.py`; target >= 150 MB/s, peak RSS <= 300 MB):", "",
           mix_table(res["mixes"]), ""] if res.get("mixes") else []),
        "References measured in the same run: " + ", ".join(f"{k} {v}" for k, v in res["references"].items()) + ".",
        "",
        *(f"- {n}" for n in res["notes"]),
    ])


def _first(path: str, prefix: str) -> str:
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(prefix):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def machine(pg_version: str = "unknown") -> dict[str, Any]:
    mem_kb = _first("/proc/meminfo", "MemTotal")
    return {
        "cores": os.cpu_count(),
        "ram_gb": round(int(mem_kb.split()[0]) / 2**20, 1) if mem_kb != "unknown" else None,
        "cpu": _first("/proc/cpuinfo", "model name"),
        "python": platform.python_version(),
        "postgresql": pg_version,
        "kernel": platform.release(),
        # Other work on the machine slows every figure: the load when the bench started.
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def machine_line(m: dict[str, Any]) -> str:
    return (f"{m['cores']} cores, {m['ram_gb']} GB RAM, {m['cpu']}, Python {m['python']}, "
            f"PostgreSQL {m['postgresql']}; load average {' '.join(map(str, m.get('load_average', [])))}")


def git_commit(root: str) -> str:
    try:
        out = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def results(*, commit: str, started: str, seconds: float, mach: dict[str, Any], config: dict[str, Any],
            references: dict[str, Any], table_rows: list[Row], notes: list[str],
            mixes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The shape of bench/results.json."""
    return {
        "commit": commit, "started": started, "seconds": round(seconds, 1), "machine": mach, "config": config,
        "references": references, "targets": [asdict(r) for r in table_rows], "notes": notes,
        "mixes": mixes or [],
    }
