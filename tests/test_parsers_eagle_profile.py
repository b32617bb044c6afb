from ingest.parsers import eagle_profile, parse_stream, summarize

from tests.samples import log_path


def test_profile_block_phases_and_canonical_tokens_per_cycle():
    lines = [
        "[EAGLE3_PROFILE] window=100 cycles, steps=2",
        "  Draft:               0.56 ms/cyc  ( 11.8%)",
        "  Target verify:       4.02 ms/cyc  ( 83.6%)",
        "  Cycle total:         4.80 ms/cyc",
        "  Accept len:          1.24",
        "  Throughput:         466.3 tok/s",
    ]
    r = eagle_profile.parse(lines)
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
    r = eagle_profile.parse(["  Target forward:    4.09 ms/step", "x", "  Target forward:    4.12 ms/step"])
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
