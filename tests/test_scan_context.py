"""The context watcher's offer() read in C (ingest/parsers/_scan_context.h): its words and its skip
are context.py's own regexes on every real line and on made ones, and a parse whose lines the
scanner offers in C counts the same candidates as the line engine, the cap on them included."""

import io
from contextlib import contextmanager
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingest.parsers import PARSERS, _scan, _wanted, context, native, parse_stream, processes
from ingest.parsers.records import ParseResult
from ingest.parsers.text import read_chunks
from tests.samples import PROJECT_ROOT
from tests.test_parsers_engine import SETTINGS
from tests.test_parsers_native import _same
from tests.test_scan_launch import _real_lines


def _python(line: str) -> tuple[bool, bool]:
    return context.WORDS.search(line) is not None, context._skipped(line)


def test_every_real_line_has_the_words_and_skip_context_py_finds(vector):
    lines = [line for line in _real_lines() if line.isascii()]
    assert len(lines) > 3000
    assert sum(_python(line)[0] for line in lines) > 100 and sum(_python(line)[1] for line in lines) > 100
    for line in lines:
        assert _scan.offer_words(line) == _python(line), line


# Pieces of every branch of WORDS and _SKIP, and what sits next to them in real lines.
_PIECES = ["throughput", "acceptanc", "acceptance", "e", " len", " rate", "Accept length", "accept len",
           "statistics", " ", "  ", ":", "x", "Speculative", "speculative", "NCCL_", "NCCL", "X", "x_1", "_",
           " set to ", " set to", "=", ".", "a.", "1", "avg bus bandwidth", "AVG BUS Bandwidth", "SpecDecod",
           "set by environment", "SET BY ENVIRONMENT", "nccl version", "RCCL version", "Nccl Version", "NCCL INFO ",
           "NCCL WARN", "NCCL TRACE", "NCCL INFOx", "Decode batch", "Prefill batch", "batch", "---", "-", "--- x ---",
           "\t", "\x1c", "\x0b", "é"[:0], "Throughput", "vm:1:1 [0] ",
           # the words' parts before and in the hints they hold, and runs across a vector step (32 bytes)
           "bandwidth", "avg bus ", "Avg Bus ", "set by ", "Set by ", "environment", "Environment", "cl version",
           "CL version", "n", "R", "c", "C", "Decode ", "Prefill ", "Decode", "specdecod", "y" * 29, "y" * 40]


@contextmanager
def _vector(on: bool):
    was = _scan.vector()
    _scan.vector(on and was)
    try:
        yield
    finally:
        _scan.vector(was)


@SETTINGS
@given(st.lists(st.sampled_from(_PIECES), max_size=12), st.booleans())
def test_made_lines_have_the_words_and_skip_context_py_finds(pieces, on):
    line = "".join(pieces)
    with _vector(on):
        assert _scan.offer_words(line) == _python(line)


@SETTINGS
@given(st.text(st.sampled_from("NCCL_ =.:-stAaxX0\tbchpev"), max_size=40), st.booleans())
def test_short_texts_of_the_words_letters_read_alike(line, on):
    with _vector(on):
        assert _scan.offer_words(line) == _python(line)


@pytest.mark.parametrize("line", [
    "MY_NCCL_A=1", ".NCCL_A=1", "-NCCL_A=1", "NCCL_A=1", "$NCCL_A=1", "NCCL_=1", "NCCL_a=1", "NCCL_A =1",
    "NCCL_A set to x", "NCCL_A set to", "xNCCL_A set to y", "NCCL_A  set to x", "acceptance len", "acceptanc rate",
    "accept len", "acceptancee len", "Accept lengths", "statistics  a:", "statistics :", "statistics ::",
    "statistics\ta:", "statistics x :", "statistics  \x1ca:", "NCCL INFO x", "NCCL INFO set by environment",
    "NCCL INFO x NCCL WARN y set by environment", "NCCL INFO set by environment NCCL TRACE", "NCCL INFORMAL",
    "NCCL TRACE RCCL version", "NCCL WARN NCCL_X set to", "NCCL WARN NCCL_X set tox", "--- a b ---", "--- a b ---  ",
    "----a----", "--- a-b ---", "---a--", "--- é ---"[:0] + "---_---", "x Decode batch", "Prefill batches",
    "AVG BUS BANDWIDTH", "SpecDecoding", "RCCL VERSION", "rccl version", "xnccl version", "SET BY ENVIRONMENT",
])
def test_the_branches_of_the_words_and_skip_read_as_context_py_reads_them(line, vector):
    assert _scan.offer_words(line) == _python(line)


@pytest.mark.parametrize("read", [_scan.offer_words, _scan.hints])
def test_the_word_searches_read_ascii_text_only(read):
    with pytest.raises(ValueError):
        read("speculative é")
    with pytest.raises(ValueError):
        read(b"nccl_")


HEAD = (PROJECT_ROOT / "samples" / "spec_eagle3_tuned_2step.log").read_text().splitlines()


def _candidates_log() -> bytes:
    """A serving head, then again and again lines the scanner reads and offers in C: echoes and versions
    (struck off by their records), env dumps and launch commands (their records), and lines left unread."""
    later = [line for line in HEAD[:400] if "set by environment" in line or "environ" in line or "CCL version" in line
             or line.startswith("$ ")]
    unread = ["node [0] NCCL INFO NCCL_X set by environment to 1 here", "echo NCCL avg bus bandwidth: 3",
              "nccl-run: throughput below NCCL_MIN=2"]
    assert len(later) > 10, len(later)
    return ("\n".join(HEAD + (later + unread) * 12) + "\n").encode()


def test_candidates_offered_in_c_are_the_line_engines_up_to_and_past_the_cap():
    data = _candidates_log()
    unread = parse_stream(io.BytesIO(data), engine="lines").settings["unread"].value
    assert unread["count"] >= 12 * 3 and not unread["truncated"]
    for cap in (0, 1, 5, 40, 200, 400, 10_000):
        with mock.patch.object(context, "MAX_CANDIDATES", cap):
            for batch in (1 << 21, 4096, 333):
                _same(data, batch, batch)


def test_a_parse_offers_its_lines_to_its_own_watcher_in_c():
    # parse_stream's Watcher is bound (no call into Python a line); any other offer is called
    result = ParseResult()
    result.offer = context.Watcher(None).offer
    assert native._watcher(result, PARSERS) is None  # it wants other lines than every reader's
    result.offer = context.Watcher(_wanted(tuple(PARSERS))).offer
    assert isinstance(native._watcher(result, PARSERS), context.Watcher)
    result.offer = lambda lineno, line: None
    assert native._watcher(result, PARSERS) is None
    data = _candidates_log()
    with mock.patch.object(context.Watcher, "offer", autospec=True, side_effect=context.Watcher.offer) as offer:
        parse_stream(io.BytesIO(data), engine="native")
    # the head's lines and the first of each kind are Python's (so offered by a call); the repeats are C's
    assert offer.call_count < len(HEAD) + 40


def test_an_offer_that_is_no_watchers_is_called_for_the_lines_read_in_c():
    data = _candidates_log()
    lines = data.decode().splitlines()
    seen: list[int] = []
    result = ParseResult()
    result.offer = lambda lineno, line: seen.append(lineno)
    native.parse_chunks(read_chunks(io.BytesIO(data), result.warnings, texts=True), PARSERS, result, None, 10**9)
    # every line offer() may take (WORDS, not skipped) is handed over, none twice
    worded = [i for i, line in enumerate(lines, 1) if context.WORDS.search(line) and not context._skipped(line)]
    assert len(worded) > 12 * 3 and set(worded) <= set(seen) and len(seen) == len(set(seen))
    assert processes.MAIN in result.processes


# ---- context._HINTS read in C (context_hint): the one search for WORDS' words every offer and
# launch_env's STARTS start with, by the vector search (32 places a step) and the plain one.

def _hints(line: str) -> bool:
    return context._HINTS.search(line.lower()) is not None


@pytest.fixture(params=[True, False], ids=["vector", "plain"])
def vector(request):
    with _vector(request.param):
        yield


def test_every_real_line_has_the_hints_context_py_finds(vector):
    lines = [line for line in _real_lines() if line.isascii()]
    assert sum(map(_hints, lines)) > 300
    for line in lines:
        for form in (line, line.upper(), line.swapcase()):
            assert _scan.hints(form) == _hints(form), form


_WORDS = ["throughput", "accept", "bandwidth", "specdecod", "statistics", "speculative", "environment",
          "cl version", "nccl_"]


@pytest.mark.parametrize("word", _WORDS)
def test_each_word_is_found_at_every_place_whole_and_not_cut(word, vector):
    """Each word at every place of lines of up to 100 bytes (a step's end and the line's, where the
    vector search reads a padded copy), in its cases; cut short or broken by a byte, it is not one."""
    for size in (0, 1, 29, 31, 32, 33, 34, 63, 64, 65, 100):
        for at in range(size + 1):
            for form in (word, word.upper(), word.title(), word[:-1], word[:-1] + "@", word[0] + "\x00" + word[1:]):
                line = ("x" * at + form + "y" * size)[:max(size, at + len(form))]
                assert _scan.hints(line) == _hints(line), (line, at)


# bytes next to the words' letters in ASCII (A-Z and a-z are 32 apart: `@`, `[`, `` ` ``, `{`, `_`)
@SETTINGS
@given(st.lists(st.sampled_from(_WORDS + ["thr", "acc", "ban", "spe", "sta", "env", "cl ", "ncc", "NCC", "Cl ",
                                          "@", "[", "`", "{", "_", " ", "x", "\x00", "\x7f", "CL\x00version"]),
                max_size=20), st.booleans())
def test_made_lines_have_the_hints_context_py_finds(pieces, on):
    line = "".join(pieces)
    with _vector(on):
        assert _scan.hints(line) == _hints(line)


# A copied bench block's progress bar is a non-ASCII comment the scanner reads on its UTF-8 bytes
# (bench_dirty_comment, _scan_bench.h): offered where it may hold a word offer() finds in the str,
# `ſ`, `ı`, `İ` and `K` matching ASCII letters case-blind (context_may_offer).
_BARS = ["# 100%|███| 32/32 [02:30<00:00,  4.71s/it]", "# 100%|███| ſpecdecoding on", "# 100%|███| SPECDECODİNG",
         "# 50%|██| set by envıronment", "# 50%|██| set by envİronment", "# 50%|██| set bY ENVIRONMENT",
         "# 50%|██| avg bus bandwidth", "# 50%|██| Avg Bus Bandwıdth", "# 1%|█| nccl verſion", "# 1%|█| rCcl version",
         "# 1%|█| throughput ſ", "# 1%|█| Speculative", "# 1%|█| ſpeculative", "# 1%|█| K specdecod",
         "# 1%|█| acceptance rate", "# 1%|█| Statistics x: 1", "# 1%|█| NCCL_X=1 ſ"]


@pytest.mark.parametrize("bar", _BARS)
def test_progress_bars_holding_the_words_leave_the_unread_lines_lines_leave(bar):
    from tests.test_scan_bench import COMMENTED

    block = COMMENTED.read_text().rstrip("\n").splitlines()

    def log(bar: str) -> bytes:  # the block's own bars (read in C past the first copy) made this one
        return ("\n".join([bar if "100%|" in line else line for line in block] * 6) + "\n").encode()

    def unread(data: bytes) -> int:
        return parse_stream(io.BytesIO(data), engine="lines").settings["unread"].value["count"]
    _same(log(bar))
    worded = context.WORDS.search(bar) is not None
    assert worded == (bar not in (_BARS[0], "# 1%|█| ſpeculative", "# 1%|█| Statistics x: 1")), bar
    bars = log(bar).decode().count(bar)
    assert bars >= 12 and unread(log(bar)) - unread(log(_BARS[0])) == (bars if worded else 0)
