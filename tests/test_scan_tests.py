"""The native scanner reads nccl-tests table rows, the comment lines the reader passes over, table
headers it has seen before and footers in C (ingest/parsers/_scan_tests.h) exactly as
nccl_tests.Parser reads them: real outputs of several nccl-tests versions and their column sets,
then the same lines damaged (cut, huge or odd numbers, odd spacing, N/A, non-ASCII), give the line
engine's records whichever engine reads."""

from __future__ import annotations

import io
from unittest import mock

from hypothesis import given
from hypothesis import strategies as st

from bench import mixes
from ingest.parsers import _scan, nccl_tests, parse_stream, processes, serving
from runs import digest
from runs.summary import summarize
from tests.samples import PROJECT_ROOT
from tests.test_parsers_engine import SETTINGS
from tests.test_parsers_native import _fed_by_python, _same


def _real_outputs() -> list[bytes]:
    """Every whole nccl-tests output among the real logs of the repository (its samples and corpus,
    which holds the shared public samples verbatim: every clone tests the same outputs), by content
    as the bench's mix picks them."""
    roots = [PROJECT_ROOT / "samples", PROJECT_ROOT / "tests" / "corpus"]
    out = []
    for path in mixes.source_files(roots):
        data = path.read_bytes()
        if mixes.kind(data.decode("utf-8", errors="replace")) == "nccl_tests":
            out.append(data)
    return out


OUTPUTS = _real_outputs()
ROWS = [line for data in OUTPUTS for line in data.split(b"\n") if line.lstrip()[:1].isdigit()]
HEADERS = [line for data in OUTPUTS for line in data.split(b"\n") if b"busbw" in line and b"size" in line]
NAMED = b"# Collective test starting: all_reduce_perf\n"


def test_the_real_outputs_are_several_versions_and_column_sets():
    assert len(OUTPUTS) >= 8
    widths = {len(line.split()) for line in HEADERS}
    assert len(widths) >= 3  # with and without the in-place half, an #iters column, 2.18's spacing
    assert len(ROWS) > 60


def test_every_real_output_gives_the_records_lines_give_at_every_chunk_size():
    for data in OUTPUTS:
        for batch in (1 << 6, 1 << 10, 1 << 21):
            _same(data, batch, batch)
            _same(data, batch, batch, spill_at=3, grouped=True)


def test_real_outputs_pasted_one_after_another_and_grown_long_give_their_records():
    data = b"\n".join(OUTPUTS) + b"\n"
    _same(data * 20, 1 << 14, 1 << 14)
    _same(data * 5, 1 << 12, 1 << 12, spill_at=7, grouped=True)


def test_the_rows_of_a_named_table_are_read_in_c():
    """A test's rows and its blank `#` and units lines: none is fed to Python once its table is open."""
    header = next(h for h in HEADERS if h.startswith(b"#") and len(h.split()) == 14)
    rows = [r for r in ROWS if len(r.split()) == 13 and b"N/A" not in r][:20]
    assert len(rows) == 20
    footer = b"# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.5 \n"
    few = NAMED + header + b"\n" + b"\n".join(rows) + b"\n" + footer
    body = b"#\n# Using devices\n#        (B)    (elements)      (us)  (GB/s)  (GB/s)\n" * 100
    many = NAMED + header + b"\n" + body + b"\n".join(rows * 500) + b"\n" + footer
    assert _fed_by_python(many) == _fed_by_python(few)
    _same(many, 1 << 12, 1 << 12)


def with_lines(outputs: list[bytes], inserted: list[tuple[int, bytes]]) -> bytes:
    """The outputs one after another, each (place, line) of `inserted` put in at its place (modulo
    the lines there are)."""
    lines = b"\n".join(outputs).split(b"\n")
    for at, line in inserted:
        lines.insert(at % (len(lines) + 1), line)
    return b"\n".join(lines) + b"\n"


def _cells(row: bytes) -> list[bytes]:
    return row.split()


# What copies and odd builds do to a row's cells and spacing.
ODD_CELLS = [b"N/A", b"n/a", b"1" * 19, b"9" * 18, b"-" + b"9" * 17, b"-" + b"9" * 18, b"1e3", b"+5", b"1_000",
             b".5", b"5.", b"--5", b"-0", b"007", b"inf", b"nan", b"-inf", b"12.5", b"0.0000000000000000001",
             b"123456789.123456789123", b"3*", b"float", b"sum", b"throughput", b"acceptance", b"len",
             b"\xc2\xb5s", b"\xef\xbc\x95", b"\xd9\xa3", b"caf\xc3\xa9", b"-", b"", b"0x10", b"1e400"]
SPACES = [b" ", b"  ", b"\t", b"\x0b", b"\x0c", b"\x1c", b"\x1f", b" \t "]


@st.composite
def damaged_tables(draw) -> bytes:
    """A real header (named or not, some of them behind a footer), then real rows damaged."""
    parts = []
    if draw(st.booleans()):
        parts.append(NAMED.rstrip(b"\n"))
    parts.append(draw(st.sampled_from(HEADERS)))
    for _ in range(draw(st.integers(1, 25))):
        row = draw(st.sampled_from(ROWS))
        kind = draw(st.integers(0, 9))
        if kind == 0:  # cut
            row = row[: draw(st.integers(0, len(row)))]
        elif kind in (1, 2):  # a cell replaced
            cells = _cells(row)
            if cells:
                cells[draw(st.integers(0, len(cells) - 1))] = draw(st.sampled_from(ODD_CELLS))
            row = b" ".join(cells)
        elif kind == 3:  # odd spacing
            cells = _cells(row)
            row = draw(st.sampled_from([b"", b" ", b"\t", b"    "])) + b"".join(
                c + draw(st.sampled_from(SPACES)) for c in cells)
        elif kind == 4:  # wrong elements (the table's first is warned about)
            cells = _cells(row)
            if len(cells) > 9:
                cells[9] = draw(st.sampled_from([b"1", b"0", b"N/A", b"12"]))
            row = b" ".join(cells)
        elif kind == 5:  # a trailing word, or a non-ASCII one
            row += draw(st.sampled_from([b" x", b" \xc3\xa9", b" N/A", b" 5", b"  throughput 1"]))
        elif kind == 6:  # lines between rows: a footer, comments, an NCCL line, a new header
            row = draw(st.sampled_from([
                b"# Avg bus bandwidth    : 7.39538 ", b"# Out of bounds values : 0 OK", b"#", b"# Using devices",
                b"#  Rank  0 Group  0 Pid   1377 on         vm device  0 [0000:00:06] NVIDIA H200",
                b"vm:1377:1377 [0] NCCL INFO comm 0x1 rank 0 nranks 2 - Destroy COMPLETE",
                b"# Collective test concluded: all_gather_perf", b"  # (us)  (GB/s)", b"# out-of-place weird",
                draw(st.sampled_from(HEADERS)), NAMED.rstrip(b"\n")]))
        parts.append(row)
    return b"\n".join(parts) + b"\n"


@SETTINGS
@given(st.lists(damaged_tables(), min_size=1, max_size=4), st.sampled_from([1 << 8, 1 << 12, 1 << 21]),
       st.integers(1, 40), st.booleans())
def test_damaged_rows_give_the_records_lines_give(tables, batch, spill_at, grouped):
    _same(b"".join(tables), batch, batch, spill_at, grouped)


def test_the_names_a_row_may_hold_in_c_are_the_readers_own():
    from ingest.parsers import native

    scan = native.scanner([nccl_tests.Parser(nccl_tests.ParseResult())])
    assert scan.take_collectives() is None
    words = sorted(nccl_tests._DTYPES | nccl_tests._REDOPS)
    assert all(w.isidentifier() and w.isascii() for w in words)


def test_a_digest_of_rows_read_in_c_summarizes_as_the_records_do(monkeypatch):
    data = (b"\n".join(OUTPUTS) + b"\n") * 6
    monkeypatch.setattr(digest, "COLLECTIVES_KEPT", 50)
    sink = digest.ParseDigest()
    result = parse_stream(io.BytesIO(data), sink=sink)
    got = summarize(result, sink.rows(result))
    assert got == summarize(parse_stream(io.BytesIO(data), engine="lines"))
    assert got["collectives_total"] > 500 and len(got["collectives"]) == 50


DEVICES = [line for data in OUTPUTS for line in data.split(b"\n") if b"Pid" in line and b"Rank" in line]


def _device_variant(row: bytes, kind: int) -> bytes:
    """A real device row changed as copies and other runs change it."""
    cells = row.split(b" ")
    if kind == 0:  # another rank or pid
        return row.replace(b"Rank  0", b"Rank 99").replace(b"Rank  1", b"Rank  2")
    if kind == 1:
        return row.replace(b"Pid ", b"Pid 7")
    if kind == 2:  # odd spacing
        return b"\t".join(c for c in cells if c) if not row.startswith(b"[") else row
    if kind == 3:  # a GPU name with words the context watcher looks for
        return row + draw_suffix[len(row) % len(draw_suffix)]
    if kind == 4:  # cut
        return row[: len(row) * 2 // 3]
    if kind == 5:  # an empty name, a bus id without its bracket
        return row[: row.rfind(b"]") + 1] + b"   " if b"]" in row else row
    if kind == 6:
        return row.replace(b"[", b"(")
    if kind == 7:
        return row + b" \xc3\xa9"
    return row + b" Throughput NCCL version"


draw_suffix = [b" (Avg bus bandwidth)", b" Speculative", b" statistics x:"]


def _devices_fed_by_python(data: bytes) -> int:
    """Device rows the Tagger was fed in Python (it sees every line the scanner hands back)."""
    feed = processes.Tagger.feed
    with mock.patch.object(processes.Tagger, "feed", autospec=True, side_effect=feed) as fed:
        parse_stream(io.BytesIO(data), engine="native")
    # (Rows of builds that print no `Group` are the reader's alone: the Tagger makes no process of them.)
    return sum(1 for call in fed.call_args_list if nccl_tests._DEVICE.match(call.args[2]))


def test_device_rows_of_known_processes_are_read_in_c():
    data = b"\n".join(OUTPUTS) + b"\n"
    assert len(DEVICES) > 30
    _same(data * 8, 1 << 13, 1 << 13)
    # Past the first copy, each row names a process the Tagger knows and a rank the reader knows: C's.
    assert _devices_fed_by_python(data * 8) == _devices_fed_by_python(data) > 0


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(OUTPUTS), st.lists(st.tuples(st.sampled_from(DEVICES), st.integers(0, 8)),
                                                             max_size=6)), min_size=1, max_size=4),
       st.sampled_from([1 << 8, 1 << 12, 1 << 21]))
def test_device_rows_changed_give_the_records_lines_give(parts, batch):
    out = []
    for output, devices in parts:
        lines = output.split(b"\n")
        at = next((i for i, line in enumerate(lines) if b"Pid" in line), len(lines) // 2)
        extra = [_device_variant(row, kind) for row, kind in devices]
        out.append(b"\n".join(lines[:at] + extra + lines[at:]))
    data = b"\n".join(out) + b"\n"
    _same(data, batch, batch)
    _same(data * 2, batch, batch)


def test_a_device_row_of_a_pid_read_before_but_written_otherwise_is_the_taggers():
    """A pid read in C stays known till Python runs; the same number written with a leading zero
    is another tag (`pid 01377`), a process the Tagger has not made: Python's, in the same scan."""
    row = next(r for r in DEVICES if b"Group" in r and b"Pid   1377" in r)
    output = next(o for o in OUTPUTS if row in o)
    padded = row.replace(b"Pid   1377", b"Pid  01377")
    data = output + b"\n" + b"\n".join([row, row, padded, row, padded]) + b"\n"
    _same(data, 1 << 21, 1 << 21)
    _same(data * 3, 1 << 9, 1 << 9)
    # The first such row: the Tagger makes its process, and the second is C's again.
    assert _lines_fed_by_python(data, lambda line: "01377" in line) == 1


def test_device_rows_of_more_processes_than_the_scanner_keeps_give_the_records_lines_give():
    """A scan keeps the pids whose device rows it read (48 at most); past them a row's process is
    looked up again, and a pid never seen, after them all, is the Tagger's (it makes the process)."""
    output = next(o for o in OUTPUTS if len({r.split(b"Pid")[1].split()[0] for r in DEVICES if r in o}) >= 16)
    rows = [r for r in output.split(b"\n") if b"Pid" in r and b"Group" in r]
    pid = rows[0].split(b"Pid")[1].split()[0]
    many = [rows[k % len(rows)].replace(b"Pid" + rows[k % len(rows)].split(b"Pid")[1].split(b"on")[0],
                                        b"Pid  " + str(70000 + k).encode() + b" ") for k in range(60)]
    assert len({r.split(b"Pid")[1].split()[0] for r in many}) == 60 and pid not in b"".join(many)
    stranger = many[7].replace(b"70007", b"80007")
    seen = output + b"\n".join(many) + b"\n"
    data = seen + b"\n".join(many + many[::-1] + [stranger] + many) + b"\n"
    _same(data, 1 << 21, 1 << 21)
    _same(data, 1 << 10, 1 << 10)
    # Past their first sight, each row is C's but the stranger's first.
    assert _lines_fed_by_python(data, lambda line: "Pid" in line) == \
        _lines_fed_by_python(seen, lambda line: "Pid" in line) + 1


# The words the context watcher looks for and the literals _comment looks for (tests_marks finds
# them by their first two letters, in any case where the watcher's case is any).
WATCHED = [b"throughput", b"acceptance", b"accept length", b"avg bus bandwidth", b"specdecode", b"set by environment",
           b"statistics x:", b"speculative", b"nccl version", b"rccl version", b"nccl_x", b"busbw", b"Out of bounds",
           b"Collective test", b"nThread", b"nccl-tests version"]


def _cases(word: bytes) -> list[bytes]:
    """The word with its first two letters in each case, and all in capitals."""
    out = [word.upper()]
    for first in (bytes.lower, bytes.upper):
        for second in (bytes.lower, bytes.upper):
            out.append(first(word[:1]) + second(word[1:2]) + word[2:])
    return out


def test_device_rows_and_comments_holding_a_watched_word_in_any_case_give_the_records_lines_give():
    output = next(o for o in OUTPUTS if b"Group  0 Pid   1377" in o)
    device = next(r for r in output.split(b"\n") if b"Pid   1377" in r and r.startswith(b"#"))
    lines = []
    for word in WATCHED:
        for variant in _cases(word):
            lines += [device + b" " + variant, device.replace(b"NVIDIA", variant), b"# " + variant + b" 1",
                      b"#  " + variant]
    data = output + b"\n".join(lines) + b"\n" + output
    _same(data, 1 << 21, 1 << 21)
    _same(data, 1 << 9, 1 << 9)


# tests_marks' words (_scan_tests.h), as _comment's literals and the context watcher's words read them:
# (mark, word, any case).
_MARKED = [(1, "Pid", False), (2, "Rank", False), (4, "busbw", False), (8, "Avg bus bandwidth", False),
           (16, "Out of bounds", False), (32, "Collective test", False), (64, "nThread", False),
           (128, "nccl-tests version", False),
           *((256, w, True) for w in ("acceptanc", "accept length", "avg bus bandwidth", "ccl version", "nccl_",
                                      "throughput", "specdecod", "set by environment", "statistics", "speculative"))]


def _marks(line: str) -> int:
    """What tests_marks finds, read with str's own search (a line over 1024 characters is wordy)."""
    low = line.lower()
    return (256 if len(line) > 1024 else 0) | sum(
        {bit for bit, word, any_case in _MARKED if word in (low if any_case else line)})


def _variants(word: str) -> list[str]:
    out = {word, word.upper(), word.lower()}
    for first in (str.lower, str.upper):
        for second in (str.lower, str.upper):
            out.add(first(word[:1]) + second(word[1:2]) + word[2:])
    return sorted(out)


@SETTINGS
@given(st.text(alphabet="PRbOAaCcnNtTsSiu _-x#0", max_size=80))
def test_the_marks_of_a_line_are_its_words_as_str_finds_them_with_and_without_avx2(noise):
    """tests_marks' vector search reads 32 places a step and the last step a padded copy: each word
    in each case at every place of a line's first steps, cut by its end or whole at it, among noise."""
    was = _scan.vector()
    lines = [noise, noise * 14]
    for _, word, _ in _MARKED:
        for variant in _variants(word):
            for at in range(0, 70, 1 if variant == word else 5):
                lines += [noise[:at] + " " * (at - len(noise[:at])) + variant + noise[at:],
                          "#" + "x" * at + variant, ("#" + "x" * at + variant)[:-1]]
    try:
        for vector in (True, False):
            _scan.vector(vector and was)
            for line in lines:
                assert _scan.tests_marks(line) == _marks(line), (vector, line)
    finally:
        _scan.vector(was)


def test_run_settings_lines_seen_before_are_read_in_c_and_a_new_setting_is_not():
    output = next(o for o in OUTPUTS if b"nThread" in o)
    settings = next(line for line in output.split(b"\n") if b"nThread" in line)
    newer = settings + b" newKey: 5"
    data = output + b"\n" + b"\n".join([settings] * 20 + [newer, settings, newer]) + b"\n"
    _same(data, 1 << 21, 1 << 21)
    _same(data, 1 << 8, 1 << 8)
    assert _lines_fed_by_python(data, lambda line: "nThread" in line) == \
        _lines_fed_by_python(output, lambda line: "nThread" in line) + 1  # the new setting's first line


def test_tables_cycling_through_more_headers_than_the_scanner_keeps_give_the_records_lines_give():
    header = next(h for h in HEADERS if h.startswith(b"#") and len(h.split()) == 14)
    short = next(h for h in HEADERS if h.startswith(b"#") and len(h.split()) == 10)
    row = next(r for r in ROWS if len(r.split()) == 13 and b"N/A" not in r)
    tables = [NAMED + (header if k % 2 else short) + b" " * k + b"\n" + row + b"\n" + row.replace(b" 0\n", b" 1\n")
              + b"\n# Out of bounds values : 0 OK\n# Avg bus bandwidth : 1.5\n" for k in range(12)]
    data = b"".join(tables) * 4
    _same(data, 1 << 10, 1 << 10)
    _same(data, 1 << 21, 1 << 21, spill_at=3, grouped=True)


COMMENTS = [line for data in OUTPUTS for line in data.split(b"\n") if line.lstrip().startswith(b"#")]
# Comment lines as other builds, copies and people write them.
ODD_COMMENTS = [
    b"# Collective test starting: /opt/nccl-tests/build/all_gather_perf_mpi", b"# Collective test starting: sendrecv",
    b"# Collective test concluded: all_reduce_perf", b"# Collective test starting:  two_spaces_perf",
    b"# Collective test starting: a_perf # Collective test concluded: b_perf", b"# Collective test starting:",
    b"# Collective test begun: x  Collective test starting: y_perf", b"# Collective test starting: throughput_perf",
    b"# Collective test starting: r\xc3\xa9duire_perf", b"  # Collective test starting: indented_perf",
    b"# nccl-tests version 2.20.0 nccl-headers=22907 nccl-library=22907", b"# nccl-tests version x",
    b"# nccl-tests version 9.9.9 nccl-headers=1 nccl-library=99999999999999999999",
    b"# a note on throughput", b"# NCCL version 2.21.5", b"# rccl version 2.20", b"# Rank 3 is slow",
    b"#  Rank  9 Group  0 Pid   9 on h device  0 [0x1] GPU", b"   #  Rank  0 Group  0 Pid   1377 on vm device  0 [0x1] X",
    b"# nThread 1 nGpus 1 minBytes 8", b"#\tUsing devices", b"#", b"# speculative", b"# _perf in a comment",
    b"# nThread 1 nGpus 1 minBytes 8 maxBytes 99999999999999999999", b"# nThread 1 newKey: 5", b"#nThread:1",
    b"# nThread  1 iters  : 5 x 7(a.b) c", b"## nThread 1 nGpus 2 Extra Field 3 graph: 0", b"# nThread 1 n Gpus 2",
    b"  # nThread 1 nGpus 1", b"# nThread 1 nGpus 1 minBytes 00000000000000000000008", b"# nThread 1 1 2 a:b: 3",
]


def logs_with(logs: list[bytes], lines: list[bytes]) -> st.SearchStrategy:
    """(a few of `logs` one after another with some of `lines` put in anywhere, a chunk size)."""
    return st.tuples(st.lists(st.sampled_from(logs), min_size=1, max_size=3).flatmap(
        lambda some: st.lists(st.tuples(st.integers(0, 400), st.sampled_from(lines)), max_size=12).map(
            lambda inserted: with_lines(some, inserted))), st.sampled_from([1 << 8, 1 << 12, 1 << 21]))


@SETTINGS
@given(logs_with(OUTPUTS, COMMENTS + ODD_COMMENTS))
def test_comment_lines_anywhere_give_the_records_lines_give(case):
    data, batch = case
    _same(data, batch, batch)
    _same(data * 2, batch, batch, spill_at=5, grouped=True)


def test_the_named_op_of_a_collective_test_line_read_in_c_names_the_next_table():
    header = next(h for h in HEADERS if h.startswith(b"#") and len(h.split()) == 14)
    row = next(r for r in ROWS if len(r.split()) == 13 and b"N/A" not in r)
    data = b"".join(
        b"# nccl-tests version 2.18.0 nccl-headers=22907 nccl-library=22907\n"
        b"# Collective test starting: /bin/" + op + b"_perf_mpi\n" + header + b"\n" + row + b"\n"
        b"# Avg bus bandwidth    : 1.5 \n# Collective test concluded: " + op + b"_perf\n"
        for op in (b"all_reduce", b"broadcast", b"reduce_scatter") * 3)
    result = parse_stream(io.BytesIO(data))
    assert [c.op for c in result.collectives[::2]] == ["all_reduce", "broadcast", "reduce_scatter"] * 3
    _same(data, 1 << 8, 1 << 8)



# Digit-led lines of other readers' (newer SGLang's `date LEVEL pid [file:line]` prefix, fastrl PR 4)
# and lines a table could take for rows: nccl_tests does nothing with the first where no row can
# come of them, and the scanner then reads them as their own reader's.
DATED = [line for line in (PROJECT_ROOT / "tests" / "corpus" / "shared" / "sglang_decode_altlogfmt_fastrl_pr4.log")
         .read_bytes().split(b"\n") if b"Decode batch" in line]
DIGIT_LED = [
    b"2025-12-04 20:35:53 INFO 151972 [x.py:287] Decode batch. #running-req: 1, gen throughput (token/s): 5.0, ",
    b"20:35:53 Decode batch. #running-req: 1, gen throughput (token/s): 5.0",
    b"1e-5 Decode batch. #running-req: 1, gen throughput (token/s): 5.0",
    b"  +5 Decode batch. #running-req: 1, gen throughput (token/s): 5.0",
    b"12 2 float sum -1 1.0 2.0 3.0 0 Decode batch. #running-req: 1, gen throughput (token/s): 5.0",
    b"1-2 3 float sum -1 1.0 2.0 3.0 0 1.0 2.0 3.0 0",
    b"2025-12-04\x1c20:35:53 Decode batch. #running-req: 1, gen throughput (token/s): 5.0",
]


@SETTINGS
@given(st.lists(st.sampled_from(["table", "header", "dated", "made", "named"]), min_size=1, max_size=12),
       st.integers(0, 10**6))
def test_digit_led_lines_of_other_readers_give_the_records_lines_give_before_during_and_after_tables(parts, seed):
    table = OUTPUTS[seed % len(OUTPUTS)].split(b"\n")
    header = [line for line in table if b"busbw" in line][:1]
    pieces = {"table": table, "header": header, "dated": DATED, "made": DIGIT_LED, "named": [NAMED.rstrip(b"\n")]}
    data = b"\n".join(line for part in parts for line in pieces[part]) + b"\n"
    _same(data, 1 << 10, 1 << 10)


def test_dated_decode_lines_are_read_in_c_with_or_without_an_nccl_tests_table_before_them():
    assert len(DATED) >= 2
    for before in (b"", NAMED + OUTPUTS[0]):
        data = before + b"\n".join(DATED * 200) + b"\n"
        _same(data)
        assert _fed_by_python(data) - (_fed_by_python(before) if before else 0) < 10


FOOTERS = [line for data in OUTPUTS for line in data.split(b"\n") if b"Avg bus bandwidth" in line or b"Out of bounds" in line]
# Footers and headers as other builds, copies and people write them (the first of each kind real).
ODD_FOOTERS = [
    b"# Avg bus bandwidth    : nan", b"# Avg bus bandwidth    : inf ", b"# Avg bus bandwidth    : 1e3",
    b"# Avg bus bandwidth    : 68.", b"# Avg bus bandwidth    : .5", b"# Avg bus bandwidth    : -1.5",
    b"# Avg bus bandwidth    : 0.2 FAILED", b"# Avg bus bandwidth    : 0.2FAILED", b"# Avg bus bandwidth    : 1.2.3",
    b"# Avg bus bandwidth    : 1" + b"0" * 30, b"# Avg bus bandwidth    : x", b"# Avg bus bandwidth",
    b"#Avg bus bandwidth:7", b"#\x1cAvg bus bandwidth\t:\x0b7.5 OK", b"  # Avg bus bandwidth    : 7.5",
    b"# Avg bus bandwidth    : 7.5 throughput", b"# avg bus bandwidth : 7.5", b"# Avg bus bandwidth    : 7.5 busbw",
    b"# Avg bus bandwidth    : 7.5_1", b"# Avg bus bandwidth    : 0.00000000000000000001234567890123",
    b"# Out of bounds values : 12 FAILED", b"# Out of bounds values : 0 FAILED", b"# Out of bounds values : 0FAILED",
    b"# Out of bounds values : 00 OK", b"# Out of bounds values : " + b"0" * 25, b"# Out of bounds values : " + b"9" * 19,
    b"# Out of bounds values : x", b"# Out of bounds values", b"#Out of bounds values:0", b"# Out of bounds: 0",
    b"# Out of bounds values : 0 OK throughput", b"  # Out of bounds values : 0 OK", b"# Out of bounds values : -1",
    b"# Out of bounds values\x1c:\t0\x0bOK", b"# Out of bounds values : 0 OK _perf",
]
ODD_HEADERS = [
    *(h.rstrip() + b"  " for h in HEADERS if h.startswith(b"#")), b"# busbw", b"# busbw size time",
    b"#  size time busbw", b"# size count type redop root time algbw busbw #wrong throughput",
    b"  " + HEADERS[0], b"#\tsize\tcount\ttype\tredop\troot\ttime\talgbw\tbusbw\t#wrong", b"# SIZE TIME BUSBW x",
    b"# size count type redop root time algbw busbw #wrong time algbw busbw #wrong time algbw busbw #wrong "
    b"time algbw busbw #wrong time algbw busbw #wrong",  # more sides than the scanner's columns hold
    b"# size count type redop root time algbw busbw #wrong _perf",
]


def _lines_fed_by_python(data: bytes, kept) -> int:
    """The lines `kept` takes that the Tagger was fed in Python, but MPI-tagged ones (a str subclass,
    always Python's)."""
    feed = processes.Tagger.feed
    with mock.patch.object(processes.Tagger, "feed", autospec=True, side_effect=feed) as fed:
        parse_stream(io.BytesIO(data), engine="native")
    return sum(1 for call in fed.call_args_list if type(call.args[2]) is str and kept(call.args[2]))


def test_headers_and_footers_of_real_outputs_are_read_in_c_past_their_first_sight():
    data = b"\n".join(OUTPUTS) + b"\n"
    assert len(FOOTERS) > 8 and len(HEADERS) > 8

    def kept(line: str) -> bool:
        return "busbw" in line or "Avg bus bandwidth" in line or "Out of bounds" in line

    assert _lines_fed_by_python(data * 8, kept) == _lines_fed_by_python(data, kept)
    _same(data * 8, 1 << 12, 1 << 12)
    _same(data * 3, 1 << 9, 1 << 9, spill_at=5, grouped=True)


@SETTINGS
@given(st.lists(st.sampled_from(OUTPUTS), min_size=1, max_size=3),
       st.lists(st.tuples(st.integers(0, 400), st.sampled_from(FOOTERS + ODD_FOOTERS + HEADERS + ODD_HEADERS)),
                max_size=12),
       st.integers(1, 3), st.sampled_from([1 << 8, 1 << 12, 1 << 21]))
def test_headers_and_footers_anywhere_give_the_records_lines_give(outputs, inserted, copies, batch):
    lines = b"\n".join(outputs).split(b"\n")
    for at, line in inserted:
        lines.insert(at % (len(lines) + 1), line)
    data = (b"\n".join(lines) + b"\n") * copies  # a header seen before is read in C
    _same(data, batch, batch)
    _same(data, batch, batch, spill_at=3, grouped=True)


def test_more_headers_than_the_reader_keeps_give_the_records_lines_give():
    header = next(h for h in HEADERS if h.startswith(b"#") and len(h.split()) == 14)
    row = next(r for r in ROWS if len(r.split()) == 13 and b"N/A" not in r)
    tables = [NAMED + header + b" " * k + b"\n" + row + b"\n# Out of bounds values : 0 OK\n# Avg bus bandwidth : 1.5\n"
              for k in range(nccl_tests.HEADERS_KEPT + 6)]
    data = b"".join(tables) * 2
    _same(data, 1 << 10, 1 << 10)
    result = parse_stream(io.BytesIO(data))
    assert [m.window for m in result.metrics][-2:] == [len(tables) * 2] * 2


# Digit-led lines that are no row (their size cell is no number float() reads): real ones of an MPI
# warning between two outputs, and cells of float()'s grammar, read or refused.
MCA = [line for line in (PROJECT_ROOT / "tests" / "corpus" / "nccl" / "nccl_tests_command_echo_alltoall_2.30.3_report.log")
       .read_bytes().split(b"\n") if b"MCA variable:" in line]


def test_digit_led_lines_of_no_row_are_read_in_c_inside_and_outside_tables():
    assert len(MCA) == 2
    table = OUTPUTS[0]
    for before in (b"", NAMED + table, NAMED + table.split(b"# Out of bounds")[0]):
        data = before + b"\n".join(MCA * 100) + b"\n"
        _same(data, 1 << 10, 1 << 10)
        assert _lines_fed_by_python(data, lambda line: "MCA variable" in line) < 3


@SETTINGS
@given(st.text(alphabet="0123456789_.eE+-infatyINFATYx:", max_size=8), st.integers(0, 3),
       st.sampled_from([b"", b" 2 float sum -1 1.0 2.0 3.0 0 1.0 2.0 3.0 0", b" 2 float sum -1 1.0 2.0 3.0 0", b" x y"]))
def test_a_first_cell_float_reads_or_refuses_gives_the_records_lines_give(cell, where, rest):
    line = b"  1" + cell.encode() + rest
    header = next(h for h in HEADERS if h.startswith(b"#") and len(h.split()) == 14)
    table = NAMED + header + b"\n" + next(r for r in ROWS if len(r.split()) == 13) + b"\n"
    before = [b"", table, table + b"# Out of bounds values : 0 OK\n", b"# Collective test starting: x_perf\n"][where]
    _same(before + line + b"\n" + line + b"\n", 1 << 8, 1 << 8)


def test_footers_read_in_c_are_offered_to_the_context_watcher_as_python_offers_them(monkeypatch):
    from ingest.parsers import context

    # An average line holds a format's words: a candidate, struck off by its own metric. Only the
    # bound on candidates shows the offer (past it the count is marked truncated).
    monkeypatch.setattr(context, "MAX_CANDIDATES", 3)
    header = next(h for h in HEADERS if h.startswith(b"#") and len(h.split()) == 14)
    row = next(r for r in ROWS if len(r.split()) == 13 and b"N/A" not in r)
    average = next(f for f in FOOTERS if b"Avg bus bandwidth" in f)
    data = (NAMED + header + b"\n" + row + b"\n" + average + b"\n") * 5
    _same(data, 1 << 12, 1 << 12)
    assert parse_stream(io.BytesIO(data)).settings["unread"].value["truncated"]
    # Words offer() skips a line for (the scanner offers it whole then): no candidate, nothing truncated
    skipped = (NAMED + header + b"\n" + row + b"\n" + average.rstrip() + b" Decode batch\n") * 5
    _same(skipped, 1 << 12, 1 << 12)
    assert not parse_stream(io.BytesIO(skipped)).settings["unread"].value["truncated"]


def test_a_header_read_in_c_starts_its_tables_rows_afresh_for_a_late_name():
    # A table never named, its rows released past HOLD_LINES: the next table's late name (its
    # `concluded` line) renames its own rows only, whichever engine opened that table.
    header = next(h for h in HEADERS if h.startswith(b"#") and len(h.split()) == 14)
    rows = [r for r in ROWS if len(r.split()) == 13 and b"N/A" not in r][:3]
    data = (header + b"\n" + b"\n".join(rows) + b"\n" + b"#\n" * (nccl_tests.HOLD_LINES + 10) + header + b"\n"
            + rows[0] + b"\n# Collective test concluded: all_gather_perf\n")
    result = parse_stream(io.BytesIO(data))
    assert [c.op for c in result.collectives] == ["unknown"] * 6 + ["all_gather"] * 2
    _same(data, 1 << 14, 1 << 14)


def test_a_header_read_in_c_takes_its_op_from_the_starting_line_before_the_command_line():
    broadcast = (PROJECT_ROOT / "tests" / "corpus" / "nccl" / "nccl_tests_broadcast_v2.9.6_prompt_mpirun_issue82.log")
    command = broadcast.read_bytes().split(b"\n")[0]  # `mpirun ... ./build/broadcast_perf ...`
    header = next(h for h in HEADERS if h.startswith(b"#") and len(h.split()) == 14)
    row = next(r for r in ROWS if len(r.split()) == 13 and b"N/A" not in r)
    test = b"# Collective test starting: all_gather_perf\n" + header + b"\n" + row + b"\n# Avg bus bandwidth : 1.5\n"
    data = command + b"\n" + test * 3 + header + b"\n" + row + b"\n"
    result = parse_stream(io.BytesIO(data))
    assert b"broadcast_perf" in command
    assert [c.op for c in result.collectives] == ["all_gather"] * 8
    _same(data, 1 << 12, 1 << 12)


# MPI's --tag-output: every line of a rank's output behind `[job,rank]<stdout>:` (the corpus holds
# such outputs: nccl_tests_mpi_tagged_p5_aws_k8s_tester_pr503.txt), and what clean() must still do
# to some (a tag past its bound, a second wrapper, colours, a carriage return).
MPI_TAGS = [b"[1,0]<stdout>:", b"[1,1]<stdout>:", b"[1,0]<stderr>:", b"[12,3]<stdout>:", b"[007,02]<stdout>:",
            b"[123456,654321]<stdout>:", b"[1234567,654321]<stdout>:", b"[1," + b"9" * 18 + b"]<stdout>:",
            b"[1,0]<stdout>:> ", b"[1,0]<stdout>:[1,0]<stdout>:", b"[1,0]<stdin>:", b"[1,0]<stdout>: ",
            b"[1,0]<stdout>:\x1b[0m", b"[1,0]<stdout>:x\r", b"[,0]<stdout>:", b" [1,0]<stdout>:"]


def _mpi_tagged(data: bytes, tags: list[bytes], every: int) -> bytes:
    """`data` with every `every`-th line behind a tag (cycled through `tags`); a tag's "x\\r" goes
    first, the rest of the line after it (a tqdm rewrite keeps it)."""
    out = []
    for i, line in enumerate(data.split(b"\n")):
        if i % every == 0 and line:
            line = tags[i // every % len(tags)] + line
        out.append(line)
    return b"\n".join(out)


def test_mpi_tagged_real_outputs_give_the_records_lines_give():
    for data in OUTPUTS:
        for tags, every in (([b"[1,0]<stdout>:"], 1), (MPI_TAGS[:2], 1), (MPI_TAGS, 1), (MPI_TAGS, 3)):
            tagged = _mpi_tagged(data, tags, every)
            for batch in (1 << 8, 1 << 21):
                _same(tagged, batch, batch)
            _same(tagged, 1 << 21, 1 << 21, spill_at=3, grouped=True, vector=False)


def test_the_rows_of_an_mpi_tagged_table_are_read_in_c():
    """Tagged like the corpus' MPI output, a table's rows and comment lines are read in C once the
    rank's process is made (by the first tagged line, in Python): as many lines reach Python as untagged."""
    header = next(h for h in HEADERS if h.startswith(b"#") and len(h.split()) == 14)
    rows = [r for r in ROWS if len(r.split()) == 13 and b"N/A" not in r][:20]
    footer = b"# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.5 \n"
    few = NAMED + header + b"\n" + b"\n".join(rows) + b"\n" + footer
    many = NAMED + header + b"\n" + b"#\n# Using devices\n" * 100 + b"\n".join(rows * 500) + b"\n" + footer
    tag = [b"[1,0]<stdout>:"]
    assert _fed_by_python(_mpi_tagged(many, tag, 1)) <= _fed_by_python(_mpi_tagged(few, tag, 1)) + 1
    _same(_mpi_tagged(many, tag, 1), 1 << 12, 1 << 12)  # (the records' process, "mpi 1,0", held equal)


@SETTINGS
@given(st.lists(st.sampled_from(OUTPUTS), min_size=1, max_size=3), st.lists(st.sampled_from(MPI_TAGS), min_size=1,
       max_size=4), st.integers(1, 4), st.sampled_from([1 << 8, 1 << 12, 1 << 21]), st.booleans())
def test_mpi_tagged_outputs_anywhere_give_the_records_lines_give(outputs, tags, every, batch, vector):
    _same(_mpi_tagged(b"\n".join(outputs) + b"\n", tags, every), batch, batch, vector=vector)


MCA_OUTPUT = next(data for data in OUTPUTS if b"Source of value: environment" in data)
# The help box mpirun prints between the runs (its rule of dashes, `Source of value: environment`),
# and what is near it but is not it: a section title, a rule with text, an env dump, a quoted rule.
MCA_LINES = [b"-" * 74, b"------------", b"   ---   ", b"-\t---", b"----Speculative Decoding----", b"--- x ---",
             b"---x", b"    Source of value: environment", b"Source of value: environment", b"environ",
             b"  x pid=12 environ NCCL_*: a", b"environment pid=3", b"[1,0]<stdout>:" + b"-" * 20,
             b"[1,0]<stdout>:    Source of value: environment", b"> ----", b"#-----", b"----- throughput -----",
             b"set by environment ------", b"NCCL environ"]


def test_the_mca_help_box_of_a_real_output_is_read_in_c_past_its_first_lines():
    """Its rules and `Source of value: environment` lines concern the bench readers' `---` and the
    Tagger's `environ` alone, which do nothing with them: a box repeated reaches Python no more."""
    head, box, rest = MCA_OUTPUT.partition(b"-" * 74 + b"\n")
    box, end, rest = rest.partition(b"-" * 74 + b"\n")
    once = head + b"-" * 74 + b"\n" + box + end + rest
    many = head + (b"-" * 74 + b"\n" + box + end) * 50 + rest
    assert _fed_by_python(many) == _fed_by_python(once)
    _same(many, 1 << 12, 1 << 12)


def test_a_rule_of_dashes_without_a_letter_is_read_in_c_without_the_bench_readers():
    """serving._SECTION wants a letter between the dashes: a rule of none opens no block, and the
    scanner does not ask the bench readers (their open_section) whether it does."""
    rules = [b"-" * 74, b"   ---   ", b"-\t---", b"#-----", b"> ----"]
    data = MCA_OUTPUT + b"\n".join(rules * 20) + b"\n" + MCA_OUTPUT
    opened = serving.BlockReader.open_section
    with mock.patch.object(serving.BlockReader, "open_section", autospec=True, side_effect=opened) as spy:
        parse_stream(io.BytesIO(data), engine="native")
    assert [call.args[2] for call in spy.call_args_list if not any(c.isalpha() for c in call.args[2])] == []
    _same(data, 1 << 12, 1 << 12)


@SETTINGS
@given(logs_with(OUTPUTS, MCA_LINES))
def test_rules_and_environ_lines_anywhere_give_the_records_lines_give(case):
    _same(*case, case[1])


# Spacing that crosses the 64-byte words of a row's space mask (_scan_tests.h, tests_split): runs of
# spaces 1 to 70 long, tabs and other whitespace between cells, rows past the 504 bytes split by their
# mask (split a byte at a time there), a cell ending at a word's edge.
@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(ROWS), st.lists(st.integers(1, 70), min_size=1, max_size=16),
                          st.sampled_from([b"", b" ", b"\t", b"\x0b", b"\x1f", b" " * 63, b" " * 64])),
                min_size=1, max_size=12),
       st.sampled_from([1 << 8, 1 << 21]))
def test_rows_spaced_across_the_words_of_their_space_mask_give_the_records_lines_give(rows, batch):
    header = next(h for h in HEADERS if h.startswith(b"#") and len(h.split()) == 14)
    out = [NAMED.rstrip(b"\n"), header]
    for row, gaps, odd in rows:
        cells = _cells(row)
        line = odd
        for k, cell in enumerate(cells):
            line += cell + (b" " * gaps[k % len(gaps)] if k % 5 else odd or b" ")
        out.append(line)
    _same(b"\n".join(out) + b"\n", batch, batch)


def test_rows_at_the_edges_of_the_space_mask_are_read_in_c_and_give_the_records_lines_give():
    """Rows whose cells end at 63, 64 and 65 bytes and rows 500 to 520 bytes long (past 504: split a
    byte at a time); the ones of plain spaces are read in C."""
    header = next(h for h in HEADERS if h.startswith(b"#") and len(h.split()) == 14)
    row = next(r for r in ROWS if len(r.split()) == 13 and b"N/A" not in r)
    cells = _cells(row)
    lines = []
    for width in range(1, 60):  # the first cell right-aligned in `width` places: every edge crossed
        lines.append(b" ".join([cells[0].rjust(width + len(cells[0]))] + cells[1:]))
    for length in range(500, 521):
        line = b" ".join(cells)
        lines.append(b" " * (length - len(line)) + line)
    data = NAMED + header + b"\n" + b"\n".join(lines) + b"\n# Avg bus bandwidth    : 1.5 \n"
    _same(data, 1 << 21, 1 << 21)
    _same(data, 1 << 8, 1 << 8)
    assert _lines_fed_by_python(data * 3, lambda line: line.lstrip()[:1].isdigit()) == 0


def test_comment_lines_past_the_ones_a_scan_keeps_give_the_records_lines_give():
    """A scan keeps 128 `#` lines that changed nothing; more distinct ones (device rows of many ranks,
    titles) are read each time, and a line kept in one scan is read again in the next."""
    output = next(o for o in OUTPUTS if b"Group" in o and b"Pid   1377" in o)
    row = next(r for r in output.split(b"\n") if b"Pid   1377" in r and b"Rank  0" in r)
    extra = [row.replace(b"Rank  0", b"Rank %2d" % (k % 2)) for k in range(2)]
    extra += [b"# title %d of a long run" % k for k in range(300)]
    data = output + b"\n" + b"\n".join(extra * 3) + b"\n" + output
    for batch in (1 << 9, 1 << 14, 1 << 21):
        _same(data, batch, batch)
