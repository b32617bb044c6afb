"""`make bench`: the targets of issue 10, measured on this machine against the checked-out code.

It drives runlens only through what a user or an operator runs: `manage.py parselog` as a
subprocess (beside `grep -c` and a bare Python line loop on the same file, the references), and a
real stack (gunicorn as scripts/run.sh runs it, real Celery workers, PostgreSQL, Redis) that it
uploads to through the API and reads pages and API answers from over HTTP. The stack uses its own
database (created and dropped), its own Redis db, its own data dir in a temp dir; every process
it starts is stopped at the end, on failure and on Ctrl-C too.

    python bench/run.py                 # the full bench (512 MB log, 100k-window runs, 10k runs)
    python bench/run.py --quick         # a smoke run of every section on small data (< 2 min)
    python bench/run.py --size-mb 128 --sections parse,ingest

Prints the target table with the machine and the reference figures and writes bench/results.json
(--quick: bench/data/results-quick.json). Generated logs stay in bench/data/ (git-ignored) for
the next run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import clone, mixes, nccl_unique, report  # noqa: E402
from bench import trace as trace_mix  # noqa: E402
from bench.harness import PY, Stack, status_kb  # noqa: E402
from bench.loggen import HEAD_SAMPLE, cached_log  # noqa: E402

DATA = ROOT / "bench" / "data"
SECTIONS = ("mixes", "parse", "ingest", "compare", "list", "runpage", "workers", "trace")
PAGE_SIZE = 50  # the run list's and the API's page size
NCCL_PASTE = "NCCL_PROTO=LL\nNCCL_ALGO=Ring\nNCCL_MAX_NCHANNELS=16\n"


def say(*parts: object) -> None:
    print(f"[{time.strftime('%H:%M:%S')}]", *parts, flush=True)


def options(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small data everywhere: a smoke run in under 2 minutes")
    ap.add_argument("--size-mb", type=int, help="the mixed log of parselog and ingest, MiB (default 512; quick 8)")
    ap.add_argument("--mix-mb", type=int,
                    help="the size of each real-content mix parsed (default 256; quick 16)")
    ap.add_argument("--mixes", default="",
                    help=f"comma-separated, of {', '.join(mixes.MIXES + mixes.CLIFFS)} (the last three: odd input "
                         f"that made a speed cliff; default all, --quick all but distinct_names, which does not "
                         f"finish yet)")
    ap.add_argument("--ingest-mix", choices=mixes.MIXES + RENUMBERED,
                    help="the ingest section's log: this real-content mix at --size-mb (default the generator's log)")
    ap.add_argument("--mix-source", type=Path, action="append", default=[], metavar="DIR",
                    help="build the mixes from the real logs under DIR instead (repeatable): a kept-back set")
    ap.add_argument("--parse-timeout", type=float,
                    help="seconds a parse of a mix may take before it is reported unfinished (default 600; quick 60)")
    ap.add_argument("--windows", type=int, help="windows per run compared and on the run page (default 100000)")
    ap.add_argument("--compare-runs", type=int, default=10, help="runs compared (default 10)")
    ap.add_argument("--list-runs", type=int, help="runs in the list (default 10000; quick 300)")
    ap.add_argument("--logs", type=int, help="logs of the 4-workers-vs-1 section (default 200; quick 12)")
    ap.add_argument("--log-windows", type=int, help="windows per log of that section (default 200; quick 50)")
    ap.add_argument("--reps", type=int, help="requests per timed figure (default 5; quick 3)")
    ap.add_argument("--budget", type=float, default=60,
                    help="seconds one timed figure may take before fewer repetitions are kept (default 60)")
    ap.add_argument("--sections", default=",".join(SECTIONS), help=f"comma-separated, of {', '.join(SECTIONS)}")
    ap.add_argument("--db-url", default=os.environ.get("BENCH_DATABASE_URL",
                                                       "postgres://postgres@127.0.0.1:5432/runlens_bench"),
                    help="the bench's own database: created at the start, dropped at the end")
    ap.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/13"),
                    help="the bench's own Redis db: flushed at the start and the end")
    ap.add_argument("--timeout", type=int, default=300, help="gunicorn --timeout: slow pages are measured, not killed")
    ap.add_argument("--keep-from", type=Path, metavar="RESULTS",
                    help="take the rows of the sections not run now from this earlier results.json")
    ap.add_argument("--render", type=Path, metavar="RESULTS",
                    help="print an earlier results.json as the bench prints its end (for the README), then exit")
    ap.add_argument("--keep-db", action="store_true", help="leave the bench database for a look afterwards")
    ap.add_argument("--out", type=Path, help="results file (default bench/results.json; quick bench/data/...)")
    a = ap.parse_args(argv)
    quick = a.quick
    a.size_mb = a.size_mb or int(os.environ.get("BENCH_SIZE_MB") or 0) or (2 if quick else 512)
    a.mix_mb = a.mix_mb or (16 if quick else 256)
    a.parse_timeout = a.parse_timeout or (60 if quick else 600)
    every = mixes.MIXES + RENUMBERED + mixes.CLIFFS
    a.mixes = [m.strip() for m in a.mixes.split(",") if m.strip()] or [
        m for m in every if not (quick and m == "distinct_names")]
    if set(a.mixes) - set(every):
        ap.error(f"unknown mixes {sorted(set(a.mixes) - set(every))}")
    a.windows = a.windows or (1000 if quick else 100_000)
    a.list_runs = a.list_runs or (200 if quick else 10_000)
    a.logs = a.logs or (8 if quick else 200)
    a.log_windows = a.log_windows or (50 if quick else 200)
    a.reps = a.reps or (2 if quick else 5)
    a.out = a.out or (DATA / "results-quick.json" if quick else ROOT / "bench" / "results.json")
    a.sections = [s.strip() for s in a.sections.split(",") if s.strip()]
    unknown = set(a.sections) - set(SECTIONS)
    if unknown:
        ap.error(f"unknown sections {sorted(unknown)}")
    return a


def timed(call, reps: int, budget: float) -> list[float]:
    """`call()` (returning seconds) up to `reps` times, fewer once `budget` seconds are spent."""
    times: list[float] = []
    start = time.monotonic()
    while len(times) < reps and (not times or time.monotonic() - start < budget):
        times.append(call())
    return times


def timed_page(stack: Stack, path: str, a) -> tuple[list[float], int]:
    """A page fetched `a.reps` times (within `a.budget`): its times and its largest size in bytes."""
    sizes: list[int] = []

    def get() -> float:
        t = stack.ok(path, api=False)
        sizes.append(len(t.body))
        return t.seconds

    return timed(get, a.reps, a.budget), max(sizes)


# A command's own peak RSS, free of this process's: Linux records the peak of the memory a child ran in
# before its exec as the child's (exec_mmap's setmax_mm_hiwater_rss), and Popen's vfork runs it in this
# process's memory, so wait4 said every parse peaked at least where the bench itself had (296 MB on the
# cliff mixes, whose 256 MB inputs the bench writes, where /usr/bin/time said 138-166 MB). A small Python
# forks the command instead: its peak is the floor then (~10 MB); it writes the command's wait4 figures
# (peak RSS in KiB, wait status) to the descriptor its first argument names, and exits as the command did.
PEAK_LAUNCHER = """import os, sys
fd = int(sys.argv[1])
pid = os.fork()
if pid == 0:
    os.close(fd)
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
os.write(fd, b"%d %d" % (usage.ru_maxrss, status))
os._exit(os.waitstatus_to_exitcode(status) & 255 if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))
"""


def wall(argv: list[str], env: dict[str, str] | None = None, timeout: float | None = None,
         out: list[bytes] | None = None, peak: bool = False) -> tuple[float, int]:
    """Run a command to the end: (seconds, its own peak RSS in bytes with `peak`, else 0).

    Its output goes to a pipe that is read and dropped, not to /dev/null: GNU grep stops at the
    first match when it sees its output is /dev/null, even with -c. Past `timeout` seconds the
    command is killed and its seconds are given as infinite (a parse that did not finish). With
    `peak` it runs under PEAK_LAUNCHER (a few ms more start-up: the references go without)."""
    with tempfile.TemporaryFile() as err:
        report_r = report_w = -1
        command = argv
        if peak:
            report_r, report_w = os.pipe()
            argv = [PY, "-I", "-S", "-c", PEAK_LAUNCHER, str(report_w), *argv]
        start = time.perf_counter()
        try:
            # The launcher and its command in a session of their own: a timeout kills both.
            p = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=err,
                                 start_new_session=peak, pass_fds=(report_w,) if peak else ())
        finally:
            if peak:
                os.close(report_w)
        timer = None
        if timeout is not None:
            import threading

            timer = threading.Timer(timeout, _kill, (p, peak))
            timer.daemon = True  # never keeps the bench alive after its end
            timer.start()
        try:
            assert p.stdout is not None
            while block := p.stdout.read(1 << 20):
                if out is not None:
                    out.append(block)
            _, status, usage = os.wait4(p.pid, 0)
            rss = 0
            if peak:
                with os.fdopen(report_r, "rb") as r:
                    report_r = -1
                    said = r.read().split()
                if len(said) == 2:  # the command's own (the launcher killed: none)
                    rss, status = int(said[0]) * 1024, int(said[1])
            if timer is not None:
                timer.cancel()
                if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
                    p.stdout.close()
                    return math.inf, rss
        except BaseException:  # Ctrl-C: the child goes too
            if timer is not None:
                timer.cancel()
            _kill(p, peak)
            p.wait()
            raise
        finally:
            if report_r >= 0:
                os.close(report_r)
        seconds = time.perf_counter() - start
        p.stdout.close()
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode not in (0, 1):  # grep -c exits 1 when it counts nothing
            err.seek(0)
            raise RuntimeError(f"{command[:3]} exited {p.returncode}: {err.read().decode(errors='replace')[-1500:]}")
    return seconds, rss


def _kill(p: subprocess.Popen, group: bool) -> None:
    """SIGKILL to the command (and, under the launcher, to its session: the command with it)."""
    try:
        os.killpg(p.pid, signal.SIGKILL) if group else p.kill()
    except ProcessLookupError:
        pass


# -- sections --------------------------------------------------------------------------------------


def startup_seconds(env) -> float:
    # The best of several runs: a start-up measured once on this VM varied 1.5-15 s (page cache
    # reclaim), and one slow start-up subtracted from a parse would overstate its rate.
    return min(wall([PY, "manage.py", "parselog", "--json", str(HEAD_SAMPLE)], env, peak=True)[0] for _ in range(3))


# Real lines made unique (bench/nccl_unique.py): the NCCL start-up lines with new thread ids,
# communicator addresses and channels a copy, so that no line is a repeat the readers remember.
RENUMBERED = ("nccl_unique",)
# The literal `grep -c` counts in each mix (the line kind it is about).
GREP = {"nccl_startup": "NCCL", "nccl_unique": "NCCL", "decode": "Decode batch", "vllm": "throughput",
        "nccl_tests": "float", "generator": "EAGLE3_PROFILE", "blank_lines": "Decode", "tagged_decode": "Decode",
        "distinct_names": "Phase"}


def parse_one(log: Path, env, timeout: float) -> tuple[float, float, int]:
    """parselog's own parse of `log` (bench/parse_one.py), timed inside its process: (seconds, CPU
    seconds, peak RSS). Start-up is not in the time (on this loaded VM it varied 1.5-15 s, more than
    a parse)."""
    out: list[bytes] = []
    seconds, rss = wall([PY, str(ROOT / "bench" / "parse_one.py"), str(log)], env, timeout=timeout, out=out, peak=True)
    if math.isinf(seconds):
        return seconds, seconds, rss
    took, cpu = b"".join(out).split()[-2:]
    return float(took), float(cpu), rss


def section_mixes(a, mix_rows: list, refs, env) -> None:
    """parselog's parse of each real-content mix, beside grep -c, wc -l and a bare Python line loop
    on the same file in the same run (bench/mixes.py says what each mix is made of)."""
    roots = a.mix_source or None
    for mix in a.mixes:
        log = DATA / f"mix-{mix}-{a.mix_mb}mb.log"
        if mix in RENUMBERED:  # (from the repository's and the shared samples, not --mix-source)
            DATA.mkdir(parents=True, exist_ok=True)
            nccl_unique.write(log, a.mix_mb << 20)
            made_of = {**mixes.describe("nccl_startup"), "renumbered": True}
        else:
            mixes.write_mix(log, mix, a.mix_mb << 20, roots)
            made_of = mixes.describe(mix, roots)
        size = log.stat().st_size
        wall(["cat", str(log)])  # into the page cache
        grep = min(wall(["grep", "-c", GREP[mix], str(log)])[0] for _ in range(2))
        wc = min(wall(["wc", "-l", str(log)])[0] for _ in range(2))
        loop = wall([PY, "-c", "import sys\nfor _ in open(sys.argv[1], 'rb'): pass", str(log)])[0]
        say(f"mix {mix}: parselog on {size / report.MB:.0f} MB (grep -c {grep:.2f} s, wc -l {wc:.2f} s, "
            f"Python line loop {loop:.2f} s) ...")
        try:
            runs = [parse_one(log, env, a.parse_timeout)]
        except RuntimeError as e:  # a parse that fails is a finding, not the end of the bench
            say(f"mix {mix}: parselog failed: {e}")
            mix_rows.append({"mix": mix, "failed": str(e)[-500:], **made_of, "size_bytes": size,
                             "mb_per_s": None, "met": False, "peak_rss_bytes": 0, "grep_c_seconds": grep,
                             "wc_l_seconds": wc, "python_loop_seconds": loop})
            continue
        if runs[0][0] < a.parse_timeout / 4:  # the best of two where a second is cheap
            runs.append(parse_one(log, env, a.parse_timeout))
        seconds, cpu, rss = min(r[0] for r in runs), min(r[1] for r in runs), max(r[2] for r in runs)
        row = report.judge_mix(mix, made_of, size=size, seconds=seconds, cpu_seconds=cpu,
                               startup=0.0, rss=rss, grep_seconds=grep, wc_seconds=wc, loop_seconds=loop,
                               timeout=a.parse_timeout)
        mix_rows.append(row)
        say(f"mix {mix}: {row['measured']}")


def section_parse(a, rows, refs, env) -> None:
    log = cached_log(DATA / f"mixed-{a.size_mb}mb.log", size_bytes=a.size_mb << 20)
    size = log.stat().st_size
    wall(["cat", str(log)])  # into the page cache: every reader below reads from memory
    grep = min(wall(["grep", "-c", "EAGLE3_PROFILE", str(log)])[0] for _ in range(3))
    loop = wall([PY, "-c", "import sys\nfor _ in open(sys.argv[1], 'rb'): pass", str(log)])[0]
    startup = startup_seconds(env)
    say(f"parselog on {size / report.MB:.0f} MB (grep -c {grep:.2f} s, Python line loop {loop:.1f} s) ...")
    runs = [wall([PY, "manage.py", "parselog", "--json", str(log)], env, peak=True) for _ in range(2)]
    seconds, rss = min(r[0] for r in runs), max(r[1] for r in runs)
    report.judge_parse(rows["parse_rate"], rows["parse_rss"], size=size, seconds=seconds, startup=startup, rss=rss,
                       grep_seconds=grep, loop_seconds=loop)
    refs.update({"grep_c_seconds": round(grep, 3), "grep_c_mb_per_s": round(size / report.MB / grep, 1),
                 "python_line_loop_seconds": round(loop, 3),
                 "python_line_loop_mb_per_s": round(size / report.MB / loop, 1),
                 "parselog_startup_seconds": round(startup, 3)})
    say(rows["parse_rate"].measured, "| peak RSS", rows["parse_rss"].measured)


def ingest_log(a) -> Path:
    """The ingest section's log: the generator's, or a real-content mix (--ingest-mix)."""
    if not a.ingest_mix:
        return cached_log(DATA / f"mixed-{a.size_mb}mb.log", size_bytes=a.size_mb << 20)
    log = DATA / f"mix-{a.ingest_mix}-{a.size_mb}mb.log"
    if log.exists() and log.stat().st_size >= a.size_mb << 20:
        return log
    DATA.mkdir(parents=True, exist_ok=True)
    if a.ingest_mix in RENUMBERED:
        nccl_unique.write(log, a.size_mb << 20)
    else:
        mixes.write_mix(log, a.ingest_mix, a.size_mb << 20, a.mix_source or None)
    return log


def section_ingest(a, rows, refs, stack: Stack) -> None:
    log = ingest_log(a)
    say(f"ingest of {log.stat().st_size / report.MB:.0f} MB ({a.ingest_mix or 'generator'}) through the API ...")
    rid, up = stack.upload([log], f"bench ingest {a.size_mb} MB")
    cpu, db_cpu = stack.worker_cpu_seconds(1), stack.database_cpu_seconds()
    seconds = stack.wait_ready([rid], timeout=3600)
    report.judge_ingest(rows["ingest_time"], rows["ingest_rss"], size=log.stat().st_size, seconds=seconds,
                        upload_seconds=up, rss=stack.worker_peak_rss(1))
    rows["ingest_time"].detail["worker_cpu_seconds"] = round(stack.worker_cpu_seconds(1) - cpu, 2)
    # PostgreSQL's share: each backend's CPU while the run parsed, less what it had used before.
    db = sum(seconds - db_cpu.get(pid, 0.0) for pid, seconds in stack.database_cpu.items())
    rows["ingest_time"].detail["database_cpu_seconds"] = round(db, 2)
    # The store's last statements hold the file's row (its heartbeat skips a beat then, waits for
    # none): the oldest heartbeat seen while it parsed says whether a reconciler could think it dead.
    rows["ingest_time"].detail["heartbeat_max_age_seconds"] = round(stack.heartbeat_silence, 1)
    rows["ingest_time"].detail["log"] = a.ingest_mix or "generator"
    say(rows["ingest_time"].measured, f"(CPU: worker {rows['ingest_time'].detail['worker_cpu_seconds']} s, "
        f"PostgreSQL {db:.1f} s; oldest heartbeat {stack.heartbeat_silence:.1f} s) | worker peak RSS",
        rows["ingest_rss"].measured)


def large_runs(a, refs, stack: Stack, state: dict) -> list[int]:
    """The compared runs: one log of `windows` windows ingested, the others copied from it in SQL."""
    if "large" in state:
        return state["large"]
    log = cached_log(DATA / f"windows-{a.windows}.log", windows=a.windows)
    say(f"ingest of a {a.windows}-window run ({log.stat().st_size / report.MB:.0f} MB) ...")
    rid, up = stack.upload([log], f"bench {a.windows} windows")
    seconds = stack.wait_ready([rid], timeout=3600)
    refs["large_run_ingest_seconds"] = round(seconds, 2)
    refs["large_run_log_bytes"] = log.stat().st_size
    start = time.perf_counter()
    copies = clone.clone_run(stack.sql, rid, a.compare_runs - 1, name=f"bench {a.windows} windows copy",
                             step_s=1) if a.compare_runs > 1 else []
    refs["large_runs_copied_seconds"] = round(time.perf_counter() - start, 1)
    refs["large_run_rows"] = clone.row_counts(stack.sql, [rid])
    say(f"{len(copies)} copies of run {rid} ({refs['large_run_rows']} rows each) made in SQL in "
        f"{refs['large_runs_copied_seconds']} s")
    state["large"] = [rid, *copies]
    return state["large"]


def section_compare(a, rows, refs, stack: Stack, state: dict) -> None:
    ids = ",".join(map(str, large_runs(a, refs, stack, state)))
    say(f"compare of {a.compare_runs} runs x {a.windows} windows ...")
    times, nbytes = timed_page(stack, f"/compare/?runs={ids}", a)
    report.judge_timed(rows["compare_page"], times, 0.3, nbytes, 2 * report.MB)
    say(rows["compare_page"].measured)
    times = timed(lambda: stack.ok(f"/api/v1/compare?runs={ids}").seconds, a.reps, a.budget)
    report.judge_timed(rows["compare_api"], times, 0.3)
    say(rows["compare_api"].measured)


def section_list(a, rows, refs, stack: Stack, state: dict) -> None:
    large_runs(a, refs, stack, state)
    rid, _ = stack.upload([HEAD_SAMPLE], "bench small run")
    stack.wait_ready([rid], timeout=600)
    have = stack.run_count()
    start = time.perf_counter()
    # Older than every large run: the first page holds the large runs (the slow case).
    clone.clone_run(stack.sql, rid, max(a.list_runs - have, 0), name="bench small run copy",
                    newest_age_s=3600, step_s=1)
    total = stack.run_count()
    refs["list_runs"] = total
    refs["list_runs_copied_seconds"] = round(time.perf_counter() - start, 1)
    last = max(1, math.ceil(total / PAGE_SIZE))
    pages = sorted({1, 2, (last + 1) // 2, last})
    say(f"run list: {total} runs ({refs['list_runs_copied_seconds']} s of copying in SQL), pages {pages} ...")
    per_page = {p: timed(lambda p=p: stack.ok(f"/?page={p}", api=False).seconds, a.reps, a.budget) for p in pages}
    report.judge_pages(rows["list_page"], per_page, 0.15)
    say(rows["list_page"].measured)
    per_page = {p: timed(lambda p=p: stack.ok(f"/api/v1/runs?page={p}").seconds, a.reps, a.budget) for p in pages}
    report.judge_pages(rows["list_api"], per_page, 0.15)
    say(rows["list_api"].measured)
    state["small"] = rid


def web_memory(stack: Stack) -> tuple[int, dict[int, int], dict[int, int]]:
    pids = stack.web_workers()
    rss = {p: status_kb(p, "VmRSS") for p in pids}
    hwm = {p: status_kb(p, "VmHWM") for p in pids}
    return sum(rss.values()), rss, hwm


def section_runpage(a, rows, refs, stack: Stack, state: dict) -> None:
    big = large_runs(a, refs, stack, state)[0]
    if "small" not in state:
        state["small"], _ = stack.upload([HEAD_SAMPLE], "bench small run")
        stack.wait_ready([state["small"]], timeout=600)
    # A fresh web server, warmed on a small run (imports, templates), so what grows is this run's.
    stack.stop("web")
    stack.start_web()
    stack.login()
    for _ in range(4):  # both gunicorn workers, most likely
        stack.ok(f"/runs/{state['small']}/", api=False)
        stack.post_json(f"/api/v1/runs/{state['small']}/annotations", {"kind": "nccl", "body": NCCL_PASTE})
    before, rss0, _ = web_memory(stack)
    say(f"annotation on the {a.windows}-window run {big} ...")
    times = timed(lambda: stack.post_json(f"/api/v1/runs/{big}/annotations",
                                          {"kind": "nccl", "body": NCCL_PASTE}).seconds, a.reps, a.budget)
    after, _, hwm = web_memory(stack)
    growth = max([hwm[p] - rss0.get(p, hwm[p]) for p in hwm] or [0])
    report.judge_annotation(rows["annotation"], times, before, after, growth)
    say(rows["annotation"].measured)
    say(f"run page of run {big} ...")
    times, nbytes = timed_page(stack, f"/runs/{big}/", a)
    report.judge_timed(rows["run_page"], times, 0.3, nbytes, 2 * report.MB)
    refs["web_rss_after_run_page_bytes"] = web_memory(stack)[0]
    say(rows["run_page"].measured)


def section_workers(a, rows, refs, stack: Stack) -> None:
    took: dict[int, float] = {}
    nbytes = 0
    for n in (1, 4):
        stack.stop("worker1")
        logs = [cached_log(DATA / f"logs-{a.log_windows}w" / f"w{n}-{i}.log", windows=a.log_windows,
                           label=f"workers {n} log {i}", seed=i) for i in range(a.logs)]
        nbytes = sum(p.stat().st_size for p in logs)
        say(f"{a.logs} logs ({nbytes / report.MB:.0f} MB) queued for {n} worker(s) ...")
        ids = [stack.upload([p], f"bench workers {n} #{i}")[0] for i, p in enumerate(logs)]
        stack.start_worker(n, wait=False)
        # From the first parse taken to the last run ready: the worker's own start-up is left out.
        deadline = time.monotonic() + 300
        while all(s == "queued" for s in stack.run_status(ids).values()):
            stack.check_alive()
            if time.monotonic() > deadline:
                raise RuntimeError(f"{n} worker(s) took no task in 300 s")
            time.sleep(0.05)
        start = time.perf_counter()
        stack.wait_ready(ids, timeout=3600, poll=0.25)
        took[n] = time.perf_counter() - start
        stack.stop(f"worker{n}")
        say(f"{n} worker(s): {took[n]:.1f} s")
    report.judge_workers(rows["workers"], a.logs, nbytes, took[1], took[4])


# -- main ------------------------------------------------------------------------------------------


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    a = options(argv)
    if a.render:
        print(report.markdown(json.loads(a.render.read_text())))
        return 0
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGHUP, _interrupt)
    started = datetime.datetime.now(datetime.UTC)
    t0 = time.monotonic()
    rows = report.rows()
    mix_rows: list[dict] = []
    refs: dict = {}
    notes = [
        "MB = 2^20 bytes. Times of pages and API calls are request to last byte over localhost.",
        "parselog MB/s excludes manage.py start-up (timed on a 14 KB log) when the parse takes over twice as "
        "long; its peak RSS comes from wait4() in a small launcher (bench/run.py PEAK_LAUNCHER).",
        f"gunicorn as scripts/run.sh runs it (2 workers x 4 threads) with --timeout {a.timeout}; the API "
        "rate limit is lifted (RUNLENS_API_RATE) because one client sends thousands of requests.",
    ]
    if a.keep_from:
        notes += report.carry_over(rows, json.loads(a.keep_from.read_text()),
                                   [s for s in SECTIONS if s not in a.sections], refs)
    stack = Stack(db_url=a.db_url, redis_url=a.redis_url, timeout=a.timeout, log=say)
    mach = report.machine()
    commit = report.git_commit(str(ROOT))
    config = {k: getattr(a, k) for k in ("quick", "size_mb", "ingest_mix", "mix_mb", "mixes", "windows", "compare_runs",
                                         "list_runs", "logs", "log_windows", "reps", "sections", "timeout")}

    def write(extra: list[str]) -> dict:
        """results.json, written after every section: a run stopped half-way keeps what it measured."""
        out = report.results(commit=commit, started=started.isoformat(timespec="seconds"),
                             seconds=time.monotonic() - t0, mach=mach, config=config, references=refs,
                             table_rows=list(rows.values()), notes=notes + extra, mixes=mix_rows)
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(out, indent=1) + "\n")
        return out

    failed = ""
    try:
        mach = report.machine(stack.pg_version())
        say(report.machine_line(mach))
        if "mixes" in a.sections:
            section_mixes(a, mix_rows, refs, stack.env)
            write(["(partial: written after the mixes section)"])
        if "parse" in a.sections:
            section_parse(a, rows, refs, stack.env)
            write(["(partial: written after the parse section)"])
        if "trace" in a.sections:  # a process of its own, no stack: bench/trace.py
            trace_mix.section_trace(a, rows, refs, wall, PY, DATA, say)
            write(["(partial: written after the trace section)"])
        server = [s for s in SECTIONS if s in a.sections and s not in ("parse", "mixes", "trace")]
        if server:
            say(f"stack: database {stack.db_name}, {stack.redis_url}, data in {stack.tmp}")
            stack.create()
            stack.start_web()
            stack.login()
            stack.start_worker(1)
            state: dict = {}
            steps = {"ingest": lambda: section_ingest(a, rows, refs, stack),
                     "compare": lambda: section_compare(a, rows, refs, stack, state),
                     "list": lambda: section_list(a, rows, refs, stack, state),
                     "runpage": lambda: section_runpage(a, rows, refs, stack, state),
                     "workers": lambda: section_workers(a, rows, refs, stack)}
            for name in server:
                steps[name]()
                write([f"(partial: written after the {name} section)"])
            if "large" in state:
                notes.append(f"The {a.compare_runs} compared runs: one {a.windows}-window log ingested through "
                             f"the API, {a.compare_runs - 1} copies of its rows made in SQL (INSERT ... SELECT); "
                             f"the run list's other runs are copies of a small ingested run, older than the "
                             f"large ones (page 1 holds all of them); pages timed: 1, 2, the middle and the last.")
    except KeyboardInterrupt as e:
        failed = f"interrupted ({e})"
    except Exception as e:  # still print what was measured, and clean up
        failed = f"{type(e).__name__}: {e}"
    finally:
        say("stopping the bench's processes, dropping its database ...")
        stack.close(keep_db=a.keep_db)
    if failed:
        notes.append(f"The bench stopped early: {failed}")
    print()
    print(report.markdown(write([])))
    print(f"\nwritten: {a.out.relative_to(ROOT) if a.out.is_relative_to(ROOT) else a.out}")
    if failed:
        print(f"\nFAILED: {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
