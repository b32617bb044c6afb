"""The native scanner closes serving bench result blocks itself and writes their records as the owner's
_bench_emit does (_scan_bench.h), and reads the client's settings lines, the `#` titles and progress bars
of blocks copied as comments: on real blocks (tests/corpus, the shared public samples) repeated, mixed,
damaged, cut into chunks, under MPI tags and past the list's cap, native records, settings and
processes equal the line engine's, and past the first blocks no closing line is Python's."""

import io
import random
from unittest import mock

import pytest

from ingest.parsers import PARSERS, native, parse_stream, processes, records, serving
from ingest.parsers.records import ParseResult
from tests.test_parsers_native import _same
from tests.test_scan_vllm import (
    BLOCK_FILES,
    CORPUS,
    DAMAGED,
    REAL,
    VLLM,
    VLLM_DAMAGED,
    _python_lines,
    mixed_log,
    same_mixed,
)

COMMENTED = CORPUS / "serving" / "vllm_bench_serve_two_runs_commented_vllm_fork.sh"
VLLM_BLOCK = CORPUS / "shared" / "vllm_bench_serve_specdecode_eagle3.txt"
SGLANG_BLOCK = CORPUS / "shared" / "sglang_bench_serving_eagle_dsv3_cookbook.txt"


def _fed(data: bytes) -> tuple[list[str], list[str]]:
    """The lines Python fed (feed, feed_stopped) and those it closed blocks at (bench_close)."""
    fed: list[str] = []
    closed: list[str] = []
    patches = []
    for name in ("feed", "feed_stopped"):
        orig = getattr(native._Parse, name)

        def wrap(self, line, lineno, mask, _orig=orig):
            fed.append(line)
            return _orig(self, line, lineno, mask)
        patches.append(mock.patch.object(native._Parse, name, wrap))
    orig_close = native._Parse.bench_close

    def close(self, lineno, line):
        closed.append(line)
        return orig_close(self, lineno, line)
    patches.append(mock.patch.object(native._Parse, "bench_close", close))
    for p in patches:
        p.start()
    try:
        parse_stream(io.BytesIO(data))
    finally:
        for p in patches:
            p.stop()
    return fed, closed


def _copies(path, n: int) -> bytes:
    return ((path.read_text().rstrip("\n") + "\n") * n).encode()


@pytest.mark.parametrize("path", [VLLM_BLOCK, SGLANG_BLOCK, COMMENTED], ids=lambda p: p.name)
def test_blocks_past_the_first_ones_are_closed_in_the_scanner(path):
    """Footers and the titles that close blocks: the first copy's are Python's (the format, the list of
    blocks, the `bench` process are made there), none of the later copies'."""
    data = _copies(path, 30)
    _fed_lines, closed = _fed(data)
    closing = sum(1 for line in data.decode().splitlines() if line.lstrip("# ").startswith("=" * 12))
    assert closing >= 30
    assert len(closed) <= 4, closed
    _same(data, 1 << 12, 1 << 12)
    _same(data, vector=False)


def test_a_blocks_records_are_written_in_the_scanner_as_the_owner_writes_them():
    """vLLM and SGLang blocks by turns (each names its tool), then blocks of neither's labels (the log's engine
    decides), cut after their first row or section, footers lost (the next title closes): lines' records."""
    blocks = [VLLM_BLOCK.read_text().rstrip("\n"), SGLANG_BLOCK.read_text().rstrip("\n")]
    rows = [line for line in blocks[0].splitlines() if ":" in line and "Position" not in line]
    neutral = "\n".join(["============ Serving Benchmark Result ============", *[
        r for r in rows if r.split(":")[0].strip() in ("Benchmark duration (s)", "Total input tokens",
                                                      "Output token throughput (tok/s)", "Mean TTFT (ms)")]])
    rng = random.Random(5)
    parts = []
    for i in range(60):
        text = rng.choice(blocks + [neutral])
        if i % 7 == 3:  # the footer lost
            text = text.rsplit("\n", 1)[0]
        parts.append(text)
    data = ("\n".join(parts) + "\n").encode()
    _same(data)
    _same(data, 1 << 10, 1 << 10)
    _same(b"INFO 05-06 vLLM API server version 0.9.1\n" + data, vector=False)


@pytest.mark.parametrize("kept", [0, 1, 3, 1000])
def test_blocks_past_the_lists_cap_are_counted_as_add_block_counts_them(kept):
    """Blocks of two configurations by turns: past serving.BLOCKS_KEPT they are counted (OMITTED_KEY), in
    the scanner once the count is there; blocks of one configuration are all listed (add_block called)."""
    two = (VLLM_BLOCK.read_text().rstrip("\n") + "\n" + (CORPUS / "serving" / "vllm_bench_serve_mtp_rps_issue43295.txt")
           .read_text().rstrip("\n") + "\n")
    with mock.patch.object(serving, "BLOCKS_KEPT", kept):
        for data in ((two * 12).encode(), _copies(VLLM_BLOCK, 12)):
            _same(data, 1 << 12, 1 << 12)
        result = parse_stream(io.BytesIO((two * 12).encode()))
    blocks = result.settings[serving.BLOCKS_KEY].value
    omitted = result.settings.get(serving.OMITTED_KEY)
    assert len(blocks) + (omitted.value["count"] if omitted else 0) == 24
    assert len(blocks) == (24 if kept >= 24 else max(kept, 1))


def test_blocks_under_mpi_tags_keep_their_process():
    """Rows of an MPI rank's (`[1,0]<stdout>:`) under an untagged title and footer: the Tagger tagged their
    lines, their metrics are the rank's, not "bench": such a block is closed in Python."""
    block = VLLM_BLOCK.read_text().rstrip("\n").splitlines()
    lines = []
    for i in range(8):
        lines += [f"[1,{i % 2}]<stdout>:{line}" if i % 3 and ":" in line else line for line in block]
    data = ("\n".join(lines) + "\n").encode()
    _same(data)
    _same(data, 1 << 10, 1 << 10)


def test_client_lines_progress_bars_and_marked_titles_are_read_in_the_scanner():
    """A block copied as comments, repeated: past the first copy its `# Traffic request rate`, `# Maximum
    request concurrency`, `# 100%|█████|` and `# ===== Serving Benchmark Result` lines are not Python's."""
    data = _copies(COMMENTED, 20)
    fed, _closed = _fed(data)
    own = len(COMMENTED.read_text().splitlines())
    assert not [line for line in fed[own:] if "request" in line or "100%" in line or "Benchmark Result" in line], \
        fed[own:own + 10]
    _same(data, 1 << 12, 1 << 12)
    _same(data.replace(b"\n", b"\r\n"))


CLIENT = [line for line in REAL + COMMENTED.read_text().splitlines()
          if "request rate" in line or "concurrency" in line or "100%|" in line or "Burstiness" in line]
# Client lines and comments as copies and tools print them, and as damage leaves them (one a line; a line of
# the log is replaced by one of them).
CLIENT_VARIANTS = """\
# Traffic request rate: inf
# Traffic request rate:inf
#Traffic request rate: 4
#  Traffic request rate: 4
  # Traffic request rate: 2.5
> Traffic request rate: 8
Traffic request rate: 16.0
Traffic request rate:\x20\x20
Traffic request rate: inf x
# Traffic request rate: 1e3
# Traffic request rate: -inf
# Traffic request rate: nan
# Traffic request rate: NaN%
# Traffic request rate: None
# Traffic request rate: 999999999999999999999999999999
# Traffic request rate: 12.50000000001
# Maximum request concurrency: 32
# Max request concurrency: not set
# Max request concurrency: not
Max reqeuest concurrency: 4
# Maximum request concurrency: 32 Rank
# Maximum request concurrency: 32 busbw
# Maximum request concurrency: Pid 3
# Traffic request rate: throughput
(APIServer pid=1) Traffic request rate: inf
[2025-01-01 TP0] Traffic request rate: inf
NCCL_X=1 Traffic request rate: inf
Traffic request rate: sglang
# Namespace(model='m', request_rate=inf, max_concurrency=4)
# 100%|██████████| 32/32 [02:30<00:00,  4.71s/it]
#100%|███| 1/1
# 100%|███| 32/32 throughput 5 tok/s
# 100%|███| Rank 0 Pid 3
# 100%|███| nThread 1
# 50%|█████ NCCL INFO x
  # 100%|██| 1/1
# ─── Méan TTFT (ms): 3
# 100%|███| Serving Benchmark Result
# ============ Serving Benchmark Result ============
#============ Serving Benchmark Result
#\t=== Serving Benchmark Result ===
# === Serving Benchmark Result === Rank 1
# ---------------Time to First Token----------------
# ------
# ==================================================
#  Rank  0 Group  0 Pid  12 on host device  0 [0x1b] NVIDIA H100
#       size         count      type   redop    root     time   algbw   busbw #wrong
""".splitlines() + [""]
CLIENT_DAMAGED = [lambda s, v=v: v for v in CLIENT_VARIANTS]


@pytest.mark.parametrize("seed", range(40))
def test_client_lines_and_comments_mixed_and_damaged_give_the_records_lines_give(seed):
    same_mixed(mixed_log(seed, [REAL, CLIENT, COMMENTED.read_text().splitlines()], CLIENT_DAMAGED, 0.2, (1, 10), 40,
                         (b"\n", b"", b"\r\n")))


def test_each_real_file_repeated_with_its_client_lines_gives_the_records_lines_give():
    for path in BLOCK_FILES:
        data = path.read_bytes()
        _same(b"# Traffic request rate: 4\n# Maximum request concurrency: 8\n" + data * 3, 1 << 12, 1 << 12)


def test_the_scanners_bench_emit_refuses_what_it_cannot_hold():
    result = ParseResult()
    formats = [p(result) for p in PARSERS.values()]
    tagger = processes.Tagger(result)
    scan = native.scanner([tagger, *formats])
    sg, vl = formats[1], formats[2]
    ok = (sg, vl, result, tagger.recent, records.Setting, serving.add_block, serving.BLOCKS_KEY, serving.OMITTED_KEY,
          serving.BLOCKS_KEPT, processes.BENCH_TAG, processes.RECENT)
    for i, bad in ((3, []), (4, object()), (5, "not callable"), (8, -1), (10, -5), (6, 5)):
        with pytest.raises(TypeError):
            scan.bench_emit(*ok[:i], bad, *ok[i + 1:])
    with pytest.raises(TypeError):
        scan.bench_emit(*ok[:5])
    scan.bench_emit(*ok)
    scan.bench_emit(*ok)  # armed again: the first let go
    scan.bench_emit(None)
    scan.bench_emit(None)


def test_blocks_closed_in_the_scanner_past_the_lists_cap_make_no_rows():
    """Rows the scanner reads are kept as plain values and become serving.Rows only where Python may look at
    them: past the cap (blocks counted, not listed) a block closed in the scanner makes none; the first copies'
    (listed) and the last one's (open at the end, closed by finish()) do."""
    two = (VLLM_BLOCK.read_text().rstrip("\n") + "\n" + (CORPUS / "serving" / "vllm_bench_serve_mtp_rps_issue43295.txt")
           .read_text().rstrip("\n") + "\n")
    made = []

    class Row(serving.Row):
        __slots__ = ()

        def __init__(self, *args):
            made.append(args[0])
            super().__init__(*args)

    copies = 40
    with mock.patch.object(serving, "BLOCKS_KEPT", 2), mock.patch.object(serving, "Row", Row):
        result = parse_stream(io.BytesIO((two * copies).encode()))
    assert result.settings[serving.OMITTED_KEY].value["count"] >= 2 * copies - 4
    size = len(two.splitlines())
    assert made and {(line - 1) // size for line in made} <= {0, 1, copies - 1}, made


ARGS = [line for line in VLLM if "non-default args" in line]
LLAMA = [line for path in sorted((CORPUS / "serving").glob("llamacpp_*.log")) for line in path.read_text().splitlines()]
TITLES = [i for i, line in enumerate(REAL) if serving._TITLE in line]


def _closed_by_others(seed: int) -> bytes:
    """Real blocks (from a title, whole or cut), each followed by a run of real vLLM or llama.cpp log lines
    (an args line most often), some of either damaged: the lines that close blocks before their readers."""
    rng = random.Random(seed)
    lines: list[str] = []
    for _ in range(rng.randint(2, 12)):
        start = rng.choice(TITLES)
        for line in REAL[start:start + rng.randint(2, 50)]:
            lines.append(rng.choice(DAMAGED)(line) if rng.random() < 0.05 else line)
            if rng.random() < 0.05 and ":" in line:  # a row the scanner leaves to Python: the block goes on
                lines.append(f"{line.split(':')[0]}:   {rng.random() * 100:.2e}")
        pool = rng.choice([ARGS, ARGS, VLLM, LLAMA])
        at = rng.randrange(len(pool))
        for line in pool[at:at + rng.randint(1, 4)]:
            lines.append(rng.choice(VLLM_DAMAGED + DAMAGED)(line) if rng.random() < 0.2 else line)
    return "\n".join(lines).encode() + rng.choice([b"\n", b""])


def test_the_corpus_holds_args_and_llamacpp_lines_to_close_blocks_with():
    assert ARGS and len(LLAMA) > 20 and len(TITLES) >= 12


@pytest.mark.parametrize("seed", range(60))
def test_blocks_closed_by_other_readers_lines_give_the_records_lines_give(seed):
    same_mixed(_closed_by_others(seed))


def test_an_args_line_that_closes_a_block_is_read_in_the_scanner():
    """A block followed by vLLM's `non-default args` line, repeated (as a sweep's log pastes its runs): past
    the first copies the args line closes the block in the scanner and is read there too."""
    block = VLLM_BLOCK.read_text().rstrip("\n") + "\n" + ARGS[0] + "\n"
    data = (block * 30).encode()
    fed = _python_lines(data)
    assert sum(1 for line in fed if "non-default args" in line) <= 2, [line for line in fed if "args" in line]
    _same(data, 1 << 12, 1 << 12)
    _same(data, vector=False)



def test_a_blocks_tool_is_named_as_note_row_names_it_first_row_or_not():
    """The scanner reads Block.note_row itself (bench_note_row, _row_tool's answer kept per label) and makes a
    title's blocks (bench_open_title): `Successful requests` names vLLM only as a titled block's first row
    (after a neutral row, or read again once kept rows wait, the log's engine decides), a `Position` row
    names vLLM wherever it is: blocks of each shape by turns, marked copies among them, give lines' records."""
    title = "============ Serving Benchmark Result ============"
    footer = "=================================================="
    shapes = [
        [title, "Successful requests:                     10", "Benchmark duration (s):                  3.5", footer],
        [title, "Benchmark duration (s):                  3.5", "Successful requests:                     10",
         "Mean TTFT (ms):                          12.5", footer],
        [title, "Mean TTFT (ms):                          12.5", "Total input tokens:                      100",
         "Successful requests:                     10", footer],
        [title, "Mean TTFT (ms):                          12.5", "Per-position acceptance (%):",
         "Position 0:                              80.5", footer],
        ["# " + title, "# Successful requests:                     10", "# Mean TTFT (ms):                 1.5",
         "# " + footer],
    ]
    rng = random.Random(11)
    for kinds in (shapes[:3], shapes):  # (a `Position` row sets the engine: vLLM's then decides the rest)
        parts = ["\n".join(rng.choice(kinds)) for _ in range(80)]
        data = ("\n".join(parts) + "\n").encode()
        _same(data)
        _same(data, 1 << 10, 1 << 10)
        _same(b"INFO 05-06 vLLM API server version 0.9.1\n" + data, vector=False)


def test_blocks_of_more_labels_than_the_scanner_keeps_give_the_records_lines_give():
    """Blocks of 400 labels each (the scanner keeps 256 labels' keys, by open addressing: past them labels
    evict each other): their rows are read in the scanner as lines read them."""
    title = "============ Serving Benchmark Result ============"
    rows = [f"{f'Mean L{i} value (ms):':<40} {i}.5" for i in range(400)]
    block = "\n".join([title, "Successful requests:                     16", *rows, "=" * 50])
    data = ((block + "\n") * 6).encode()
    fed, _closed = _fed(data)
    assert len([line for line in fed if line.startswith("Mean L")]) < 3 * 400
    _same(data, 1 << 12, 1 << 12)
    _same(data, vector=False)
