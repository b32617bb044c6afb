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
    parsed = summarize(r)
    assert parsed["summary"]["tokens_per_cycle"] == 2.9195  # 1 + 167 / 87 from the counters (printed: 2.92)
    assert parsed["acceptance"]["rate"] == 0.6448  # 167 / 259
    assert metric(r, "acceptance_pos_3") == [0.483]
    assert metric(r, "gen_drafts") == [87.0] and metric(r, "draft_calls") == [87.0]
    s = {k: v.value for k, v in r.settings.items()}
    assert s["llamacpp.draft_types"]["draft-eagle3"]["acc_tokens"] == 167
    del s["llamacpp.draft_types"]
    assert s == {"engine": "llama.cpp", "spec.algorithm": "EAGLE3", "spec.steps": 3}


def test_durations_become_draft_phases_per_cycle_that_do_not_make_a_cycle():
    r = parse_lines(formats=["llamacpp"], lines=[STATISTICS])
    assert [(p.name, p.ms) for p in r.phases] == [  # ms per call of each phase, named by the type
        ("draft-eagle3 begin", 0.005), ("draft-eagle3 generate", 3.742011), ("draft-eagle3 accept", 0.00131),
    ]
    parsed = summarize(r)
    assert parsed["summary"]["cycle_ms"] is None  # the target's verify is not in them
    assert {p["name"]: p["pct"] for p in parsed["phases"]}["draft-eagle3 generate"] is None


def test_older_statistics_without_mean_or_durations():
    r = parse_lines(formats=["llamacpp"], lines=["statistics ngram_simple: #calls = 15, #gen drafts = 5, #acc drafts = 5, "
                        "#gen tokens = 187, #acc tokens = 73"])
    assert summarize(r)["summary"]["tokens_per_cycle"] == 15.6  # 1 + 73 / 5
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
    assert parsed["summary"]["tokens_per_cycle"] == 2.9195  # 1 + 167 / 87 (the line prints 2.92)
    assert parsed["summary"]["throughput_tok_s"] == 111.46
    golden("llamacpp_spec_statistics_eagle3_pr24536", parsed)


MTP_AND_NGRAM = [
    "[53409] 5.05.552.782 I statistics ngram-mod: #calls(b,g,a) = 11 800 4, #gen drafts = 4, #acc drafts = 4, "
    "#gen tokens = 256, #acc tokens = 47, dur(b,g,a) = 0.340, 2.107, 1.102 ms",
    "[53409] 5.05.552.787 I statistics draft-mtp: #calls(b,g,a) = 11 796 796, #gen drafts = 796, #acc drafts = 694, "
    "#gen tokens = 1585, #acc tokens = 1252, dur(b,g,a) = 0.008, 33271.024, 1.264 ms",
]


def test_several_draft_types_pool_by_totals_not_by_a_mean_of_their_ratios():
    r = parse_lines(formats=["llamacpp"], lines=MTP_AND_NGRAM)
    parsed = summarize(r)
    # (47 + 1252) accepted over (4 + 796) drafts: 2.62, where the mean of the two ratios is 7.66.
    assert parsed["summary"]["tokens_per_cycle"] == 2.6238 and parsed["summary"]["windows"] == 1
    assert parsed["acceptance"]["rate"] == 0.7056  # 1299 / 1841
    assert r.settings["spec.algorithm"].value == "MTP"  # the type that drafted nearly everything
    types = {t["type"]: t for t in parsed["draft_types"]}
    assert types["draft-mtp"]["generate_ms_per_call"] == 41.7978  # 33271.024 ms over 796 calls, in ms
    assert types["ngram-mod"]["generate_ms_per_call"] == 0.0026
    assert types["ngram-mod"]["tokens_per_cycle"] == 12.75 and types["draft-mtp"]["tokens_per_cycle"] == 2.5729
    phases = {p["name"]: p["ms"] for p in parsed["phases"]}
    assert phases["draft-mtp generate"] == 41.7978 and phases["ngram-mod generate"] == 0.0026


def test_cumulative_counters_make_one_window_per_print_from_their_differences():
    second = [line.replace("11 800 4", "12 900 5").replace("#gen drafts = 4,", "#gen drafts = 5,")
              .replace("#acc tokens = 47", "#acc tokens = 57").replace("#gen tokens = 256", "#gen tokens = 320")
              for line in MTP_AND_NGRAM[:1]] + [
        MTP_AND_NGRAM[1].replace("11 796 796", "12 895 895").replace("#gen drafts = 796", "#gen drafts = 895")
        .replace("#acc tokens = 1252", "#acc tokens = 1450").replace("#gen tokens = 1585", "#gen tokens = 1783")]
    r = parse_lines(formats=["llamacpp"], lines=MTP_AND_NGRAM + second)
    # Second print: ngram-mod +1 draft +10 accepted, draft-mtp +99 drafts +198 accepted.
    assert metric(r, "gen_drafts") == [4, 796, 1, 99] and metric(r, "acc_tokens") == [47, 1252, 10, 198]
    parsed = summarize(r)
    assert parsed["summary"]["windows"] == 2
    assert parsed["summary"]["tokens_per_cycle"] == 2.8519  # median of 2.62375 and 3.08 (1 + 208 / 100)
    assert parsed["draft_types"][1]["acc_tokens"] == 1450  # the totals of the last print


def test_a_print_in_which_no_type_drafted_is_no_window():
    idle = [line.replace("statistics", "statistics") for line in MTP_AND_NGRAM]
    r = parse_lines(formats=["llamacpp"], lines=MTP_AND_NGRAM + idle)
    assert metric(r, "gen_drafts") == [4, 796]
    assert summarize(r)["summary"]["windows"] == 1
