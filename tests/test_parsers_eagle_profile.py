from ingest.parsers import parse_lines, parse_stream
from runs.summary import summarize
from tests.samples import log_path, public_sample


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
