"""The native scanner reads serving bench result blocks (_scan_vllm.h) exactly as the readers do:
the blocks are real ones (tests/corpus, the shared public samples), whole, cut, repeated, damaged,
copied as comments, and the native engine's records, settings and processes equal the line
engine's; the scanner does read a block's rows itself once its tool is known."""

import io
import math
import random
import re
import struct
from unittest import mock

import pytest

from ingest.parsers import context, native, parse_stream, serving
from ingest.parsers._scan import round6
from tests.samples import PROJECT_ROOT
from tests.test_parsers_native import _same

CORPUS = PROJECT_ROOT / "tests" / "corpus"
BLOCK_FILES = [
    CORPUS / "serving" / name for name in (
        "sglang_bench_serving_dsv3_v0.4.1_pr2643.txt", "sglang_bench_serving_rate_sweep_dlora.md",
        "vllm_bench_serve_baseline_block_pr35714.txt", "vllm_bench_serve_hf_dataset_pr18566.txt",
        "vllm_bench_serve_mtp_rps_issue43295.txt", "vllm_bench_serve_rps100_cut_pr31739.txt",
        "vllm_bench_serve_two_runs_commented_vllm_fork.sh")
] + [
    CORPUS / "shared" / name for name in (
        "sglang_bench_serving_2024_issue2097_partial.txt", "sglang_bench_serving_eagle_dsv3_cookbook.txt",
        "sglang_bench_serving_nextn_dsv3_early2025_doc.txt", "sglang_bench_serving_ngram_pr13376_partial.txt",
        "vllm_bench_serve_specdecode_eagle3.txt", "vllm_bench_serve_overflow_columns.txt")
]


def _real_lines() -> list[str]:
    lines = []
    for path in BLOCK_FILES:
        lines += path.read_text(encoding="utf-8", errors="replace").splitlines()
    return lines


REAL = _real_lines()

# What a row or a section can look like when a copy was damaged or a tool printed it oddly.
DAMAGED = [
    lambda s: s.replace(":", ":\t", 1),  # a tab after the colon
    lambda s: "\t" + s,
    lambda s: s.replace(":", " :", 1),
    lambda s: s[: len(s) // 2],  # cut
    lambda s: s + " ms",  # a second token: no row, the block ends
    lambda s: s.rstrip() + "9" * 30,  # more digits than an int holds
    lambda s: s.rstrip() + "e5",
    lambda s: s.rstrip() + ".",
    lambda s: s.replace("Mean", "Méan"),  # non-ASCII
    lambda s: s.split(":")[0] + ":   nan",
    lambda s: s.split(":")[0] + ":   not set",
    lambda s: s.split(":")[0] + ":",  # valueless: a subsection
    lambda s: s.split(":")[0] + "=x:   1.0",  # `=`: launch_env's to judge
    lambda s: "  Position 3:    12.5",
    lambda s: "Position 0:    12.5",
    lambda s: s.replace("-", "=", 3),
    lambda s: "# " + s,
    lambda s: "#" + s,
    lambda s: "> " + s,
    lambda s: "(APIServer pid=7) " + s,
    lambda s: "# Rank  0 Group  0 " + s,  # an nccl-tests word on a `#` line
    lambda s: "NCCL_PROTO=LL " + s,
    lambda s: s.replace("(", "\x1c("),  # a separator Python's \s takes
    lambda s: "---Speculative-Decoding---",
    lambda s: "---x--y---",
    lambda s: "------",
    lambda s: "-----Time per Output Token (excl. 1st token)-----  ",
    lambda s: "",
    lambda s: "   ",
    # text values (parse_value keeps a word, drops nan/none), `not set`, and `sglang` as a value or a command
    lambda s: s.split(":")[0] + ":   sglang",
    lambda s: s.split(":")[0] + ":   sglang serve",
    lambda s: s.split(":")[0] + ":   sglang.launch_server",
    lambda s: "sglang " + s.split(":")[0] + ":   sglang",
    lambda s: s.split(":")[0] + ":   INF",
    lambda s: s.split(":")[0] + ":   Infinity",
    lambda s: s.split(":")[0] + ":   NaN%",
    lambda s: s.split(":")[0] + ":   N/A",
    lambda s: s.split(":")[0] + ":   None",
    lambda s: s.split(":")[0] + ":   not  set",
    lambda s: s.split(":")[0] + ":   not set  ",
    lambda s: s.split(":")[0] + ":   not settled",
    lambda s: s.split(":")[0] + ":   vllm\x01",
    lambda s: "Traffic request rate:   " + s.split(":")[-1].strip(),
    lambda s: "Max request concurrency:   not set",
    lambda s: "Backend:   vllm",
    lambda s: "  POSITION 2:    40.5",
    lambda s: "Per-position acceptance (%):",
    lambda s: "Position:    3",
    lambda s: "sglang serve:",
    lambda s: "Sglang Traffic request rate:   ",
    lambda s: "Per-position acceptance (%):   \t",
    lambda s: "---------------Speculative Decoding---------------",
    # titles as copies and tools print them: marked, glued, tagged, with another reader's words on them
    lambda s: "============ Serving Benchmark Result ============",
    lambda s: ">============ Serving Benchmark Result ============",
    lambda s: ">\t============ Serving Benchmark Result ============",
    lambda s: "> ============ Serving Benchmark Result ============  ",
    lambda s: "# ============ Serving Benchmark Result ============",
    lambda s: ">> ============ Serving Benchmark Result ============",
    lambda s: "  ==== Serving Benchmark Result ====",
    lambda s: "Serving Benchmark Result",
    lambda s: "--- Serving Benchmark Result ---",
    lambda s: "sglang ============ Serving Benchmark Result ============",
    lambda s: "==== Serving Benchmark Result (throughput) ====",
    lambda s: "(APIServer pid=7) ============ Serving Benchmark Result ============",
    lambda s: "[2025-01-01 TP0] ============ Serving Benchmark Result ============",
    lambda s: "NCCL_PROTO=LL ============ Serving Benchmark Result ============",
    lambda s: "==================================================",
]


def _blocks_log(seed: int) -> bytes:
    """Runs of real block lines (each from a file's start or from a title), some damaged."""
    rng = random.Random(seed)
    titles = [i for i, line in enumerate(REAL) if serving._TITLE in line]
    lines: list[str] = []
    for _ in range(rng.randint(1, 8)):
        start = rng.choice(titles) if rng.random() < 0.8 else rng.randrange(len(REAL))
        for line in REAL[start:start + rng.randint(1, 60)]:
            if rng.random() < 0.08:
                line = rng.choice(DAMAGED)(line)
            lines.append(line)
    return "\n".join(lines).encode() + rng.choice([b"\n", b""])


def test_the_corpus_holds_real_blocks_of_both_tools_and_copied_ones():
    text = "\n".join(REAL)
    assert text.count(serving._TITLE) >= 12
    assert "Backend:" in text and "Failed requests:" in text and "# ============ Serving" in text


@pytest.mark.parametrize("seed", range(60))
def test_real_blocks_mixed_and_damaged_give_the_records_lines_give(seed):
    data = _blocks_log(seed)
    _same(data, 1 << 10, 1 << 10)
    _same(data, vector=False)


def test_each_real_file_gives_the_records_lines_give_read_whole_and_repeated():
    for path in BLOCK_FILES:
        data = path.read_bytes()
        _same(data)
        _same(data * 3, 1 << 12, 1 << 12)


def same_mixed(data: bytes) -> None:
    """native == lines on a mix, in small chunks and with the scalar line search."""
    _same(data, 1 << 10, 1 << 10)
    _same(data, vector=False)


def same_files(paths: list) -> None:
    """native == lines on each file, whole and repeated in small chunks."""
    for path in paths:
        data = path.read_bytes()
        _same(data)
        _same(data * 4, 1 << 12, 1 << 12)


def _python_lines(data: bytes) -> list[str]:
    fed: list[str] = []
    for name in ("feed", "feed_stopped"):
        orig = getattr(native._Parse, name)

        def wrap(self, line, lineno, mask, _orig=orig):
            fed.append(line)
            return _orig(self, line, lineno, mask)
        mock.patch.object(native._Parse, name, wrap).start()
    try:
        parse_stream(io.BytesIO(data))
    finally:
        mock.patch.stopall()
    return fed


def test_the_scanner_reads_the_rows_and_sections_of_a_block_whose_tool_is_known():
    """A vLLM block repeated: Python reads its title and its first row (which names the tool), the
    scanner its 20-odd rows and sections."""
    block = (CORPUS / "serving" / "vllm_bench_serve_mtp_rps_issue43295.txt").read_text()
    assert block.count(serving._TITLE) == 1
    data = (block.rstrip("\n") + "\n") * 40
    fed = _python_lines(data.encode())
    rows = sum(1 for line in data.splitlines() if ":" in line)
    assert rows >= 40 * 20
    # the first copy is Python's (serving.KEYS learns its labels); of each later one, the title
    # and the first row, which names the tool
    assert len(fed) <= len(block.splitlines()) + 2 * 39, fed[-10:]
    _same(data.encode(), 1 << 12, 1 << 12)


@pytest.mark.parametrize("name", ["serving/sglang_bench_serving_dsv3_v0.4.1_pr2643.txt",
                                  "shared/vllm_bench_serve_specdecode_eagle3.txt"])
def test_the_scanner_reads_a_blocks_first_row_text_values_and_positions(name):
    """A block repeated: past the first copy, Python reads only the title and the footer; the first
    row (which names the tool, called from C), text values (`Backend: sglang`, `inf`, `not set`), the
    valueless `Per-position acceptance (%):` row and the `Position i` rows under it are the scanner's."""
    block = (CORPUS / name).read_text()
    assert block.count(serving._TITLE) == 1
    data = (block.rstrip("\n") + "\n") * 30
    fed = _python_lines(data.encode())
    own = len(block.splitlines())
    assert len(fed) <= own + 2 * 29, fed[own:own + 10]
    assert not [line for line in fed[own:] if "sglang" in line or "not set" in line or "osition" in line]
    _same(data.encode(), 1 << 12, 1 << 12)


@pytest.mark.parametrize("name", ["shared/vllm_bench_serve_specdecode_eagle3.txt",
                                  "shared/sglang_bench_serving_eagle_dsv3_cookbook.txt"])
def test_titles_and_footers_of_repeated_blocks_are_not_fed_to_python(name):
    """Blocks closed by their `=====` footer, repeated, and with the footer cut (the next title closes
    the block): past the first copy the scanner opens both readers' blocks at a title (bench_title)
    and hands a closing line to the two bench readers alone (bench_close); none is fed to Python."""
    block = (CORPUS / name).read_text()
    assert block.count(serving._TITLE) == 1 and block.rstrip().endswith("=" * 50)
    cut = block.rstrip().rsplit("\n", 1)[0]
    for text in (block.rstrip("\n") + "\n", cut + "\n"):
        data = text * 30
        fed = _python_lines(data.encode())
        own = len(text.splitlines())
        assert not [line for line in fed[own:] if serving._TITLE in line or line.startswith("=" * 50)], \
            fed[own:own + 10]
        _same(data.encode(), 1 << 12, 1 << 12)
        _same(data.encode(), vector=False)


def test_marked_and_glued_titles_open_blocks_as_the_readers_do():
    """Titles the scanner opens and titles it leaves to Python (marked, tagged, with other words),
    after blocks closed and not, give what lines give."""
    block = (CORPUS / "shared" / "vllm_bench_serve_specdecode_eagle3.txt").read_text().splitlines()
    rows = [line for line in block if ":" in line]
    titles = ["============ Serving Benchmark Result ============", "> ============ Serving Benchmark Result ====",
              ">============ Serving Benchmark Result", ">\t=== Serving Benchmark Result", "# === Serving Benchmark Result",
              "  == Serving Benchmark Result ==", "(APIServer pid=3) === Serving Benchmark Result ===",
              "=== Serving Benchmark Result === throughput", "sglang === Serving Benchmark Result ==="]
    lines = []
    for i, title in enumerate(titles * 3):
        lines.append(title)
        lines += [("> " if title.startswith(">") and i % 2 else "") + row for row in rows[:5 + i % 7]]
        if i % 3:
            lines.append("=" * 50 if i % 3 == 1 else "")
    data = ("\n".join(lines) + "\n").encode()
    _same(data)
    _same(data, 1 << 10, 1 << 10)
    _same(data, vector=False)


def test_a_section_title_with_no_block_open_opens_blocks_in_the_scanner():
    """A block whose title was cut off opens at its first section title (which may name the tool), and a
    `------------` rule opens none: read in the scanner (bench_title, open_section), as lines read them."""
    block = (CORPUS / "shared" / "vllm_bench_serve_specdecode_eagle3.txt").read_text().splitlines()
    rows = [line for line in block if ":" in line and "Position" not in line]
    cut = []
    for i, header in enumerate(["----------------End-to-end Latency----------------", "---------------Time to First Token"
                                "----------------", "------------", "---x--y---", "-----Inter-Token Latency-----  "] * 4):
        cut += ["INFO:     ::1:50382 - \"POST /v1/completions HTTP/1.1\" 200 OK", header, *rows[i % 5:i % 5 + 6]]
        cut += ["=" * 50] if i % 2 else []
    data = ("\n".join(cut) + "\n").encode()
    fed = _python_lines(data * 3)
    assert not [line for line in fed[len(cut):] if line.startswith("----------------End-to-end")], fed[:10]
    _same(data * 3)
    _same(data, 1 << 10, 1 << 10)
    _same(data, vector=False)


def test_a_copied_block_under_comment_marks_is_read_by_the_scanner_too():
    text = (CORPUS / "serving" / "vllm_bench_serve_two_runs_commented_vllm_fork.sh").read_text()
    data = (text.rstrip("\n") + "\n") * 20
    fed = _python_lines(data.encode())
    # its `# =====` footers are the scanner's (bench_close)
    assert sum(1 for line in data.splitlines() if line.startswith("# =====") and serving._TITLE not in line) >= 40
    assert not [line for line in fed if line.startswith("# =====") and serving._TITLE not in line]
    copied_rows = sum(1 for line in data.splitlines() if line.startswith("# ") and "):" in line)
    assert copied_rows >= 20 * 10
    assert sum(1 for line in fed if line.startswith("# ") and "):" in line) < copied_rows // 4
    _same(data.encode(), 1 << 12, 1 << 12)


def test_serving_keys_are_remembered_up_to_a_bound():
    with mock.patch.dict(serving.KEYS, clear=True), mock.patch.object(serving, "KEYS_MAX", 3):
        for i in range(10):
            assert serving.serving_key(f"Mean X{i} (ms)") == f"mean_x{i}_ms"
        assert len(serving.KEYS) == 3
        assert serving.serving_key("Maximum reqeuest concurrency") == "max_request_concurrency"
        assert serving.serving_key("Output token throughput (tok/s)") == "output_throughput_tok_s"


# The corpus's vLLM logs (tests/corpus/shared holds the shared public samples verbatim: a clone reads
# the same lines wherever it is).
VLLM_FILES = sorted((CORPUS / "serving").glob("vllm_*.log")) + sorted(
    p for p in (CORPUS / "shared").glob("vllm_*") if p.suffix in (".log", ".txt")) + [
    CORPUS / "nccl" / "vllm_collect_env_topo_nv12_issue19607.txt"]  # `vLLM Version :`, `vLLM Build Flags:`


def _vllm_lines() -> list[str]:
    lines = []
    for path in VLLM_FILES:
        lines += path.read_text(encoding="utf-8", errors="replace").splitlines()
    return lines


VLLM = _vllm_lines()
ENGINE = [line for line in VLLM if "Avg prompt throughput" in line]
SPEC = [line for line in VLLM if "SpecDecoding metrics:" in line or "Speculative metrics:" in line]
TAGGED = [line for line in VLLM if line.startswith("(") and " pid=" in line[:60]]

# Damage a vLLM line the scanner reads could come with: each must be read as Python reads it.
VLLM_DAMAGED = [
    lambda s: s.replace("pid=", "pid=0", 1),  # the same pid, other text: another process tag
    lambda s: s.replace(" pid=", " rank=3 pid=", 1),
    lambda s: s.replace(" pid=", " TP1 pid=", 1),
    lambda s: s.replace("APIServer", "APIServer_2", 1),
    lambda s: s.replace("APIServer", "Worker_x", 1),
    lambda s: s.replace("(", "(Mystery ", 1),
    lambda s: s + " user@host",
    lambda s: s + " NCCL_PROTO=LL",
    lambda s: s + " a=b",
    lambda s: "+ " + s,
    lambda s: s.replace("Engine 000", "Engine " + "9" * 25, 1),
    lambda s: s.replace("Engine 000", "Engine 7", 1),
    lambda s: s.replace("Engine 000: ", "Engine: ", 1),
    lambda s: s.replace("throughput: ", "throughput: 1e3", 1),
    lambda s: s.replace("throughput: ", "throughput: " + "9" * 60, 1),
    lambda s: s.replace("throughput: ", "throughput: 12345.678901234567890123", 1),  # past the fast path's digits
    lambda s: s.replace("acceptance rate: ", "acceptance rate: +0.12345678901234567891", 1),
    lambda s: s.replace("Mean acceptance length: ", "Mean acceptance length: 2.0000000000000004441", 1),
    lambda s: s.replace("generation throughput: ", "generation throughput: 0.0 tokens/s, x: ", 1),
    lambda s: s.replace(" tokens/s, Avg generation", " tokens/s,  Avg generation", 1),
    lambda s: s.replace("Running: ", "Running: -", 1),
    lambda s: s.replace("Running: ", "running :  +.5e", 1),
    lambda s: s.replace("Running: ", "Running: nan, Waiting: inf, Swapped: 1E5, Pending: ", 1),
    lambda s: s.replace("GPU KV cache usage: ", "GPU  KV cache usage:\t", 1),
    lambda s: s.rstrip(".") + "...",
    lambda s: s + ", Running: 4 reqs, Running: 5 reqs",
    lambda s: s.replace("metrics: ", "metrics:  metrics: ", 1),
    lambda s: s.replace("Mean acceptance length: ", "Mean acceptance length: nan, x: ", 1),
    lambda s: s.replace("Mean acceptance length", "mean Acceptance LENGTH", 1),
    lambda s: s.replace("Accepted: ", "Accepted tokens tokens: ", 1),
    lambda s: s.replace("Accepted: ", "Number of accepted tokens: ", 1),
    lambda s: s.replace("Drafted: ", "Drafted: 0 tokens, Drafted: ", 1),
    lambda s: s.replace("Drafted: ", "Drafted: -", 1),
    lambda s: s.replace("acceptance rate: ", "acceptance rate: 1.5e2", 1),
    lambda s: s.replace("acceptance rate: ", "acceptance rate: nan, ", 1),
    lambda s: s.replace("Per-position acceptance rate: ", "Per-position acceptance rate: nan, ", 1),
    lambda s: s.replace("Per-position acceptance rate: ", "Per-position acceptance rate: " + "0.5, " * 20, 1),
    lambda s: s.replace("Per-position acceptance rate: ", "Per-position acceptance rate: , ,", 1),
    lambda s: s.replace(", ", ",", 2),
    lambda s: s + ", Number of speculative tokens: 3",
    lambda s: s + ", System efficiency: 0.5",
    lambda s: s.replace("%", " %", 1),
    lambda s: s.replace("SpecDecoding metrics:", "Speculative metrics:", 1),
    lambda s: s.replace("metrics:", "metrics", 1),
    lambda s: s.replace("INFO", "INFØ", 1),
    lambda s: s[: len(s) * 2 // 3],
    lambda s: s + " Serving Benchmark Result",
    # vllm_line's `LLM` lines, idle intervals and sglang's `latency:` (_one_batch reads Prefill/Decode/Total)
    lambda s: s.replace("vLLM", "vLLM version", 1),
    lambda s: s.replace("vLLM", "LLM engine (v0.1) with config: model='m'", 1),
    lambda s: s.replace("generation throughput: ", "generation throughput: 0.0", 1),
    lambda s: s.replace("Drafted: ", "Drafted: 0 tokens, x: ", 1),
    lambda s: s.replace("latency:", "Decode.  latency: 0.1 s, throughput: 9 token/s", 1),
    lambda s: s.replace("latency:", "Total latency:", 1),
    lambda s: s.replace("Avg latency", "Warmup ...", 1),
    lambda s: s + " latency: 1 s",
    lambda s: "sglang " + s,
    # V0 counters (differenced), its draft length and the V0.5 `tokens tokens` typo
    lambda s: re.sub(r"(Number of draft tokens(?: tokens)?: )\d+", r"\g<1>0", s),
    lambda s: re.sub(r"(Number of accepted tokens: )\d+", r"\g<1>1", s),
    lambda s: re.sub(r"(Number of emitted tokens(?: tokens)?: )\d+", r"\g<1>99999999", s),
    lambda s: re.sub(r", Number of emitted tokens[^,]*", "", s),
    lambda s: re.sub(r"(Number of speculative tokens: )\d+", r"\g<1>0", s),
    lambda s: re.sub(r"(Number of speculative tokens: )\d+", r"\g<1>1.5", s),
    lambda s: re.sub(r"(Number of speculative tokens: )\d+", r"\g<1>" + "9" * 17, s),
    lambda s: re.sub(r", Number of speculative tokens: \d+", "", s),
    lambda s: s.replace("tokens tokens", "tokens tokens tokens", 1),
    lambda s: s.replace("Number of draft tokens", "Number of draft TOKENS tokens", 1),
    lambda s: s + " vllm serve m --num-speculative-tokens 4",
]


def mixed_log(seed: int, pools: list[list[str]], damaged: list, rate: float, runs: tuple[int, int] = (1, 10),
              longest: int = 40, ends: tuple[bytes, ...] = (b"\n",)) -> bytes:
    """Runs of real lines, each from one of `pools` (a line pool, chosen at random: one listed twice
    comes twice as often), some damaged (`rate` of them, by one of `damaged`)."""
    rng = random.Random(seed)
    lines: list[str] = []
    for _ in range(rng.randint(*runs)):
        pool = rng.choice(pools)
        start = rng.randrange(len(pool))
        for line in pool[start:start + rng.randint(1, longest)]:
            if rng.random() < rate:
                line = rng.choice(damaged)(line)
            lines.append(line)
    return "\n".join(lines).encode() + rng.choice(ends)


def _vllm_log(seed: int) -> bytes:
    """Runs of real vLLM files' lines, and their engine, spec and tagged lines alone, some damaged."""
    return mixed_log(seed, [VLLM, ENGINE, SPEC, TAGGED], VLLM_DAMAGED, 0.15)


def test_the_corpus_holds_vllm_engine_spec_and_tagged_lines():
    assert len(ENGINE) >= 9 and len(SPEC) >= 19 and len(TAGGED) >= 20
    assert any(line.startswith("(APIServer pid=") for line in TAGGED)
    assert any("Engine 000: Avg prompt" in line for line in ENGINE)
    assert any("Per-position acceptance rate" in line for line in SPEC)


@pytest.mark.parametrize("seed", range(80))
def test_real_vllm_lines_mixed_and_damaged_give_the_records_lines_give(seed):
    same_mixed(_vllm_log(seed))


def test_each_real_vllm_file_gives_the_records_lines_give_read_whole_and_repeated():
    same_files(VLLM_FILES)


def test_the_scanner_reads_vllm_engine_spec_and_known_tagged_lines_itself():
    """Repeated real lines: after the first records (formats and settings are Python's), the
    scanner reads the engine lines, the V1 SpecDecoding lines and the lines of known processes."""
    picked = [line for line in VLLM if line.startswith("(APIServer pid=1) INFO 05-06")]
    assert any("SpecDecoding" in line for line in picked) and any("Engine 000" in line for line in picked)
    data = ("\n".join(picked) + "\n") * 50
    fed = _python_lines(data.encode())
    assert len(fed) <= 2 * len(picked), fed[-5:]
    _same(data.encode(), 1 << 12, 1 << 12)


def test_the_scanner_reads_idle_intervals_llm_lines_and_bench_latency_lines_itself():
    """Real lines repeated: idle engine intervals and SpecDecoding lines without drafts (their line
    `used`), `vLLM Version :` lines of a collect_env dump and vLLM benchmark_latency's
    `10% percentile latency:` lines are the scanner's past the first copy."""
    picked = [line for line in VLLM if "generation throughput: 0.0 tokens/s" in line or "nan%" in line
              or line.startswith(("vLLM Version", "vLLM Build Flags")) or "percentile latency:" in line
              or line.startswith("Avg latency:")]
    assert len(picked) >= 6 and any("nan%" in line for line in picked)
    assert any("Avg prompt" in line for line in picked) and any(line.startswith("10%") for line in picked)
    data = ("\n".join(picked) + "\n") * 30
    fed = _python_lines(data.encode())
    assert len(fed) <= 2 * len(picked), fed[-5:]
    _same(data.encode(), 1 << 12, 1 << 12)


def test_the_scanner_reads_v0_speculative_metrics_itself():
    """V0 `Speculative metrics` lines (cumulative counters, differenced; the V0.5 `tokens tokens` typo) and
    V1 lines without a mean length (tokens per cycle from `spec.steps`), real ones repeated: past the
    first records of a launch they are the scanner's."""
    picked = [line for line in SPEC if "System efficiency" in line or "Mean acceptance length" not in line]
    assert sum("tokens tokens" in line for line in picked) >= 2 and sum("System efficiency" in line for line in picked) >= 4
    data = ("\n".join(picked) + "\n") * 30
    fed = _python_lines(data.encode())
    assert len(fed) <= 2 * len(picked), fed[-5:]
    _same(data.encode(), 1 << 12, 1 << 12)
    counted = "\n".join(["INFO 08-27 15:21:10 metrics.py:422] Speculative metrics: Draft acceptance rate: 0.3, "
                         "System efficiency: 0.4, Number of speculative tokens: 2, Number of accepted tokens: "
                         f"{a}, Number of draft tokens: {d}, Number of emitted tokens: {e}."
                         for a, d, e in [(5, 10, 12), (9, 10, 14), (12, 20, 20), (3, 4, 5), (3, 4, 5), (8, 9, 12)]])
    _same((counted + "\n").encode() * 5, 1 << 10, 1 << 10)


def test_the_scanner_reads_the_first_speculative_metrics_line_of_a_launch_itself():
    """Launches one after another (the real `non-default args` line, a `vllm serve` command), each followed
    by real V0 and V1 spec lines (one without drafts among them): the first spec line of a launch sets its
    launch_used (the next launch line starts afresh: its draft length and V0 counters), and past the first
    records the scanner reads it too."""
    args = next(line for line in VLLM if "non-default args" in line)
    v0 = [line for line in SPEC if "System efficiency" in line]
    idle = next(line for line in SPEC if "nan%" in line)
    v1 = [line for line in SPEC if "Mean acceptance length" in line and "nan%" not in line]
    launches = [args, "$ vllm serve m --num-speculative-tokens 4", args + " x"]
    data = "".join("\n".join([launches[i % 3], *([idle] if i % 4 == 1 else []), *(v0 if i % 2 else v1[:3])]) + "\n"
                   for i in range(40)).encode()
    fed = _python_lines(data)
    assert sum("metrics:" in line for line in fed) <= 3, [line for line in fed if "metrics:" in line][-5:]
    _same(data, 1 << 12, 1 << 12)
    _same(data)


def test_the_scanners_vllm_calls_refuse_what_they_cannot_hold():
    from ingest.parsers import PARSERS, _scan, processes, vllm
    from ingest.parsers.records import ParseResult

    result = ParseResult()
    formats = [p(result) for p in PARSERS.values()]
    tagger = processes.Tagger(result)
    scan = native.scanner([tagger, *formats])
    parser = next(p for p in formats if p.name == "vllm")
    hints = (processes.LAUNCHER, processes.WORKER)
    with pytest.raises(TypeError):
        scan.bench([], [], [], [], serving.Row, serving.KEYS, "not callable", "", True)
    with pytest.raises(ValueError):
        scan.bench([], [], [], [], serving.Row, serving.KEYS, None, "#### ", True)
    with pytest.raises(TypeError):
        scan.bench({}, [], [], [], serving.Row, serving.KEYS, None, "", True)
    with pytest.raises(TypeError):
        scan.bench([], [], [], [], serving.Row, serving.KEYS, None, "", True, [None, None], False)
    with pytest.raises(TypeError):
        scan.bench([], [], [], [], serving.Row, serving.KEYS, None, "", True, (None,), False)
    scan.bench(None)
    with pytest.raises(TypeError):
        scan.vllm_arm(parser, [], {}, {"running": 1}, {}, frozenset(), frozenset(), hints, None)
    with pytest.raises(ValueError):
        scan.vllm_arm(parser, [], {}, {}, {"accepted": "no such field"}, frozenset(), frozenset(), hints, None)
    with pytest.raises(AttributeError):
        scan.vllm_arm(object(), [], {}, {}, {}, frozenset(), frozenset(), hints, None)
    scan.vllm_arm(parser, tagger.launch_lines, result.processes, dict(vllm._ENGINE_FIELDS), dict(vllm._SPEC_KEYS),
                  processes._VLLM_LAUNCHERS, processes._VLLM_WORKERS, hints, None)
    with pytest.raises(RuntimeError):
        _scan.Scanner.__new__(_scan.Scanner).bench(None)
    assert not hasattr(scan, "watch")  # the Watcher is env_bind()'s, one for every format's offers


CAPITAL = [line for line in VLLM + REAL if line[:1].isupper() and line.isascii()]
CAPITAL_DAMAGED = [
    lambda s: s + " X=1", lambda s: "export " + s, lambda s: "env " + s, lambda s: "declare -x " + s,
    lambda s: "NCCL_ALGO=Ring " + s, lambda s: s + " root@host:~$ ls", lambda s: s + " $ x", lambda s: s + " + y",
    lambda s: "A=b " + s, lambda s: s.replace(" ", "=", 1), lambda s: "Successful requests: 5",
]


@pytest.mark.parametrize("seed", range(30))
def test_lines_only_launch_env_starts_give_the_records_lines_give(seed):
    """Real lines with a capital first (launch_env's STARTS), some made into assignments, prompts
    and NCCL declarations that launch_env reads, among real vLLM lines."""
    rng = random.Random(seed)
    lines = []
    for _ in range(rng.randint(5, 120)):
        line = rng.choice(CAPITAL if rng.random() < 0.7 else VLLM)
        if rng.random() < 0.2:
            line = rng.choice(CAPITAL_DAMAGED)(line)
        lines.append(line)
    data = "\n".join(lines).encode() + b"\n"
    _same(data, 1 << 10, 1 << 10)
    _same(data, vector=False)


def test_a_capital_line_no_reader_acts_on_is_read_by_the_scanner():
    data = ("INFO:     ::1:50352 - \"POST /v1/completions HTTP/1.1\" 200 OK\n" * 200).encode()
    assert len(_python_lines(data)) == 1  # the first: the Tagger makes the main process of it
    _same(data)


# Lines about the words context.Watcher.offer looks for, where the scanner settles an offer itself
# (context_offer in _scan_context.h) or leaves it to offer(): each must count as the line engine counts it.
OFFER_DAMAGED = [
    lambda s: s.replace("throughput", "Throughput", 1),  # case-blind hint, no cased word
    lambda s: s.replace("throughput", "throughput batch", 1),  # _SKIP's literal
    lambda s: s.replace("throughput", "throughput Decode batch", 1),
    lambda s: s + " NCCL INFO x",
    lambda s: "---" + s,
    lambda s: s.replace("throughput", "thröughput", 1),  # non-ASCII
    lambda s: s.replace("throughput", "Speculative", 1),
    lambda s: s.replace("throughput", "SPECDECODING", 1),
    lambda s: s.replace("throughput", "acceptance rate", 1),
    lambda s: s.replace("throughput", "acceptance len", 1),
    lambda s: s.replace("throughput", "accept length", 1),
    lambda s: s.replace("throughput", "avg bus bandwidth", 1),
    lambda s: s.replace("throughput", "nccl version", 1),
    lambda s: s.replace("throughput", "statistics  x:", 1),
    lambda s: s + " extra words",  # a row no more: the block ends, the line is unread or a reader's
    lambda s: "Mean throughput widgets:   12",  # a row of a label serving.KEYS lacks
]


WORDED = [line for line in REAL + VLLM if context._HINTS.search(line.lower())]


def _offer_log(seed: int) -> bytes:
    """Real bench blocks and vLLM lines holding the Watcher's words, some damaged around them."""
    return mixed_log(seed, [REAL, VLLM, WORDED], OFFER_DAMAGED, 0.1, (1, 8), 60)


@pytest.mark.parametrize("seed", range(40))
def test_lines_with_the_watchers_words_leave_the_unread_lines_lines_leave(seed):
    same_mixed(_offer_log(seed))


@pytest.mark.parametrize("cap", [0, 1, 5, 40, 200])
def test_the_scanners_offers_stop_at_the_watchers_cap_as_offer_does(cap):
    """Past MAX_CANDIDATES offer() counts no more lines and says so (`truncated`): the offers the
    scanner settles count toward the cap, and stop at it, as offer()'s own do."""
    data = b"".join(_offer_log(seed) for seed in range(3)) + b"".join(p.read_bytes() for p in BLOCK_FILES)
    with mock.patch.object(context, "MAX_CANDIDATES", cap):
        _same(data * 2, 1 << 12, 1 << 12)
        _same(data)


def test_the_scanner_settles_the_offers_of_bench_rows_and_engine_lines_itself():
    """A bench log repeated: the `throughput` rows of its blocks and its section titles are offered
    to the Watcher by the scanner (context_offer), not through offer(), and the unread lines are the
    line engine's."""
    path = CORPUS / "serving" / "vllm_bench_serve_mtp_rps_issue43295.txt"
    data = path.read_bytes() * 40
    worded = sum(1 for line in data.decode().splitlines() if "throughput" in line)
    calls = []
    real = context.Watcher.offer

    def offer(self, lineno, line):
        calls.append(line)
        return real(self, lineno, line)
    with mock.patch.object(context.Watcher, "offer", offer):
        parse_stream(io.BytesIO(data))
    assert worded >= 100 and sum("throughput" in line for line in calls) < worded // 4, calls[-5:]
    assert sum(line.startswith("---") for line in calls) < 10
    _same(data, 1 << 12, 1 << 12)


STAGE = [line for line in VLLM if "SpecDecodeWorker stage times" in line]
# Stage lines as a copy or another release could print them: each must be read as Python reads it.
STAGE_DAMAGED = [
    lambda s: s.replace("scoring_time_ms=", "scoring_time_ms=1e3", 1),
    lambda s: s.replace("scoring_time_ms=", "scoring_time_ms=" + "9" * 60, 1),
    lambda s: s.replace("scoring_time_ms=", "scoring_time_ms=.5", 1),
    lambda s: s.replace("scoring_time_ms=", "scoring_time_ms=-1", 1),
    lambda s: s.replace("scoring_time_ms=", "scoring_time_ms=12.", 1),
    lambda s: s.replace("scoring_time_ms=", "scoring_time_ms=nan", 1),
    lambda s: s.replace("scoring_time_ms=", "scoring_time_ms=2.5 scoring_time_ms=", 1),  # a later value wins
    lambda s: s.replace("scoring_time_ms=", "xscoring_time_ms=", 1),
    lambda s: s.replace("scoring_time_ms=", "scoring.time_ms=", 1),
    lambda s: s.replace("scoring_time_ms=", "scoring_time_ms_ms=", 1),
    lambda s: s.replace(" scoring_time_ms=", "scoring_time_ms=", 1),  # glued to the value before
    lambda s: s.replace("average_time_per_proposal_tok_ms=", "average_time_per_proposal_tok_ms=0", 1),
    lambda s: re.sub(r"average_time_per_proposal_tok_ms=\S+ ", "", s),
    lambda s: re.sub(r"average_time_per_proposal_tok_ms=\S+ scoring_time_ms=\S+", "", s),  # neither time
    lambda s: s + " prefill_sync_time_ms=3.25",
    lambda s: "prefill_sync_time_ms=1.0 " + s,
    lambda s: s.replace("stage times: ", "stage times:\t", 1),
    lambda s: s.replace("stage times:", "stage times", 1),
    lambda s: s.replace("SpecDecodeWorker", "SpecDecodeWorker SpecDecodeWorker stage times:", 1),
    lambda s: "NAME=1 " + s,
    lambda s: "Name_1=x " + s,
    lambda s: "export " + s,
    lambda s: "env " + s,
    lambda s: "  " + s,
    lambda s: "(VllmWorkerProcess pid=123) " + s,
    lambda s: "(APIServer pid=7) " + s,
    lambda s: s + " user@host",
    lambda s: s + " NCCL_ALGO=Ring",
    lambda s: s + " throughput: 3",
    lambda s: s + " metrics: 1",
    lambda s: s + " LLM",
    lambda s: s.replace("ms=", "ms=é", 1),  # non-ASCII
    lambda s: s + " vllm serve m --num-speculative-tokens 4",
    lambda s: "INFO 01-01 00:00:00 llm_engine.py:1] non-default args: {'speculative_config': {'method': 'eagle', "
              "'num_speculative_tokens': 3}}",
]


def _stage_log(seed: int) -> bytes:
    """Real V0 stage lines among real vLLM lines (launches, metrics lines that set the draft length),
    some damaged."""
    return mixed_log(seed, [VLLM, STAGE, STAGE, SPEC], STAGE_DAMAGED, 0.2, (2, 12), 30)


def test_the_corpus_holds_v0_stage_lines_tagged_and_not():
    assert len(STAGE) >= 3 and any(line.startswith("SpecDecodeWorker") for line in STAGE)


@pytest.mark.parametrize("seed", range(60))
def test_real_v0_stage_lines_mixed_and_damaged_give_the_records_lines_give(seed):
    same_mixed(_stage_log(seed))


def test_the_scanner_reads_v0_stage_lines_itself():
    """Real stage lines repeated after their launch's first ones: the scanner reads them (the first
    records, format and engine, are Python's), their proposal time per cycle by the launch's k."""
    for path in sorted((CORPUS / "shared").glob("vllm_v0_*stage*.log")):
        data = path.read_bytes() * 30
        stage = [line for line in data.decode().splitlines() if "stage times" in line]
        fed = [line for line in _python_lines(data) if "stage times" in line]
        assert len(stage) >= 30 and len(fed) <= 2, (path.name, fed[:3])
        _same(data, 1 << 12, 1 << 12)


def test_the_scanners_round6_is_pythons_round_to_six_places():
    """round6 (_scan.c: vLLM's rates and positions, llama.cpp's, the bench metrics) on random doubles of
    every exponent, on the decimals around every tie of the sixth place and on the exact binary ties (k/128,
    k odd: x * 10^6 = k * 7812.5), their neighbours, zeros, infinities, nan and the 1e9 bound."""
    rng = random.Random(6)
    values = [0.0, -0.0, 1e9, -1e9, math.nextafter(1e9, 0), math.inf, -math.inf, 5e-7, -5e-7, 4.9999999e-7,
              1e-320, -5e-324, 999999999.9999995, 0.0000015, 2.5e-6, 82.37 / 100, 91.94 / 100, 1 / 3]
    for _ in range(20000):
        values.append(struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0])
        values += [rng.uniform(-1e9, 1e9), rng.uniform(-1, 1), rng.randrange(-2**40, 2**40) / 128,
                   rng.randrange(0, 10**9) / 10 ** rng.randrange(0, 12)]
        tie = (rng.randrange(-10**12, 10**12) + 0.5) / 1e6
        values += [tie, math.nextafter(tie, math.inf), math.nextafter(tie, -math.inf)]
    for x in values:
        got, want = round6(x), round(x, 6)
        assert (got == want and math.copysign(1, got) == math.copysign(1, want)) or (got != got and want != want), x
    assert round6(math.nan) != round6(math.nan)


def test_lines_of_more_processes_than_the_scanner_keeps_tags_of_give_the_records_lines_give():
    """Engine and spec lines of 24 processes by turns (the scanner keeps the last 16 tags read): each
    tag read anew or kept, the lines are read as lines read them, and past the first round in the
    scanner."""
    picked = [line for line in VLLM if line.startswith("(APIServer pid=1) INFO 05-06")]
    lines = [line.replace("pid=1)", f"pid={1 + i % 24})", 1) for i, line in enumerate(picked * 6)]
    data = ("\n".join(lines) + "\n").encode()
    fed = _python_lines(data * 4)
    assert len(fed) <= 24 + len(picked), fed[-5:]  # (a process's first line is Python's: the Tagger learns it)
    _same(data * 4, 1 << 12, 1 << 12)
    _same(data, vector=False)


def test_the_scanner_makes_a_titles_block_only_of_blocks_dataclass_init():
    """native._block_plain hands serving.Block over (the scanner then makes a title's block as its
    generated __init__ does) only while Block is the dataclass of those fields and defaults."""
    import dataclasses

    assert native._block_plain(serving.Block) is serving.Block
    fields = {f.name: (f.type, f) for f in dataclasses.fields(serving.Block)}
    assert list(fields) == [name for name, _, _ in native._BLOCK_FIELDS]
    made = serving.BlockReader().open_title(3, "# ==== Serving Benchmark Result ====")
    assert vars(made) == {"first_line": 3, "titled": True, "tool": None, "rows": [], "sections": [],
                          "prefix": "# ", "client": {}}

    @dataclasses.dataclass
    class Later(serving.Block):
        extra: int = 0

    @dataclasses.dataclass
    class Checked(serving.Block):
        def __post_init__(self) -> None:
            pass

    class Plain:
        def __init__(self, first_line):
            self.first_line = first_line

    assert native._block_plain(Later) is None
    assert native._block_plain(Checked) is None
    assert native._block_plain(Plain) is None


def test_the_scanner_keeps_a_titles_lists_only_of_a_block_with_objects_attribute_access():
    """The scanner holds the rows and sections lists it stored in a title's block instead of reading
    them back: _block_plain hands Block over only where reading and writing its attributes is object's."""
    import dataclasses

    @dataclasses.dataclass
    class Watched(serving.Block):
        def __getattribute__(self, name):
            return object.__getattribute__(self, name)

    @dataclasses.dataclass
    class Guarded(serving.Block):
        def __setattr__(self, name, value):
            object.__setattr__(self, name, value)

    @dataclasses.dataclass
    class Fallback(serving.Block):
        def __getattr__(self, name):
            raise AttributeError(name)

    assert native._block_plain(Watched) is None
    assert native._block_plain(Guarded) is None
    assert native._block_plain(Fallback) is None
