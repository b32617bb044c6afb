"""ingest/parsers/eagle_profile.py: profile blocks, headerless steps and ms/iter tables.

A file keeps at most eagle_profile.PHASE_NAMES distinct phase names (issue 24, the
`distinct_names` cliff): later names' phase lines are left out and counted in one warning, alike
in the native engine (the C scanner counts them without interning the name) and the line engine,
and a parse of a profile of endless distinct names is flat in memory and linear in time."""

from __future__ import annotations

import io
import time
from pathlib import Path
from unittest import mock

import pytest

from ingest.parsers import eagle_profile, parse_lines, parse_stream
from runs.summary import summarize
from tests.samples import PROJECT_ROOT, log_path, public_sample
from tests.test_parsers_engine import DAMAGE
from tests.test_parsers_native import _fed_by_python, _same


def test_profile_block_phases_and_canonical_tokens_per_cycle():
    lines = [
        "[EAGLE3_PROFILE] window=100 cycles, steps=2",
        "  Draft:               0.56 ms/cyc  ( 11.8%)",
        "  Target verify:       4.02 ms/cyc  ( 83.6%)",
        "  Cycle total:         4.80 ms/cyc",
        "  Accept len:          1.24",
        "  Throughput:         466.3 tok/s",
    ]
    r = parse_lines(formats=["eagle_profile"], lines=lines)
    assert [(p.name, p.ms, p.pct, p.line) for p in r.phases] == [
        ("Draft", 0.56, 11.8, 2), ("Target verify", 4.02, 83.6, 3),
    ]
    values = {m.name: (m.value, m.line) for m in r.metrics}
    assert values["tokens_per_cycle"] == (2.24, 5)  # accepted drafts + the bonus token
    assert values["accept_len_raw"] == (1.24, 5)
    assert values["cycle_ms"] == (4.80, 4)
    assert values["throughput_tok_s"] == (466.3, 6)
    assert r.settings["spec.steps"].value == 2 and r.settings["spec.steps"].line == 1


def test_headerless_ms_per_step_lines_are_one_window_each():
    r = parse_lines(formats=["eagle_profile"], lines=["  Target forward:    4.09 ms/step", "x", "  Target forward:    4.12 ms/step"])
    assert [(p.window, p.ms) for p in r.phases] == [(1, 4.09), (2, 4.12)]


def test_tuned_2step_sample_summary(golden):
    with open(log_path("spec_eagle3_tuned_2step.log"), "rb") as f:
        parsed = summarize(parse_stream(f))
    # Checked by hand against the log: six profile blocks, verify 3.99..4.56 ms/cyc.
    assert parsed["spec"]["steps"] == 2
    assert parsed["summary"]["windows"] == 6
    verify = next(p for p in parsed["phases"] if p["name"] == "Target verify")
    assert verify["ms"] == 4.08 and verify["windows"] == 6
    assert parsed["summary"]["tokens_per_cycle"] == 2.2
    golden("spec_eagle3_tuned_2step", parsed)


def test_ms_per_iter_table_rows_are_windows_with_tokens_per_cycle_and_cycle_time():
    r = parse_lines(formats=["eagle_profile"], lines=[
        "no speculation         512 iters   1.000 tok/iter    1.283 ms/iter",
        "accept 2 of 5          257 iters   1.992 tok/iter    5.420 ms/iter",
    ])
    rows = sorted((m.window, m.name, m.value, m.line) for m in r.metrics)
    assert rows == [
        (1, "cycle_ms", 1.283, 1), (1, "throughput_tok_s", 779.4232, 1), (1, "tokens_per_cycle", 1.0, 1),
        (1, "window_cycles", 512.0, 1),
        (2, "cycle_ms", 5.42, 2), (2, "throughput_tok_s", 367.5277, 2), (2, "tokens_per_cycle", 1.992, 2),
        (2, "window_cycles", 257.0, 2),
    ]
    assert r.phases == [] and r.formats == ["eagle_profile"]


def test_ms_per_iter_table_after_a_profile_block_opens_a_new_window():
    r = parse_lines(formats=["eagle_profile"], lines=[
        "[EAGLE3_PROFILE] window=100 cycles, steps=2",
        "  Target verify:       4.02 ms/cyc  ( 83.6%)",
        "accept 5 of 5           87 iters   5.885 tok/iter   13.693 ms/iter",
    ])
    assert [p.window for p in r.phases] == [1]
    assert [m.window for m in r.metrics if m.name == "cycle_ms"] == [2]


def test_public_ms_per_iter_table(golden):
    with open(public_sample("spec_ms_per_iter_table_tt_plugin_pr130.txt"), "rb") as f:
        parsed = summarize(parse_stream(f))
    # Four rows: 1.000, 1.000, 1.992, 5.885 tok/iter and 1.283, 3.288, 5.420, 13.693 ms/iter.
    assert parsed["summary"]["windows"] == 4
    assert parsed["summary"]["tokens_per_cycle"] == 1.496
    assert parsed["summary"]["cycle_ms"] == 4.354
    golden("spec_ms_per_iter_table_tt_plugin_pr130", parsed)


# The cap on distinct phase names.

EAGLE = (PROJECT_ROOT / "samples" / "spec_eagle3_tuned_2step.log").read_bytes()
# Real phase lines of other shapes: headerless steps (non-speculative) and percentages.
REAL = [p for p in (PROJECT_ROOT / "samples").rglob("*.log") if b"ms/cyc" in p.read_bytes() or b"ms/step" in p.read_bytes()]


def _capped(n: int):
    return mock.patch.object(eagle_profile.Parser, "PHASE_NAMES", n)


def _renamed(data: bytes, copies: int) -> bytes:
    """`data` `copies` times, each copy's phase names made its own (`Draft` -> `Draft 3`)."""
    out = []
    for k in range(copies):
        lines = []
        for line in data.split(b"\n"):
            head, colon, rest = line.partition(b":")
            if b"ms/" in rest and colon and head.strip() and not head.strip().lower().endswith(b"total"):
                line = head + f" {k}".encode() + colon + rest
            lines.append(line)
        out.append(b"\n".join(lines))
    return b"\n".join(out)


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
@pytest.mark.parametrize("cap", [1, 3])
def test_real_profiles_past_a_small_cap_give_the_same_records_and_warning_in_both_engines(path, cap):
    data = path.read_bytes()
    with _capped(cap):
        for batch, first in ((1 << 21, 1 << 16), (1 << 12, 1 << 12), (1 << 9, 1 << 9)):
            _same(data, batch, first)
        _same(_renamed(data, 5), 1 << 12, 1 << 12)
        result = parse_stream(io.BytesIO(_renamed(data, 5)), engine="native")
    assert len({p.name for p in result.phases}) <= cap
    assert [w.message for w in result.warnings if "distinct phase names" in w.message]


def test_damaged_profile_lines_past_the_cap_agree():
    lines = _renamed(EAGLE, 3).split(b"\n")
    for damage in DAMAGE:
        data = b"\n".join(damage(line) if b"ms/" in line else line for line in lines)
        with _capped(2):
            _same(data, 1 << 12, 1 << 12)


def test_a_profile_of_endless_names_keeps_the_first_and_says_how_many_lines_were_left_out():
    body = "".join(f"  Phase {i}: 0.5 ms/cyc ( 1.0%)\n" for i in range(3000))
    data = f"[EAGLE3_PROFILE] window=100 cycles, steps=2\n{body}  Cycle total: 5.0 ms/cyc\n".encode()
    headerless = "".join(f"  Step {i % 1500}: 0.5 ms/step\n" for i in range(6000)).encode()
    with _capped(1000):
        for log in (data, headerless):
            _same(log, 1 << 12, 1 << 12)
        result = parse_stream(io.BytesIO(data), engine="native")
        assert _fed_by_python(data) < 50  # the lines left out are read in C too
    assert [p.name for p in result.phases] == [f"Phase {i}" for i in range(1000)]
    assert [m.value for m in result.metrics if m.name == "cycle_ms"] == [5.0]
    (warning,) = [w for w in result.warnings if "distinct phase names" in w.message]
    assert warning.line == 1002
    assert warning.message == ("more than 1,000 distinct phase names: the phase table and the cycle time keep the "
                               "first 1,000; 2,000 phase line(s) of later names are left out")


def test_normal_profiles_are_not_capped():
    result = parse_stream(io.BytesIO(EAGLE), engine="native")
    assert not [w for w in result.warnings if "distinct phase names" in w.message]
    assert eagle_profile.PHASE_NAMES == eagle_profile.Parser.PHASE_NAMES == 1000


def test_parselog_of_the_distinct_names_cliff_is_flat_and_linear(tmp_path: Path):
    """bench/mixes.py's `distinct_names` (an EAGLE profile block of ~300k distinct names, 8 MB):
    22 s and 786 MB peak when each name kept its group, row and chart series."""
    from bench import mixes
    from ingest.management.commands.parselog import parse_file

    log = mixes.write_mix(tmp_path / "distinct.log", "distinct_names", 8 << 20)
    start = time.process_time()
    out = parse_file(log)
    took = time.process_time() - start
    assert len(out["phases"]) == 1000 and out["phases"][999]["name"] == "Phase 999"
    assert any("distinct phase names" in w["message"] for w in out["warnings"])
    assert took < 5, took
