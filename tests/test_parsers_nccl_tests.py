import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ingest.parsers as parsers
from ingest.parsers import nccl_tests, parse_lines, parse_stream, processes
from runs.summary import summarize
from tests.samples import log_path, public_sample

CLASSIC = [
    "# nccl-tests version 2.18.0 nccl-headers=22907 nccl-library=22907",
    "# Collective test starting: all_reduce_perf_mpi",
    "# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 "
    "agg iters: 1 validation: 1 graph: 0",
    "#",
    "#  out-of-place  in-place",
    "#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  "
    "busbw  #wrong",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  "
    "(GB/s)",
    "  8  2  float  sum  -1  15.78  0.00  0.00  0  13.87  0.00  "
    "0.00       0",
    "   268435456      67108864     float     sum      -1   895.59  299.73  299.73       0   893.63  300.39  "
    "300.39       0",
    "# Out of bounds values : 0 OK",
    "# Avg bus bandwidth    : 68.7056 ",
    "#",
    "# Collective test concluded: all_reduce_perf_mpi",
]


def sides(result):
    return [(c.size_bytes, c.time_us, c.algbw_gbs, c.busbw_gbs, c.wrong, c.in_place)
            for c in result.collectives]


def test_classic_table_gives_one_collective_per_row_and_side():
    r = parse_lines(formats=["nccl_tests"], lines=CLASSIC)
    assert sides(r) == [
        (8, 15.78, 0.0, 0.0, 0, False), (8, 13.87, 0.0, 0.0, 0, True),
        (268435456, 895.59, 299.73, 299.73, 0, False), (268435456, 893.63, 300.39, 300.39, 0, True),
    ]
    c = r.collectives[2]
    assert (c.op, c.count, c.dtype, c.redop, c.root) == ("all_reduce", 67108864, "float", "sum", -1)
    assert c.line == 9
    assert r.formats == ["nccl_tests"]


def test_footer_gives_average_bus_bandwidth_and_out_of_bounds_count():
    r = parse_lines(formats=["nccl_tests"], lines=CLASSIC)
    metrics = {m.name: (m.value, m.line) for m in r.metrics}
    assert metrics["avg_busbw_gbs"] == (68.7056, 11)
    assert metrics["out_of_bounds_values"] == (0.0, 10)
    assert r.warnings == []


def test_run_header_and_version_lines_are_settings():
    values = {k: s.value for k, s in parse_lines(formats=["nccl_tests"], lines=CLASSIC).settings.items()}
    assert values["nccl_tests.version"] == "2.18.0"
    assert values["nccl.version"] == "2.29.7"  # nccl-library=22907
    assert values["nccl_tests.ngpus"] == 8 and values["nccl_tests.nthread"] == 1
    assert values["nccl_tests.maxbytes"] == 134217728 and values["nccl_tests.iters"] == 20
    assert values["nccl_tests.warmup_iters"] == 5 and values["nccl_tests.step"] == "2(factor)"


def test_per_iteration_columns_do_not_shift_the_in_place_side():
    r = parse_lines(formats=["nccl_tests"], lines=[
        "# Collective test starting: all_gather_perf",
        "#  size  count  type  redop  root  time  algbw  busbw  #wrong  i_min  i_max"
        "    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%",
        "  1024  256  float  none  -1  20.10  0.05  0.04  0  19.00  25.00"
        "    24.90     3.10    21.30    0.05    0.04       0    20.00    26.00    25.80     2.90",
    ])
    assert sides(r) == [(1024, 20.1, 0.05, 0.04, 0, False), (1024, 21.3, 0.05, 0.04, 0, True)]
    assert r.collectives[0].op == "all_gather" and r.collectives[0].redop == "none"


def test_iters_column_and_trailing_timestamp_are_ignored():
    r = parse_lines(formats=["nccl_tests"], lines=[
        "#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw"
        "   busbw  #wrong  #iters            timestamp",
        "  2048  512  float  sum  -1  13.53  0.15  0.15  0  13.82  0.15"
        "    0.15       0      20  2026-01-02 03:04:05",
    ])
    assert sides(r) == [(2048, 13.53, 0.15, 0.15, 0, False), (2048, 13.82, 0.15, 0.15, 0, True)]


def test_single_column_set_with_two_spaces_after_hash_is_out_of_place_only():
    r = parse_lines(formats=["nccl_tests"], lines=[
        "#  size    count   type  redop  root   time   algbw   busbw  #wrong",
        "#   (B)  (elements)                    (us)  (GB/s)  (GB/s)",
        "  34359738368 8589934592  float   sum    -1  875713  39.24   68.66       0",
        "# Avg bus bandwidth    : 68.6248",
        "# Collective test concluded: all_reduce_perf",
    ])
    assert sides(r) == [(34359738368, 875713.0, 39.24, 68.66, 0, False)]
    assert r.collectives[0].op == "all_reduce"  # named by the footer after the fact


def test_old_header_names_without_root_column():
    r = parse_lines(formats=["nccl_tests"], lines=[
        "#  bytes  N  type  op  time  algbw  busbw  res  time  algbw  busbw  res",
        "  1048576  262144  float  sum  20.46  51.25  51.25  0e+00  18.12  57.87  57.87  0e+00",
    ])
    assert sides(r) == [(1048576, 20.46, 51.25, 51.25, 0, False), (1048576, 18.12, 57.87, 57.87, 0, True)]
    assert r.collectives[0].root == -1


def test_not_available_values_are_none():
    r = parse_lines(formats=["nccl_tests"], lines=[
        "#  size  count  type  redop  root  time  algbw  busbw #wrong  time  algbw"
        "   busbw #wrong",
        "  64  16  float  sum  -1  13.44  0.00  0.00  N/A  13.65  0.00"
        "    0.00    N/A",
    ])
    assert [c.wrong for c in r.collectives] == [None, None]


def test_op_comes_from_the_command_line_binary_name():
    r = parse_lines(formats=["nccl_tests"], lines=[
        "$ mpirun -np 16 -x NCCL_DEBUG=INFO /opt/nccl-tests/build/reduce_scatter_perf -b 8 -e 8G -f 2 -g 1",
        "#  size  count  type  redop  root  time  algbw  busbw #wrong  time  algbw"
        "   busbw #wrong",
        "  1024  16  float  sum  -1  13.44  0.08  0.07  0  13.65  0.08"
        "    0.07      0",
    ])
    assert {c.op for c in r.collectives} == {"reduce_scatter"}


def test_op_is_unknown_without_any_name():
    r = parse_lines(formats=["nccl_tests"], lines=CLASSIC[4:9])
    assert {c.op for c in r.collectives} == {"unknown"}


def test_nccl_info_lines_between_rows_do_not_end_the_table():
    r = parse_lines(formats=["nccl_tests"], lines=CLASSIC[:8] + [
        "vm:1377:1396 [1] NCCL INFO Connected all rings, use ring PXN 0 GDR 1",
        "10-4-3-3:97095:97196 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/direct pointer",
        "",
    ] + CLASSIC[8:])
    assert len(r.collectives) == 4


def test_mpi_tags_and_markdown_indentation_are_read_through():
    r = parse_lines(formats=["nccl_tests"], lines=[
        "[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong"
        "     time   algbw   busbw #wrong",
        "[1,0]<stdout>:     1048576        262144     float     sum      -1    20.46   51.25   51.25      0"
        "    18.12   57.87   57.87      0",
        "    #       size         count      type   redop    root     time   algbw   busbw #wrong     time   "
        "algbw   busbw #wrong",
        "         2097152        524288     float     sum      -1    29.63   70.77   70.77      0    29.34   "
        "71.49   71.49      0",
        "    # Avg bus bandwidth    : 448.2 ",
    ])
    assert [c.size_bytes for c in r.collectives] == [1048576, 1048576, 2097152, 2097152]
    assert [m.value for m in r.metrics if m.name == "avg_busbw_gbs"] == [448.2]


def test_rows_after_the_footer_are_not_part_of_the_table():
    r = parse_lines(formats=["nccl_tests"], lines=CLASSIC + ["           8             2     float     sum      -1    15.78    0.00"
                                    "    0.00       0    13.87    0.00    0.00       0"])
    assert len(r.collectives) == 4


def test_wrong_elements_and_failed_checks_warn():
    r = parse_lines(formats=["nccl_tests"], lines=CLASSIC[5:7] + [
        "  4096  1024  float  sum  -1  24.73  0.17  0.17  12  16.41  0.25"
        "    0.25       0",
        "# Out of bounds values : 12 FAILED",
        "# Avg bus bandwidth    : 0.2 FAILED",
    ])
    assert r.collectives[0].wrong == 12
    assert [w.line for w in r.warnings] == [3, 4, 5]


def test_unrelated_numeric_lines_are_not_rows():
    r = parse_lines(formats=["nccl_tests"], lines=[
        "1 2 3 4 5 6 7 8 9",
        "2026 11 29 nothing here",
        "10-4-3-3:97095:97196 [0] NCCL INFO Connected all rings",
        "# just a comment with busbw in it",
    ])
    assert r.collectives == [] and r.formats == []


def test_recorded_all_reduce_run(golden):
    with open(log_path("nccl-tests_all_reduce_default.log"), "rb") as f:
        result = parse_stream(f)
    parsed = summarize(result)
    rows = parsed["collectives"]
    assert len(rows) == 26 * 2
    assert {c["op"] for c in rows} == {"all_reduce"}
    largest = [c for c in rows if c["size_bytes"] == 268435456]
    assert [(c["busbw_gbs"], c["time_us"], c["in_place"]) for c in largest] == [
        (299.73, 895.59, False), (300.39, 893.63, True),
    ]
    assert [m.value for m in result.metrics if m.name == "avg_busbw_gbs"] == [68.7056]
    assert result.settings["nccl_tests.version"].value == "2.19.6"
    assert result.settings["nccl_tests.ngpus"].value == 2
    assert result.settings["nccl_tests.gpu"].value == "NVIDIA H200"
    assert parsed["nccl"]["version"] == "2.28.9"
    assert parsed["formats"] == ["nccl_tests", "nccl_debug"]
    golden("nccl-tests_all_reduce_default", parsed)


def test_public_16_rank_sample():
    with open(public_sample("nccl_tests_all_reduce_h100_16rank_k8s_mpi.txt"), "rb") as f:
        r = parse_stream(f)
    assert len(r.collectives) == 5 * 2
    assert (r.collectives[0].time_us, r.collectives[0].busbw_gbs) == (5202.3, 193.5)
    assert (r.collectives[2].time_us, r.collectives[2].busbw_gbs) == (10314.0, 195.2)
    assert [m.value for m in r.metrics if m.name == "avg_busbw_gbs"] == [194.675]
    assert r.settings["nccl_tests.ranks"].value == 16


def test_public_interleaved_destroy_sample_without_its_header():
    with open(public_sample("nccl_tests_efa_mpi_interleaved_destroy.txt"), "rb") as f:
        r = parse_stream(f)
    assert len(r.collectives) == 5 * 2
    assert r.collectives[-1].size_bytes == 1073741824 and r.collectives[-1].busbw_gbs == 3.12
    assert [m.value for m in r.metrics if m.name == "avg_busbw_gbs"] == [1.15327]


def test_public_compact_header_sample():
    with open(public_sample("nccl_tests_h200nvl_8gpu_compact_header.txt"), "rb") as f:
        r = parse_stream(f)
    assert sides(r) == [(34359738368, 875713.0, 39.24, 68.66, 0, False)]
    assert r.collectives[0].op == "all_reduce"
    assert [m.value for m in r.metrics if m.name == "avg_busbw_gbs"] == [68.6248]


# A table named only at its end: no `starting` line, no command line (FORMATS §5, 2.18+ footer).
LATE = [CLASSIC[0], *CLASSIC[2:8], *[CLASSIC[8]] * 6, *CLASSIC[9:]]


@pytest.mark.parametrize("engine", ["lines", "native"])
def test_rows_named_only_by_the_concluding_line_reach_a_sink_with_their_op(engine, monkeypatch):
    monkeypatch.setattr(parsers, "SPILL_AT", 1)
    monkeypatch.setattr(parsers, "SPILL_EVERY", 1)
    stored = []  # the ops as a store would have written them, when the sink took the rows

    def sink(r):
        stored.extend(c.op for c in r.take_rows()[2])

    result = parse_stream(io.BytesIO(("\n".join(LATE) + "\n").encode()), sink=sink, engine=engine)
    assert stored == ["all_reduce"] * 14 and result.collectives == []


def test_a_table_never_named_goes_to_the_result_when_the_next_table_starts():
    r = parse_lines(formats=["nccl_tests"], lines=CLASSIC[4:9] + CLASSIC[:9])
    assert [c.op for c in r.collectives] == ["unknown"] * 4 + ["all_reduce"] * 4
    assert [c.line for c in r.collectives] == [4, 4, 5, 5, 13, 13, 14, 14]


def test_held_rows_keep_the_process_of_their_own_line():
    tagged = ["[1,3]<stdout>:" + line for line in LATE]
    r = parse_lines(tagged)
    assert {(c.op, c.process) for c in r.collectives} == {("all_reduce", "mpi 1,3")}


@pytest.mark.parametrize("engine", ["lines", "native"])
def test_rows_held_past_the_tagger_window_are_released_with_their_process(engine, monkeypatch):
    # A table longer than HOLD_LINES with every line tagged: its first rows leave before the
    # name comes, each stamped with the process of its own line (the Tagger keeps RECENT tags).
    monkeypatch.setattr(nccl_tests, "HOLD_LINES", 3)
    monkeypatch.setattr(processes, "RECENT", 6)
    monkeypatch.setattr(parsers, "SPILL_AT", 1)
    monkeypatch.setattr(parsers, "SPILL_EVERY", 1)
    tagged = "\n".join(f"[1,{n % 3}]<stdout>:{line}" for n, line in enumerate(LATE, 1)) + "\n"
    stored = []  # what a store would have written: the rows as the sink took them

    def sink(r):
        stored.extend((c.line, c.process, c.op) for c in r.take_rows()[2])

    parse_stream(io.BytesIO(tagged.encode()), sink=sink, engine=engine)
    assert [line for line, _, _ in stored] == [n for n in range(7, 14) for _ in (0, 1)]
    assert [process for _, process, _ in stored] == [f"mpi 1,{line % 3}" for line, _, _ in stored]
    # Lines 7-9 left at line 10, 10-12 at line 13 and 13 at line 16, before the name on line 17
    # (the native engine offers rows to a sink at a chunk's end: the name has come by then).
    assert [op for _, _, op in stored] == ["unknown" if engine == "lines" else "all_reduce"] * 14


def _footers(result) -> list[tuple[str, float, int, int]]:
    return [(m.name, m.value, m.window, m.line) for m in result.metrics]


def _parse(path) -> object:
    with open(path, "rb") as f:
        return parse_stream(f)


def test_each_footer_ends_a_test_and_windows_its_values_by_the_tests_number():
    # Two hosts' runs pasted one after another, each closed by its own footer.
    r = _parse(public_sample("../nccl/nccl_tests_destroy_between_footers_issue182.txt"))
    assert _footers(r) == [
        ("out_of_bounds_values", 0.0, 1, 6), ("avg_busbw_gbs", 1.7535, 1, 7),
        ("out_of_bounds_values", 0.0, 2, 13), ("avg_busbw_gbs", 1.6796, 2, 14),
    ]
    assert [c.line for c in r.collectives] == [1, 1, 2, 2, 3, 3, 10, 10]  # rows keep their lines
    panels = summarize(r)["nccl_tests"]
    assert [(p["test"], p["rows"], p["peak_busbw_gbs"], p["avg_busbw_gbs"]) for p in panels] == [
        (1, 6, 4.86, 1.7535), (2, 2, 4.52, 1.6796)]


def test_two_real_runs_pasted_one_after_another_are_two_tests_with_their_own_figures():
    # GB200 NVL72 (5 rows, two sides, avg 745.53) then an H200 NVL table (1 row, one side, avg
    # 68.6248, no out-of-bounds line), as one file.
    first = public_sample("../nccl/nccl_tests_allreduce_gb200_nvl72_coreweave_pr43.txt").read_bytes()
    second = public_sample("nccl_tests_h200nvl_8gpu_compact_header.txt").read_bytes()
    r = parse_stream(io.BytesIO(first + second))
    assert [(name, value, window) for name, value, window, _ in _footers(r)] == [
        ("out_of_bounds_values", 0.0, 1), ("avg_busbw_gbs", 745.53, 1), ("avg_busbw_gbs", 68.6248, 2),
    ]
    panels = summarize(r)["nccl_tests"]
    assert [(p["test"], p["tests"], p["rows"], p["peak_busbw_gbs"], p["avg_busbw_gbs"]) for p in panels] == [
        (1, 2, 10, 846.82, 745.53), (2, 2, 1, 68.66, 68.6248)]


def test_a_single_test_stays_one_test_and_rows_after_its_footer_open_another():
    one = _parse(public_sample("../nccl/nccl_tests_allreduce_gb200_nvl72_coreweave_pr43.txt"))
    assert {m.window for m in one.metrics} == {1}
    assert [(p["test"], p["rows"]) for p in summarize(one)["nccl_tests"]] == [(1, 10)]
    # A second run cut before its footer (its table header and two rows): a test of its own, no average.
    lines = public_sample("../nccl/nccl_tests_allreduce_gb200_nvl72_coreweave_pr43.txt").read_text().splitlines()
    r = parse_stream(io.BytesIO(("\n".join(lines + lines[2:7]) + "\n").encode()))
    assert [(p["test"], p["rows"], p["avg_busbw_gbs"]) for p in summarize(r)["nccl_tests"]] == [
        (1, 10, 745.53), (2, 4, None)]


@pytest.mark.parametrize("engine", ["lines", "native"])
def test_device_rows_of_builds_without_a_group_column_give_the_gpu_and_the_ranks(engine):
    # nccl-tests of the NCCL 2.9 era print `#   Rank  0 Pid  14926 on v100-gpu-1 device  0 [0x00] ...`
    # (lines 5 and 6 of the excerpt): two ranks, on Tesla V100s.
    with open(public_sample("../nccl/nccl_tests_broadcast_v2.9.6_prompt_mpirun_issue82.log"), "rb") as f:
        r = parse_stream(f, engine=engine)
    gpu, ranks = r.settings["nccl_tests.gpu"], r.settings["nccl_tests.ranks"]
    assert (gpu.value, gpu.line) == ("Tesla V100-PCIE-16GB", 5)
    assert (ranks.value, ranks.line) == (2, 6)


def test_a_header_seen_before_opens_its_table_with_the_same_columns():
    header = CLASSIC[5]
    r = parse_lines(formats=["nccl_tests"], lines=[*CLASSIC[:-1], header, CLASSIC[8], "# Avg bus bandwidth : 2.5"])
    assert sides(r)[-2:] == sides(r)[2:4]
    assert [m.window for m in r.metrics] == [1, 1, 2]


def test_headers_kept_are_bounded():
    parser = nccl_tests.Parser(parsers.ParseResult())
    for k in range(nccl_tests.HEADERS_KEPT + 10):
        parser.feed(k + 1, "#  size  count  type  redop  root  time  algbw  busbw  #wrong" + " " * k)
    assert len(parser.headers) == nccl_tests.HEADERS_KEPT and parser.tables == nccl_tests.HEADERS_KEPT + 10


def _real_perf_lines() -> list[str]:
    from pathlib import Path

    root = Path(__file__).parent
    return [line for path in sorted((root / "corpus").rglob("*")) + sorted((root.parent / "samples").rglob("*"))
            if path.is_file() and path.suffix in (".log", ".txt", ".sh")
            for line in path.read_text("utf-8", "replace").split("\n") if "_perf" in line]


def test_the_binary_a_real_line_names_is_the_patterns_match():
    lines = _real_perf_lines()
    assert len(lines) >= 15
    for line in lines:
        m = nccl_tests._BINARY.search(line)
        assert nccl_tests.binary(line) == (m.group(1) if m else None), line


@given(st.lists(st.sampled_from(["_perf", "_mpi", "all_reduce", "a", "Z", "9", "_", "/", " ", "\t", "\u2003", "\x1c",
                                 "-", ".", "x", "é", "bin/", "_perf_mpi", "__perf"]), max_size=14))
def test_the_binary_found_from_each_perf_is_the_patterns_leftmost_match(parts):
    line = "".join(parts)
    m = nccl_tests._BINARY.search(line)
    assert nccl_tests.binary(line) == (m.group(1) if m else None)
