"""The native scanner reads llama.cpp's timing and slot lines (_scan_llamacpp.h) exactly as
llamacpp.Parser does: the lines are the corpus's real llama.cpp logs (tests/corpus/serving and the
shared public samples), whole, repeated, mixed and damaged, and the native engine's records,
settings and processes equal the line engine's; past the first records the scanner reads the
`eval time` and `draft acceptance` lines itself."""

import random
import re

import pytest

from tests.samples import PROJECT_ROOT
from tests.test_parsers_native import _same
from tests.test_scan_vllm import _python_lines, mixed_log, same_files, same_mixed

CORPUS = PROJECT_ROOT / "tests" / "corpus"
FILES = sorted((CORPUS / "serving").glob("llamacpp_*.log")) + sorted((CORPUS / "shared").glob("llamacpp_*.log"))


LINES = [line for path in FILES for line in path.read_text(encoding="utf-8", errors="replace").splitlines()]
TIMING = [line for line in LINES if "eval time" in line or "draft acceptance" in line]

# Damage a timing or slot line could come with: each must be read as Python reads it.
DAMAGED = [
    lambda s: s.replace("eval time", "eval time eval time", 1),
    lambda s: s.replace(" ms /", " ms/", 1),
    lambda s: s.replace(" ms /", "ms /", 1),
    lambda s: s.replace(" tokens (", " runs   (", 1),
    lambda s: s.replace(" tokens (", " tokenz (", 1),
    lambda s: s.replace("= ", "=\t", 1),
    lambda s: s.replace("=", "", 1),
    lambda s: s.replace(" ms per token,", " ms per token,  ", 1),
    lambda s: s.replace(" tokens per second)", " tokens per second", 1),
    lambda s: re.sub(r"(\d+)\.(\d+) tokens per second", r"\1. tokens per second", s),
    lambda s: re.sub(r"(\d+\.\d+) tokens per second", "9" * 400 + " tokens per second", s),
    lambda s: re.sub(r"(\d+\.\d+) ms per token", "1e3 ms per token", s),
    lambda s: re.sub(r"/ +(\d+) ", "/ " + "9" * 25 + " ", s),
    lambda s: re.sub(r"\( *(\d+) accepted", "( " + "0" * 20 + "7 accepted", s),
    lambda s: re.sub(r"\( *(\d+) accepted", "( " + "9" * 19 + " accepted", s),
    lambda s: re.sub(r"/ *(\d+) generated", "/ 0 generated", s),
    lambda s: s.replace(" generated)", " generated), mean acceptance length = 2.5", 1),
    lambda s: s.replace(" generated)", " generated), #acc rate/pos = (0.5, 0.25)", 1),
    lambda s: s.replace("draft acceptance rate", "draft acceptance", 1),
    lambda s: s.replace("draft acceptance", "draft acceptance rate rate", 1),
    lambda s: s + " statistics",
    lambda s: s + " NCCL_ALGO=Ring",
    lambda s: s + " Decode batch",
    lambda s: "prompt " + s,
    lambda s: "[7] " + s,
    lambda s: "(APIServer pid=1) " + s,
    lambda s: "# " + s,
    lambda s: "12 " + s,
    lambda s: s.replace("eval", "évàl", 1),
    lambda s: s[: len(s) * 2 // 3],
]


def _log(seed: int) -> bytes:
    """Runs of real llama.cpp lines, and of their timing and slot lines alone, some damaged."""
    return mixed_log(seed, [LINES, TIMING, TIMING], DAMAGED, 0.15, ends=(b"\n", b""))


def test_the_corpus_holds_real_timing_and_slot_lines():
    assert len(FILES) >= 7
    assert any(line.startswith("prompt eval time") for line in TIMING)
    assert any(line.startswith("       eval time") for line in TIMING)
    assert any("draft acceptance rate =" in line for line in TIMING)
    assert any("draft acceptance =" in line for line in TIMING)  # newer builds drop `rate`
    assert any(" runs " in line for line in TIMING)




def test_each_real_llamacpp_file_gives_the_records_lines_give_read_whole_and_repeated():
    same_files(FILES)


@pytest.mark.parametrize("seed", range(60))
def test_real_llamacpp_lines_mixed_and_damaged_give_the_records_lines_give(seed):
    same_mixed(_log(seed))


def test_the_scanner_reads_timing_and_slot_lines_itself():
    """Real timing and slot lines repeated: past the first records (formats and settings are
    Python's) the scanner reads them, their windows counted on in the parser."""
    plain = [line for line in TIMING if line.startswith(("prompt eval", "       eval", "draft acceptance"))]
    assert len(plain) >= 3
    data = ("\n".join(plain) + "\n") * 40
    fed = _python_lines(data.encode())
    assert len(fed) <= 2 * len(plain), fed[-5:]
    _same(data.encode(), 1 << 12, 1 << 12)


def test_the_scanners_llamacpp_arm_refuses_a_parser_it_cannot_count_on():
    from ingest.parsers import PARSERS, _scan, llamacpp, native, processes
    from ingest.parsers.records import ParseResult

    result = ParseResult()
    formats = [p(result) for p in PARSERS.values()]
    scan = native.scanner([processes.Tagger(result), *formats])
    with pytest.raises(AttributeError):
        scan.llamacpp_arm(object())
    parser = llamacpp.Parser(result)
    parser.eval_windows = "1"
    with pytest.raises(TypeError):
        scan.llamacpp_arm(parser)
    scan.llamacpp_arm(llamacpp.Parser(result))
    with pytest.raises(RuntimeError):
        _scan.Scanner.__new__(_scan.Scanner).llamacpp_arm(parser)


# ---- `statistics` lines (llamacpp.Parser._statistics; _scan_llamacpp.h's llama_statistics) ----------------

STATS = [line for line in LINES if "statistics" in line]
# A vLLM config that names the algorithm first: llama.cpp's lines then leave `spec.algorithm` as it is.
FOREIGN = ("INFO 01-01 00:00:00 llm_engine.py:1] Initializing an LLM engine (v0.6.0) with config: model='m', "
           "speculative_config=SpeculativeConfig(method='eagle', num_spec_tokens=3)")

# What a statistics line may look like in another build or a damaged copy: each must be read as Python reads it.
STATS_DAMAGED = [
    lambda s: re.sub(r"= +", "= ", s),
    lambda s: s.replace(", ", ",\t", 2),
    lambda s: s.replace(" = ", "=", 3),
    lambda s: s.replace("#calls(b,g,a)", "#calls", 1),
    lambda s: re.sub(r"#calls\(b,g,a\) = *(\d+) +(\d+) +(\d+)", r"#calls = \2", s),
    lambda s: re.sub(r"#calls\(b,g,a\) = *(\d+) +(\d+) +(\d+)", r"#calls(b,g,a) = \1 \2", s),
    lambda s: re.sub(r"#calls[^,]*, ", "", s),
    lambda s: re.sub(r", dur\(b,g,a\).*", "", s),
    lambda s: re.sub(r"dur\(b,g,a\) = [^m]*ms", "dur(b,g,a) = 1, 2, 3 ms", s),
    lambda s: re.sub(r"dur\(b,g,a\) = [^m]*ms", "dur(b,g,a) = 1.5, 2. , 3 ms", s),
    lambda s: re.sub(r"dur\(b,g,a\) = [^m]*ms", "dur(b,g,a) = 0.5, 0.25 ms", s),
    lambda s: re.sub(r"dur\(b,g,a\) = [^m]*ms", "dur(b,g,a) = " + "9" * 50 + ", 1, 2 ms", s),
    lambda s: re.sub(r"dur\(b,g,a\) = [^m]*ms", "dur(b,g,a) = 1, 2, 3 ms, dur(b,g,a) = 4, 5, 6 ms", s),
    lambda s: re.sub(r"#gen drafts = *\d+", "#gen drafts = " + "9" * 25, s),
    lambda s: re.sub(r"#acc tokens = *\d+", "#acc tokens = " + "9" * 17, s),
    lambda s: re.sub(r"#acc tokens = *\d+", "#acc tokens = " + "0" * 20 + "5", s),
    lambda s: re.sub(r"#gen drafts = *\d+", "#gen drafts = x, #gen drafts = 7", s),
    lambda s: re.sub(r"#gen drafts = *\d+", "#gen drafts = 0", s),
    lambda s: re.sub(r"#gen drafts = *\d+, ", "", s),
    lambda s: re.sub(r"#gen drafts = *\d+, #acc drafts = *\d+, #gen tokens = *\d+, #acc tokens = *\d+", "", s),
    lambda s: re.sub(r"(#gen drafts = *)(\d+)", lambda m: m.group(1) + str(int(m.group(2)) // 2), s),
    lambda s: re.sub(r"(#acc tokens = *)(\d+)", lambda m: m.group(1) + str(int(m.group(2)) * 3), s),
    lambda s: s.replace(", dur(", ", #mean acc len = 2.5, dur(", 1),
    lambda s: s.replace(", dur(", ", #acc rate/pos = (0.5, 0.25), dur(", 1),
    lambda s: re.sub(r"statistics +\S+:", "statistics draft-eagle3:", s),
    lambda s: re.sub(r"statistics +\S+:", "statistics draft:", s),
    lambda s: re.sub(r"statistics +\S+:", "statistics ngram_simple:", s),
    lambda s: re.sub(r"statistics +\S+:", "statistics Draft-Big.Model_2:", s),
    lambda s: re.sub(r"statistics +\S+:", "statistics " + "x" * 130 + ":", s),
    lambda s: re.sub(r"statistics +\S+:", "statistics drâft:", s),
    lambda s: re.sub(r"statistics +\S+:", "statistics 3mtp:", s),
    lambda s: re.sub(r"statistics +\S+:", "statistics:", s),
    lambda s: re.sub(r"statistics +(\S+):", r"statistics \1 :", s),
    lambda s: s.replace("statistics", "xstatistics", 1),
    lambda s: s.replace("statistics", "statistics: statistics", 1),
    lambda s: s.replace("statistics", "Statistics", 1),
    lambda s: s + " eval time",
    lambda s: s + " draft acceptance",
    lambda s: s + " NCCL_ALGO=Ring",
    lambda s: "[7] " + s,
    lambda s: "(APIServer pid=1) " + s,
    lambda s: "# " + s,
    lambda s: "12 " + s,
    lambda s: "\x1b[32m" + s + "\x1b[0m",
    lambda s: s[: len(s) * 2 // 3],
    lambda s: FOREIGN,
]


def _scaled(line: str, counter: str, scale: int) -> str:
    """The line with the counters `counter` matches (a prefix, then the number) times `scale`."""
    return re.sub(counter, lambda m: m.group(1) + str(int(m.group(2)) * scale), line)


def _stats_log(seed: int) -> bytes:
    """Runs of real llama.cpp lines and of their statistics lines alone (each type's counters climbing
    from one copy to the next, sometimes restarting), some damaged."""
    rng = random.Random(seed)
    lines: list[str] = []
    scale = 1
    for _ in range(rng.randint(1, 12)):
        scale = 1 if rng.random() < 0.15 else scale + rng.randint(0, 3)
        for line in rng.choice([STATS, STATS, LINES]):
            line = _scaled(line, r"(#(?:gen|acc) (?:drafts|tokens) = *)(\d+)", scale)
            if rng.random() < 0.15:
                line = rng.choice(STATS_DAMAGED)(line)
            lines.append(line)
    return "\n".join(lines).encode() + rng.choice([b"\n", b""])


def test_the_corpus_holds_real_statistics_lines():
    assert len(STATS) >= 8
    assert any(line.startswith("statistics mtp:") for line in STATS)  # untagged
    assert any(line.startswith("[53409] ") for line in STATS)  # tagged
    assert any("#mean acc len" in line for line in STATS)  # Python's
    assert any(re.search(r"#calls\(b,g,a\) = +\d+ +\d+ +\d+", line) for line in STATS)


@pytest.mark.parametrize("seed", range(60))
def test_real_statistics_lines_mixed_and_damaged_give_the_records_lines_give(seed):
    same_mixed(_stats_log(seed))


def test_each_damaged_statistics_line_gives_the_records_lines_give():
    plain = [line for line in STATS if "#mean" not in line]
    for damage in STATS_DAMAGED:
        data = "\n".join([*plain, *map(damage, plain), *plain, FOREIGN, *plain, *map(damage, plain), *plain]) + "\n"
        _same(data.encode())
        _same(data.encode(), 1 << 10, 1 << 10)


def test_the_scanner_reads_statistics_lines_itself():
    """Real statistics lines of several files repeated, their counters climbing: past the first
    records Python reads none of them; the windows, the types table and the algorithm are the line
    engine's."""
    plain = [line for line in STATS if "#mean" not in line]
    lines = [_scaled(line, r"(= *)(\d+)", 1 + i // len(plain)) for i, line in enumerate(plain * 30)]
    data = ("\n".join(lines) + "\n").encode()
    fed = _python_lines(data)
    assert len(fed) <= len(plain) + 2, fed[-5:]
    _same(data, 1 << 12, 1 << 12)
    _same(data)


def test_a_types_table_row_made_again_where_lines_read_by_python_replaced_its_stats():
    """Three draft types printed in turn, one of them now and then with a mean (Python's line): the
    scanner gives an unchanged type its last table row again, and a type whose stats Python replaced
    a row made anew; the table and windows equal the line engine's at every cut."""
    plain = [line for line in STATS if line.startswith("[53409] ") and "#mean" not in line]
    assert len({re.search(r"statistics +(\S+):", line).group(1) for line in plain}) >= 2
    lines = []
    for i in range(40):
        for line in plain:
            line = _scaled(line, r"(= *)(\d+)", 1 + i)
            lines.append(line + (", #mean acc len = 2.5" if i % 7 == 3 and "mod" in line else ""))
    data = ("\n".join(lines) + "\n").encode()
    assert len(_python_lines(data)) < len(lines) // 2  # the scanner read most of them itself
    _same(data)
    _same(data, 1 << 11, 1 << 11)
