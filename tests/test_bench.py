"""The benchmark's pure helpers (bench/report.py, bench/loggen.py): the table, results.json, the
log generator. Nothing here is timed; `make bench` measures."""

from __future__ import annotations

import io
import json

from django.core.management import call_command

from bench import loggen, mixes, report


def parsed(path) -> dict:
    out = io.StringIO()
    call_command("parselog", str(path), "--json", stdout=out)
    return json.loads(out.getvalue())


def test_generated_windows_parse_as_that_many_windows(tmp_path):
    head = parsed(loggen.HEAD_SAMPLE)["summary"]["windows"]
    log = loggen.write_log(tmp_path / "w.log", windows=1234)
    out = parsed(log)
    assert "error" not in out
    assert out["summary"]["windows"] == head + 1234
    assert {"eagle_profile", "sglang_decode", "nccl_debug"} <= set(out["formats"])
    assert [p["name"] for p in out["phases"]][:3] == ["Draft", "Target verify", "Accept"]


def test_generated_log_reaches_the_size_asked(tmp_path):
    log = loggen.write_log(tmp_path / "s.log", size_bytes=3 << 20)
    assert 3 << 20 <= log.stat().st_size < (3 << 20) + 4096
    assert parsed(log)["summary"]["windows"] > 4000


def test_labels_make_equal_logs_differ(tmp_path):
    a = loggen.write_log(tmp_path / "a.log", windows=10, label="a").read_bytes()
    b = loggen.write_log(tmp_path / "b.log", windows=10, label="b").read_bytes()
    assert a != b and a.splitlines()[1:] == b.splitlines()[1:]


def test_cached_log_is_made_again_when_asked_for_something_else(tmp_path):
    path = tmp_path / "c.log"
    loggen.cached_log(path, windows=10)
    small = path.stat().st_size
    loggen.cached_log(path, windows=10)
    assert path.stat().st_size == small
    loggen.cached_log(path, windows=20)
    assert path.stat().st_size > small


def test_table_has_a_row_per_target_with_its_verdict():
    rows = report.rows()
    report.judge_timed(rows["compare_api"], [0.2, 0.25, 0.9], 0.3)
    report.judge_timed(rows["run_page"], [0.1], 0.3, nbytes=3 * report.MB, limit_bytes=2 * report.MB)
    report.judge_workers(rows["workers"], 200, 50 * report.MB, 100.0, 40.0)
    lines = report.table(list(rows.values())).splitlines()
    assert len(lines) == 2 + len(report.TARGETS)
    by_what = {line.split(" | ")[0].lstrip("| "): line for line in lines[2:]}
    assert by_what["compare API, 10 runs x 100k windows"].endswith("| met |")
    assert "p50 250 ms (n=3, max 900 ms)" in by_what["compare API, 10 runs x 100k windows"]
    assert by_what["run page of a 100k-window run"].endswith("| NOT met |")  # fast, but 3 MB
    assert "2.50x faster with 4" in by_what["4 Celery workers vs 1 on 200 logs"]
    assert by_what["4 Celery workers vs 1 on 200 logs"].endswith("| - |")
    assert by_what["compare page, 10 runs x 100k windows"].endswith("| not measured | p50 <= 300 ms, <= 2 MB | - |")


def test_parse_rate_excludes_start_up_and_reports_the_ratios():
    rows = report.rows()
    report.judge_parse(rows["parse_rate"], rows["parse_rss"], size=512 * report.MB, seconds=4.0, startup=1.0,
                       rss=200 * report.MB, grep_seconds=0.5, loop_seconds=2.0)
    assert rows["parse_rate"].detail["mb_per_s"] == round(512 / 3, 2)
    assert rows["parse_rate"].met is True
    assert "8x grep -c" in rows["parse_rate"].measured
    assert rows["parse_rss"].met is True
    report.judge_parse(rows["parse_rate"], rows["parse_rss"], size=512 * report.MB, seconds=5.0, startup=1.0,
                       rss=301 * report.MB, grep_seconds=0.5, loop_seconds=2.0)
    assert rows["parse_rate"].met is False and rows["parse_rss"].met is False


def test_start_up_stays_in_when_the_parse_does_not_outlast_it():
    rows = report.rows()
    report.judge_parse(rows["parse_rate"], rows["parse_rss"], size=2 * report.MB, seconds=10.6, startup=10.9,
                       rss=100 * report.MB, grep_seconds=0.01, loop_seconds=0.2)
    assert rows["parse_rate"].detail["mb_per_s"] == round(2 / 10.6, 2)
    assert "start-up 10.9 s included" in rows["parse_rate"].measured


def test_the_worst_page_decides_the_list():
    row = report.rows()["list_page"]
    report.judge_pages(row, {1: [0.5, 0.1, 0.1], 2: [0.1, 0.1, 0.1], 200: [0.16, 0.17, 0.2]}, 0.15)
    assert row.met is False and row.measured.startswith("worst page 200: p50 170 ms")
    report.judge_pages(row, {1: [0.5, 0.1, 0.1], 2: [0.1, 0.1, 0.1]}, 0.15)
    assert row.met is True


def test_annotation_memory_must_stay_flat():
    row = report.rows()["annotation"]
    report.judge_annotation(row, [0.05, 0.06], 200 * report.MB, 210 * report.MB, 5 * report.MB)
    assert row.met is True
    report.judge_annotation(row, [0.05, 0.06], 200 * report.MB, 205 * report.MB, 900 * report.MB)
    assert row.met is False


def test_results_json_shape():
    rows = report.rows()
    report.judge_ingest(rows["ingest_time"], rows["ingest_rss"], size=512 * report.MB, seconds=25.0,
                        upload_seconds=3.0, rss=400 * report.MB)
    out = report.results(commit="abc", started="2026-12-01T03:00:00+00:00", seconds=12.3,
                         mach=report.machine("15.2"), config={"size_mb": 512}, references={"grep_c_seconds": 0.3},
                         table_rows=list(rows.values()), notes=["n"])
    again = json.loads(json.dumps(out))
    assert set(again) == {"commit", "started", "seconds", "machine", "config", "references", "targets", "notes",
                          "mixes"}
    assert {"cores", "ram_gb", "cpu", "python", "postgresql", "load_average"} <= set(again["machine"])
    assert [t["key"] for t in again["targets"]] == [k for k, _, _ in report.TARGETS]
    ingest = next(t for t in again["targets"] if t["key"] == "ingest_time")
    assert ingest["met"] is True and ingest["detail"]["mb_per_s"] == round(512 / 25, 2)
    assert all({"what", "target", "measured", "met", "detail"} <= set(t) for t in again["targets"])


def test_rows_of_sections_not_run_come_from_the_earlier_results_and_say_so():
    earlier = report.rows()
    report.judge_parse(earlier["parse_rate"], earlier["parse_rss"], size=256 * report.MB, seconds=600.0,
                       startup=8.0, rss=1400 * report.MB, grep_seconds=0.5, loop_seconds=3.0)
    previous = report.results(commit="6639c9a782ae", started="2026-12-01T02:21:29+00:00", seconds=1.0,
                              mach=report.machine(), config={"size_mb": 256}, references={"grep_c_seconds": 0.5},
                              table_rows=list(earlier.values()), notes=[])
    rows, refs = report.rows(), {"grep_c_seconds": 0.1}
    notes = report.carry_over(rows, json.loads(json.dumps(previous)), ["parse", "ingest"], refs)
    assert rows["parse_rss"].measured == "1400 MB" and rows["parse_rss"].met is False
    assert rows["parse_rate"].detail["from_run_started"] == "2026-12-01T02:21:29+00:00"
    assert rows["ingest_time"].measured == "not measured"  # not measured then either: nothing to take
    assert refs == {"grep_c_seconds": 0.1}  # this run's own reference wins
    assert notes == ["Rows parse_rate, parse_rss come from the run started 2026-12-01T02:21:29+00:00 on commit "
                     "6639c9a782ae (config size_mb=256)."]


def test_markdown_quotes_the_machine_the_table_and_the_references():
    rows = report.rows()
    report.judge_workers(rows["workers"], 200, 50 * report.MB, 100.0, 40.0)
    res = json.loads(json.dumps(report.results(
        commit="4f66c9e0123456", started="2026-12-01T02:33:18+00:00", seconds=600, mach=report.machine("15.20"),
        config={"quick": False}, references={"grep_c_seconds": 0.5}, table_rows=list(rows.values()),
        notes=["copies made in SQL"])))
    text = report.markdown(res)
    assert text.startswith("Measured on commit `4f66c9e01234`, 2026-12-01 02:33 UTC, 10 min\non ")
    assert "PostgreSQL 15.20" in text and report.table(list(rows.values())) in text
    assert "References measured in the same run: grep_c_seconds 0.5." in text
    assert text.endswith("- copies made in SQL")


def test_each_real_mix_is_built_from_real_logs_of_its_kind_only(tmp_path):
    for mix in ("nccl_startup", "decode", "vllm", "nccl_tests"):
        made_of = mixes.describe(mix)
        if mix == "vllm" and not made_of["files"]:
            continue  # the repository's samples hold no vLLM log; the shared samples and the corpus do
        assert made_of["real"] and made_of["files"], mix
        log = mixes.write_mix(tmp_path / f"{mix}.log", mix, 1 << 20)
        assert log.stat().st_size >= 1 << 20
        lines = log.read_text().splitlines()
        if mix == "nccl_startup":
            assert all("NCCL" in line for line in lines)
        elif mix == "decode":
            assert any("Decode batch" in line for line in lines)
            assert all("batch" in line or line.startswith(("[EAGLE", "  ")) for line in lines)
        elif mix == "nccl_tests":
            assert any("busbw" in line for line in lines)
        else:
            assert any("SpecDecoding metrics" in line or "Speculative metrics" in line for line in lines)
        out = parsed(log)
        assert "error" not in out, (mix, out)


def test_a_file_is_sorted_into_a_mix_by_its_content_not_its_name(tmp_path):
    (tmp_path / "a.txt").write_text("#  size count type redop root time algbw busbw #wrong\n"
                                    "#       (B)    (elements)   out-of-place\n")
    (tmp_path / "b.txt").write_text("INFO 09-09 [metrics.py:96] SpecDecoding metrics: Draft acceptance rate: 88.8%\n")
    (tmp_path / "c.txt").write_text("host:1:1 [0] NCCL INFO NCCL version 2.21.5\n")
    assert mixes.unit("nccl_tests", [tmp_path / "a.txt"]).startswith(b"#  size")
    assert mixes.unit("vllm", mixes.source_files([tmp_path])).startswith(b"INFO 09-09")
    assert mixes.unit("nccl_startup", mixes.source_files([tmp_path])) == b"host:1:1 [0] NCCL INFO NCCL version 2.21.5\n"


def test_mix_rows_say_rate_rss_and_the_references_or_that_a_parse_did_not_finish():
    row = report.judge_mix("vllm", {"real": True, "files": ["x", "y"]}, size=64 * report.MB, seconds=3.0,
                           startup=1.0, rss=120 * report.MB, grep_seconds=0.05, wc_seconds=0.03, loop_seconds=0.2,
                           timeout=600, cpu_seconds=1.6)
    assert row["mb_per_s"] == 32.0 and row["met"] is False and row["startup_excluded"]
    assert row["mb_per_cpu_s"] == 40.0 and "40.0 MB per CPU second" in row["measured"]
    slow = report.judge_mix("nccl_tests", {"real": True, "files": ["x"]}, size=64 * report.MB, seconds=float("inf"),
                            startup=1.0, rss=400 * report.MB, grep_seconds=0.05, wc_seconds=0.03, loop_seconds=0.2,
                            timeout=600)
    assert slow["mb_per_s"] is None and "did not finish in 600 s" in slow["measured"]
    table = report.mix_table([row, slow]).splitlines()
    assert table[2].startswith("| vllm | real (2 files) | 64 MB | 32.0 MB/s | 40.0 MB/s | 120 MB | 10.0x | 1280 MB/s |")
    assert "| did not finish |" in table[3]


def test_the_cliff_inputs_are_made_to_size_and_parse(tmp_path):
    for mix in mixes.CLIFFS:
        log = mixes.write_mix(tmp_path / f"{mix}.log", mix, 200_000)
        assert 190_000 <= log.stat().st_size < 400_000, mix
        assert not mixes.describe(mix)["real"]
        assert "error" not in parsed(log), mix


def test_a_mix_of_real_lines_made_unique_says_so_in_the_table():
    row = report.judge_mix("nccl_unique", {"real": True, "files": ["a", "b", "c"], "renumbered": True},
                           size=32 * report.MB, seconds=2.0, startup=0.0, rss=150 * report.MB, grep_seconds=0.05,
                           wc_seconds=0.03, loop_seconds=0.2, timeout=600, cpu_seconds=2.0)
    assert row["renumbered"] and row["mb_per_s"] == 16.0
    assert report.mix_table([row]).splitlines()[2].startswith("| nccl_unique | real, renumbered (3 files) | 32 MB |")


# A process that peaked at this much before it ran a command (bench/run.py spawns every parse of its mixes
# after writing their inputs): wait4 on a child Popen started says the child peaked there too.
_PEAKED = """import os, subprocess, sys
sys.path.insert(0, sys.argv[1])
from bench import run
held = bytearray(256 << 20)
for i in range(0, len(held), 4096):
    held[i] = 1
del held
plain = subprocess.Popen(["true"])
_, _, usage = os.wait4(plain.pid, 0)
print(usage.ru_maxrss << 10, run.wall(["true"], peak=True)[1],
      run.wall([sys.executable, "-c", "x = bytearray(96 << 20)\\nfor i in range(0, len(x), 4096): x[i] = 1"], peak=True)[1])
"""


def test_a_commands_peak_rss_is_its_own_not_the_benchs_that_started_it():
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    plain, true, grown = map(int, subprocess.run([sys.executable, "-c", _PEAKED, str(root)], check=True,
                                                 capture_output=True, text=True).stdout.split())
    assert plain >= 256 * report.MB  # why: Popen's child inherits the peak of the memory it was spawned in
    assert true < 64 * report.MB  # the launcher's few MB, not the bench's 256
    assert 96 * report.MB <= grown < 160 * report.MB  # a command's own growth is seen


def test_a_command_past_its_timeout_is_killed_with_its_launcher():
    import time

    from bench import run

    start = time.perf_counter()
    seconds, rss = run.wall(["sleep", "30"], timeout=0.5, peak=True)
    assert seconds == float("inf") and time.perf_counter() - start < 10
    assert run.wall(["sh", "-c", "exit 1"], peak=True)[1] > 0  # grep -c's "none counted" is no failure
    try:
        run.wall(["sh", "-c", "exit 3"], peak=True)
    except RuntimeError as e:
        assert "['sh', '-c', 'exit 3'] exited 3" in str(e)
    else:
        raise AssertionError("a command that failed passed")
