"""ingest/parsers/context.py: topology and version dumps, lines no reader used, text kept as context;
the same on every engine."""

import io
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingest.parsers import context, parse_stream
from tests.test_parsers_engine import SETTINGS

CORPUS = Path(__file__).parent / "corpus" / "nccl"


def parse(content: bytes, engine: str | None = None):
    return parse_stream(io.BytesIO(content), engine=engine)


def setting(result, key):
    s = result.settings.get(key)
    return None if s is None else s.value


@pytest.mark.parametrize(("name", "gpus", "pair", "link", "nvlink"), [
    ("nvidia_smi_topo_pix_phb_sys_k8s_issue53497.txt", 8, "GPU2-GPU3", "PIX", False),
    ("nvidia_smi_topo_all_sys_4090_gpuallocator_issue17.txt", 8, "GPU0-GPU7", "SYS", False),
    ("nvidia_smi_topo_phb_2x5090_legend_club3090_issue1229.txt", 2, "GPU0-GPU1", "PHB", False),
    ("vllm_collect_env_topo_nv12_issue19607.txt", 2, "GPU0-GPU1", "NV12", True),
])
def test_nvidia_smi_topo_gives_the_link_between_every_two_gpus(name, gpus, pair, link, nvlink):
    r = parse((CORPUS / name).read_bytes())
    topology = setting(r, "topology")
    assert "nvidia_smi_topo" in r.formats and topology["gpus"] == gpus
    assert topology["pairs"][pair] == link and topology["nvlink"] is nvlink
    assert not any(w.message.startswith("none of the") for w in r.warnings)


def test_nic_rows_and_columns_are_not_gpu_links():
    topology = setting(parse((CORPUS / "nvidia_smi_topo_all_sys_4090_gpuallocator_issue17.txt").read_bytes()), "topology")
    assert set(topology["pairs"]) == {f"GPU{a}-GPU{b}" for a in range(8) for b in range(a + 1, 8)}
    assert topology["links"] == ["SYS"]


def test_version_dumps_name_the_packages_that_matter():
    r = parse((CORPUS / "vllm_collect_env_pip_nccl_2.26.2_issue22505.txt").read_bytes())
    assert setting(r, "versions") == {"nvidia-nccl-cu12": "2.26.2", "torch": "2.7.1+cu126", "triton": "3.3.1",
                                      "transformers": "4.55.0"}
    assert r.formats == ["versions"]


def test_text_in_no_format_is_context_with_its_head_and_a_warning():
    r = parse(b"we ran this on the shared cluster\nno logs kept\n")
    assert r.formats == [] and setting(r, "context")["head"].startswith("we ran this")
    assert "none of the 2 lines" in r.warnings[-1].message


def test_a_line_with_a_formats_words_that_no_reader_used_is_unread():
    content = (b"host:1:1 [0] NCCL INFO NCCL version 2.28.9+cuda12.9\n"
               b"host:1:1 [0] NCCL INFO NCCL_PROTO set by environment to LL\n"
               b"host:1:1 [0] NCCL INFO Dmabuf feature disabled without NCCL_DMABUF_ENABLE=1\n"
               b"# Avg bus bandwidth = 12.5 GB/s, reworded by a wrapper\n"
               b"Speculative decoding was on\n")
    r = parse(content)
    assert setting(r, "unread") == {"count": 2, "lines": [4, 5], "truncated": False}
    assert r.warnings[-1].line == 4 and "(line 4, 5)" in r.warnings[-1].message


def test_lines_a_reader_takes_or_drops_on_purpose_are_not_unread():
    # Every rank repeats the version; a section title is a block's structure.
    content = (b"a:1:1 [0] NCCL INFO NCCL version 2.23.4+cuda12.4\n"
               b"a:2:2 [1] NCCL INFO NCCL version 2.23.4+cuda12.4\n"
               b"---------------Speculative Decoding---------------\n")
    assert setting(parse(content), "unread")["count"] == 0


CASES = sorted(CORPUS.glob("*.log")) + sorted(CORPUS.glob("*.txt")) + sorted(CORPUS.glob("*.sh"))


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_every_engine_reads_the_same_context(path):
    """The watcher sees each engine's lines; dirty copies (CRLF, colours) and MPI-tagged ones (the
    native scanner takes a tag off itself) are read cleaned alike."""
    raw = path.read_bytes()
    dirty = raw.replace(b"\n", b"\r\n").replace(b"NCCL INFO", b"\x1b[1;36mNCCL INFO\x1b[0m", 3)
    tagged = b"\n".join(b"[1,0]<stdout>:" + line if line else line for line in raw.split(b"\n"))
    for content in (raw, dirty, tagged):
        got = [{k: setting(r, k) for k in ("topology", "versions", "unread", "context")} | {"warnings": [
            (w.line, w.message) for w in r.warnings]} for r in (parse(content, e) for e in ("lines", "chunks", "native"))]
        assert got[0] == got[1] == got[2], path.name


@SETTINGS
@given(st.lists(st.sampled_from([b"Throughput", b"throughput", b"acceptance len", b"Acceptance Rate", b"Accept length",
                                 b"AVG bus Bandwidth", b"SpecDecoding", b"set BY environment", b"RCCL Version",
                                 b"statistics  x:", b"Speculative", b"NCCL_ALGO=Ring", b"NCCL_PROTO set to x",
                                 b"x", b" ", b":", b"\xc5\xbf", b"\xe2\x84\xaa", b"\xc4\xb1", b"_", b"=", b"NCCL",
                                 b"ccl version", b"bandwidth", b"spec"]), max_size=8))
def test_the_context_watchers_quick_look_passes_every_line_its_words_find(parts):
    line = b"".join(parts).decode()
    watcher = context.Watcher()
    watcher.offer(1, line)
    assert (1 in watcher.candidates) == bool(context.WORDS.search(line) and not context._SKIP.search(line))


# WORDS as it was written before offer() read its case-blind words in lower(): the reference.
_WORDS_AS_WRITTEN = context.re.compile(
    r"throughput|acceptance? (?:len|rate)|Accept length|(?i:avg bus bandwidth|specdecod|set by environment|"
    r"[NR]CCL version)|statistics +\S+:|Speculative|NCCL_[A-Z0-9_]+ set to |(?<![\w.])NCCL_[A-Z0-9_]+="
)


def _candidate(line: str) -> bool:
    """offer()'s verdict as it was: WORDS as written, then _SKIP's search on every line."""
    return bool(_WORDS_AS_WRITTEN.search(line) and not context._SKIP.search(line))


def _offered(line: str) -> bool:
    watcher = context.Watcher()
    watcher.offer(1, line)
    return 1 in watcher.candidates


def test_the_watcher_takes_the_real_lines_it_took_before_and_no_other():
    """Every real line of the corpus and samples, and damaged copies of those that hold WORDS
    (cut, case changed, a word's neighbour changed, made non-ASCII)."""
    from tests.test_scan_launch import _damaged, _real_lines

    worded = 0
    for line in _real_lines():
        assert bool(context.WORDS.search(line)) == bool(_WORDS_AS_WRITTEN.search(line)), line
        assert _offered(line) == _candidate(line), line
        if _WORDS_AS_WRITTEN.search(line.lower()) or _WORDS_AS_WRITTEN.search(line):
            worded += 1
            for bad in (*_damaged(line), line.replace("NCCL_", ".NCCL_"), line.replace("NCCL_", "xNCCL_"),
                        line.replace(" NCCL ", "-NCCL "), line.swapcase(), "---" + line, line + " batch",
                        line.replace("s", "\u017f"), line.replace("K", "\u212a"), line.replace("k", "\u212a")):
                assert bool(context.WORDS.search(bad)) == bool(_WORDS_AS_WRITTEN.search(bad)), bad
                assert _offered(bad) == _candidate(bad), bad
    assert worded > 300


class _GroupedSink:
    """Takes the rows as the ingest digest does: the scanner's as Grouped batches."""

    takes_groups = True

    def __call__(self, result) -> None:
        result.take_rows()


def test_records_a_sink_takes_strike_their_lines_off_and_leave_the_rest_unread(monkeypatch):
    # A real bench block's throughput rows are candidates (a format's words) whose records the scanner
    # writes; with a small spill they reach the sink batch by batch, each batch striking its lines off.
    block = (Path(__file__).parent / "corpus" / "serving" / "vllm_bench_serve_baseline_block_pr35714.txt").read_bytes()
    content = (block + b"Speculative decoding was on\n") * 50
    size = block.count(b"\n") + 1
    odd = [size * (k + 1) for k in range(50)]
    monkeypatch.setattr("ingest.parsers.SPILL_AT", 64)
    spilled = setting(parse_stream(io.BytesIO(content), sink=_GroupedSink(), engine="native"), "unread")
    assert spilled == setting(parse(content, "lines"), "unread")
    # The odd lines are unread, and so are the rows of a repeated block no record is written for (the
    # lines engine's own reading); the rows whose records the sink took are not.
    assert spilled["lines"][:2] == [odd[0], odd[0] + 8] and spilled["count"] < 4 * 50


def test_past_the_candidates_held_the_unread_count_stops_and_says_so(monkeypatch):
    # Real bench blocks repeated: their rows are candidates, the odd lines and a repeated block's
    # rows no record is written for unread; past the cap no line is held, whichever engine (C or
    # offer()) settles the offer, and the count says it stopped.
    block = (Path(__file__).parent / "corpus" / "serving" / "vllm_bench_serve_baseline_block_pr35714.txt").read_bytes()
    content = (block + b"Speculative decoding was on\n") * 200
    whole = setting(parse(content, "lines"), "unread")
    monkeypatch.setattr(context, "MAX_CANDIDATES", 30)
    capped = [setting(parse(content, engine), "unread") for engine in ("lines", "native")]
    assert capped[0] == capped[1]
    assert whole["truncated"] is False and capped[0]["truncated"] is True
    assert 0 < capped[0]["count"] < 30 < whole["count"] and capped[0]["lines"] == whole["lines"]


class _WatcherAsItWas(context.Watcher):
    """Watcher.text as it was: every head line cut out, cleaned if it is dirty or MPI-tagged, matched
    alone (the reference the one search of the text is held to)."""

    def text(self, first, body, dirty, clean, count=None):
        if first > context.HEAD_SCAN_LINES:
            return
        lines = body.split("\n", context.HEAD_SCAN_LINES - first + 1)[:context.HEAD_SCAN_LINES - first + 1]
        wanted = set(dirty) if clean is not None else set()
        for k, line in enumerate(lines):
            if clean is not None and (k in wanted or line[:1] == "[" and "]<std" in line):
                lines[k] = line = clean(line)
            if len(self.head) < context.HEAD_LINES:
                self.head.append(line)
            if context._CTX.match(line):
                self.dump(first + k, line)


def _watched_as_both(content: bytes, sizes: list[int]):
    """What the Watcher (told each chunk's count of lines, as parse_stream does, and not told it) and the
    reference keep of `content` cut into chunks of `sizes` lines (the last size repeated), each chunk as
    read_chunks gives it (a text.Text or lines)."""
    from ingest.parsers import text

    lines = content.split(b"\n")
    watchers = (context.Watcher(), context.Watcher(), _WatcherAsItWas())
    first, k = 1, 0
    while first <= len(lines):
        size = sizes[min(k, len(sizes) - 1)]
        chunk = text._decode_block(b"\n".join(lines[first - 1:first - 1 + size]), texts=True)
        for i, w in enumerate(watchers):
            if isinstance(chunk, text.Text):
                w.text(first, chunk.raw, chunk.dirty, text.clean, *([len(chunk)] if i == 0 else []))
            else:
                w.chunk(first, chunk)
        first, k = first + len(chunk), k + 1
    got = [(w.head, w.versions, w.dump_lines, w.topo_columns, w.topo_line, w.topo_rows) for w in watchers]
    assert got[0] == got[1]
    return got[1:]


_CONTEXT_LINES = ["GPU0\tX \tNV12\t0-9", "  GPU1   NV12   X   0-9", "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity",
                  "GPU0 X", "GPU0", "GPU0\t", "xGPU0 X", "[pip3] torch==2.7.1", "[pip] nvidia-nccl-cu12==2.26.2",
                  "[conda] triton 3.3.1", "vLLM Version : 0.8.5", "PyTorch version: 2.7", "CUDA Driver Version : 570",
                  "sglang: 0.4.6", "sglang", ": 1.0", "vllm  :", "torch", "transformers:\t4.5", "triton:3",
                  "\x1b[1;36mGPU0\x1b[0m\tX\tNV12", "\x1b[32m[pip3] torch==2.6\x1b[0m", "[1,0]<stdout>:GPU0\tX\tNV4",
                  "[1,1]<stderr>:[pip3] vllm==0.9", "[0,0]<stdout>:sglang: 0.5", "x]<stdout>:GPU0 X",
                  "GPU1 NV12 X\r", "> GPU0 X NV12", "vLLM Version : 0.8 \u00e9", "[pip3] torch==2.7\u2026", "", " ", "x",
                  "[1,0]<stdout>:[1,1]<stderr>:GPU0 X NV2", "[1,0]<stdout>:> [conda] triton 3.1", "[2,3]<stdout>:#  size",
                  "[123456789012,1]<stdout>:GPU0 X NV2", "[1,0]<stdout>:\x1b[1mGPU0\x1b[0m X", "[1,0]<stdout>:GP\x1b[0mU0 X",
                  "[1,0]<stdout>:  GPU1\tNV4\tX", "[1,0]<stdout>:PyTorch version: 2.1", "[1,0]<stdout>:x\r[pip] torch 2"]


@SETTINGS
@given(st.lists(st.sampled_from(_CONTEXT_LINES), max_size=40), st.lists(st.integers(1, 9), min_size=1, max_size=4),
       st.integers(1, 12), st.integers(0, 6), st.sampled_from([2, 1000]))
def test_the_watchers_search_of_a_chunk_finds_the_dumps_each_line_did(lines, sizes, head_scan, head_lines, many):
    """Dumps, cleaned copies of them and lines that only look like them, in chunks that cross the
    head's end (a small HEAD_SCAN_LINES), dirty and tagged alike."""
    content = "\n".join(lines).encode()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(context, "HEAD_SCAN_LINES", head_scan)
        mp.setattr(context, "HEAD_LINES", head_lines)
        mp.setattr(context, "MANY_TAGGED", many)  # past `many` tags each line looked at, as MPI's own logs are
        got, want = _watched_as_both(content, sizes)
    assert got == want


@pytest.mark.parametrize("many", [2, 1000])
@pytest.mark.parametrize("head_lines", [0, 2, 40])
def test_mpi_tagged_dumps_past_the_heads_kept_lines_are_read_cleaned(many, head_lines, monkeypatch):
    """A topology and versions printed under MPI's tags, in chunks of ASCII text (text.Text), the tags
    the only change clean() makes: found past the head's kept lines as in them."""
    tag = "[1,{}]<stdout>:"
    dump = ["x", tag.format(0) + "\tGPU0\tGPU1\tCPU Affinity", tag.format(0) + "GPU0\t X \tNV4\t0-9",
            tag.format(1) + "GPU1\t NV4\t X \t0-9", tag.format(1) + "PyTorch version: 2.1", "y",
            tag.format(0) + "[pip3] triton==3.1", "[123456789012,1]<stdout>:[pip3] torch==2.1", tag.format(2) + "#  size",
            tag.format(3) + "[pip] nvidia-nccl-cu12==2.26.2"]
    monkeypatch.setattr(context, "MANY_TAGGED", many)
    monkeypatch.setattr(context, "HEAD_LINES", head_lines)
    for sizes in ([3], [9], [1, 4]):
        got, want = _watched_as_both("\n".join(dump).encode(), sizes)
        assert got == want
        assert want[1] == {"torch": ("2.1", 5), "triton": ("3.1", 7), "nvidia-nccl-cu12": ("2.26.2", 10)}
        assert want[3] and want[5]  # the topology's columns and rows


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_the_watcher_keeps_the_dumps_of_real_files_it_kept_before(path):
    raw = path.read_bytes()
    tagged = b"\n".join(b"[1,0]<stdout>:" + line if k % 3 else line for k, line in enumerate(raw.split(b"\n")))
    coloured = raw.replace(b"GPU", b"\x1b[1mGPU", 5).replace(b"\n", b"\r\n", 7)
    for content in (raw, tagged, coloured):
        for sizes in ([7], [1, 2, 40], [10_000]):
            got, want = _watched_as_both(content, sizes)
            assert got == want, path.name
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(context, "HEAD_SCAN_LINES", 25)
                got, want = _watched_as_both(content, sizes)
            assert got == want, path.name
    assert raw.count(b"GPU0") == 0 or _watched_as_both(raw, [7])[0][2]  # a dump file's dumps are found at all


def _wanted_as_it_was(names):
    """_wanted as it was: one pattern of every literal, one of every STARTS without its newline."""
    from ingest.parsers import PARSERS

    literals = sorted({t for n in names for t in PARSERS[n].TRIGGERS}, key=lambda t: (-len(t), t))
    pattern = context.re.compile("|".join(map(context.re.escape, literals)) or "(?!)")
    starts = [s.pattern[2:] for n in names if (s := PARSERS[n].STARTS) is not None]
    start = context.re.compile("|".join(f"(?:{s})" for s in starts)) if starts else None
    return lambda line: pattern.search(line) is not None or (start is not None and start.match(line) is not None)


def test_what_the_watcher_wants_is_what_one_pattern_of_the_readers_wanted():
    """Every real line, damaged copies of them and the shapes each STARTS takes, for every reader
    alone and for all of them (the STARTS matched as compiled, after a newline)."""
    from ingest.parsers import PARSERS, _wanted
    from tests.test_scan_launch import _damaged, _real_lines

    shapes = ["$ python -m sglang", "+ env", "(venv) $ vllm serve", "(a (b)) [x]", "user@host:~$ ls", "NCCL_ALGO=Ring",
              "export X=1", "export\tX", "env FOO=1 cmd", "Élan=1", "  Successful requests:  10", "\tBenchmark duration (s): 3",
              "# nThread 1", "  8  2  float", " \u00e9", "  #", "0", "Throughput is high", "Environment ok", "A=1 throughput",
              "", " ", "\t", "x", "\\n", "Xthroughput", "e", "en", "export"]
    lines = [*_real_lines(), *shapes]
    lines += [bad for line in shapes for bad in _damaged(line)]
    for names in [tuple(PARSERS), *((n,) for n in PARSERS)]:
        got, want = _wanted(names), _wanted_as_it_was(names)
        differ = [line for line in lines if got(line) != want(line)]
        assert not differ, (names, differ[:5])
    assert sum(map(_wanted(tuple(PARSERS)), lines)) > 1000  # the lines it wants are many, not none


@given(st.lists(st.tuples(st.lists(st.integers(1, 60), max_size=8), st.lists(st.integers(1, 60), max_size=8),
                          st.lists(st.integers(1, 60), max_size=8)), max_size=8))
def test_harvest_strikes_what_it_would_from_a_fresh_look_at_the_candidates(steps):
    """The open candidates harvest() keeps between calls (made again only when candidates grew) strike
    off what candidates - used, made afresh each call, would: every marked or recorded candidate line."""
    from types import SimpleNamespace

    from ingest.parsers.records import ParseResult

    watcher, want = context.Watcher(), set()
    for offered, marked, recorded in steps:
        watcher.candidates.update(offered)  # (as the scanner adds them, straight into the set)
        result = ParseResult()
        result.used.update(marked)
        result.nccl = [SimpleNamespace(line=n) for n in recorded]
        watcher.harvest(result)
        want |= (set(marked) | set(recorded)) & watcher.candidates
        assert watcher.used == want and not result.used
