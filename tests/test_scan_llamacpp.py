"""The native scanner reads llama.cpp's timing and slot lines (_scan_llamacpp.h) exactly as
llamacpp.Parser does: the lines are the corpus's real llama.cpp logs (tests/corpus/serving and the
shared public samples), whole, repeated, mixed and damaged, and the native engine's records,
settings and processes equal the line engine's; past the first records the scanner reads the
`eval time` and `draft acceptance` lines itself."""

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
