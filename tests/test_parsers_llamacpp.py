from ingest.parsers import parse_lines, parse_stream
from runs.summary import summarize
from tests.samples import public_sample

STATISTICS = (
    "0.06.896.057 I statistics     draft-eagle3: #calls(b,g,a) =    1     87     87, #gen drafts =     87, "
    "#acc drafts =    70, #gen tokens =    259, #acc tokens =   167, #mean acc len = 2.92, "
    "#acc rate/pos = (0.805, 0.632, 0.483), dur(b,g,a) = 0.005, 325.555, 0.114 ms"
)


def metric(result, name, source="llamacpp"):
    return [m.value for m in result.metrics if m.name == name and m.source == source]


def test_statistics_line_gives_tokens_per_cycle_rates_and_counts():
    r = parse_lines(formats=["llamacpp"], lines=[STATISTICS])
    assert metric(r, "tokens_per_cycle") == [2.92]  # 1 + 167 / 87: the bonus token is in
    assert metric(r, "draft_acceptance_rate") == [0.644788]  # 167 / 259
    assert metric(r, "acceptance_pos_3") == [0.483]
    assert metric(r, "gen_drafts") == [87.0] and metric(r, "draft_calls") == [87.0]
    s = {k: v.value for k, v in r.settings.items()}
    assert s == {"engine": "llama.cpp", "spec.algorithm": "EAGLE3", "spec.steps": 3}


def test_durations_become_draft_phases_per_cycle_that_do_not_make_a_cycle():
    r = parse_lines(formats=["llamacpp"], lines=[STATISTICS])
    assert [(p.name, p.ms) for p in r.phases] == [
        ("draft begin", 0.000057), ("draft generate", 3.742011), ("draft accept", 0.00131),
    ]
    parsed = summarize(r)
    assert parsed["summary"]["cycle_ms"] is None  # the target's verify is not in them
    assert {p["name"]: p["pct"] for p in parsed["phases"]}["draft generate"] is None


def test_older_statistics_without_mean_or_durations():
    r = parse_lines(formats=["llamacpp"], lines=["statistics ngram_simple: #calls = 15, #gen drafts = 5, #acc drafts = 5, "
                        "#gen tokens = 187, #acc tokens = 73"])
    assert metric(r, "tokens_per_cycle") == [15.6]  # 1 + 73 / 5
    assert metric(r, "draft_calls") == [15.0]
    assert r.settings["spec.algorithm"].value == "NGRAM" and r.phases == []


def test_slot_acceptance_line_is_a_fallback_source():
    r = parse_lines(formats=["llamacpp"], lines=[
        "slot print_timing: id  1 | task 0 | draft acceptance = 0.64479 (  167 accepted /   259 generated), "
        "mean acceptance length =  2.92, acceptance rate per position = (0.805, 0.632, 0.483)",
        "draft acceptance rate = 0.57576 (  171 accepted /   297 generated)",
    ])
    assert metric(r, "tokens_per_cycle", "llamacpp_slot") == [2.92]
    assert metric(r, "draft_tokens", "llamacpp_slot") == [259.0, 297.0]
    assert metric(r, "acceptance_pos_2", "llamacpp_slot") == [0.632]
    assert summarize(r)["summary"]["tokens_per_cycle"] == 2.92


def test_eval_time_lines_give_decode_and_prompt_throughput():
    r = parse_lines(formats=["llamacpp"], lines=[
        "slot print_timing: id  1 | task 0 | prompt eval time =     300.11 ms /    20 tokens "
        "(   15.01 ms per token,    66.64 tokens per second)",
        "slot print_timing: id  1 | task 0 |        eval time =    2296.72 ms /   256 tokens "
        "(    8.97 ms per token,   111.46 tokens per second)",
        "llama_perf_context_print:        eval time =    1234.56 ms /   127 runs   "
        "(    9.72 ms per token,   102.87 tokens per second)",
    ])
    assert metric(r, "throughput_tok_s") == [111.46, 102.87]
    assert metric(r, "prompt_throughput_tok_s") == [66.64]


def test_public_sample_summary(golden):
    with open(public_sample("llamacpp_spec_statistics_eagle3_pr24536.log"), "rb") as f:
        parsed = summarize(parse_stream(f))
    assert parsed["formats"] == ["llamacpp"] and parsed["engine"] == "llama.cpp"
    assert parsed["spec"]["algorithm"] == "EAGLE3" and parsed["spec"]["steps"] == 3
    assert parsed["summary"]["tokens_per_cycle"] == 2.92
    assert parsed["summary"]["throughput_tok_s"] == 111.46
    golden("llamacpp_spec_statistics_eagle3_pr24536", parsed)
