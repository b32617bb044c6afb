import pytest

from ingest.parsers import parse_lines, parse_stream
from runs.summary import summarize, untagged_dp_ranks_warning
from tests.samples import bench_row as row
from tests.samples import dp_attention_log, public_sample

DECODE_2024 = (
    "[2024-11-30 05:10:04 TP0] Decode batch. #running-req: 1, #token: 234, token usage: 0.00, "
    "gen throughput (token/s): 147.64, #queue-req: 0"
)


def metrics(result, name, source="sglang_decode"):
    return [(m.value, m.window, m.rank) for m in result.metrics if m.name == name and m.source == source]


def settings(result):
    return {k: v.value for k, v in result.settings.items()}


def decode(body, prefix="[2025-06-20 04:35:25 TP0] "):
    return parse_lines(formats=["sglang"], lines=[prefix + body])


# -- Decode batch lines ------------------------------------------------------------------------


def test_decode_2024_line_without_spec_fields():
    r = parse_lines(formats=["sglang"], lines=[DECODE_2024])
    assert metrics(r, "gen_throughput_tok_s") == [(147.64, 1, "")]
    assert metrics(r, "kv_tokens") == [(234.0, 1, "")]
    assert metrics(r, "tokens_per_cycle") == []
    assert r.formats == ["sglang_decode"] and r.settings["engine"].value == "sglang"


def test_decode_accept_len_is_tokens_per_cycle_and_trailing_separator_is_ignored():
    r = decode("Decode batch. #running-req: 1, #token: 108, token usage: 0.00, accept len: 2.17, "
               "accept rate: 0.54, cuda graph: True, gen throughput (token/s): 178.86, #queue-req: 0, ")
    assert metrics(r, "tokens_per_cycle") == [(2.17, 1, "")]
    assert metrics(r, "accept_len_raw") == [(2.17, 1, "")]
    assert metrics(r, "accept_rate") == [(0.54, 1, "")]
    assert metrics(r, "queue_req") == [(0.0, 1, "")]
    assert metrics(r, "graph") == [(1.0, 1, "")]


def test_decode_mid2025_preallocated_and_retracted_fields():
    r = decode("Decode batch. #running-req: 4, #token: 3121, token usage: 0.00, accept len: 2.74, "
               "pre-allocated usage: 0.12, #retracted-req: 2, cuda graph: True, "
               "gen throughput (token/s): 396.76, #queue-req: 0")
    assert metrics(r, "preallocated_usage") == [(0.12, 1, "")]
    assert metrics(r, "retracted_req") == [(2.0, 1, "")]
    assert metrics(r, "gen_throughput_tok_s") == [(396.76, 1, "")]


def test_decode_timestamp_suffix_does_not_disturb_fields():
    r = decode("Decode batch. #running-req: 3, #token: 900, token usage: 0.01, cuda graph: True, "
               "gen throughput (token/s): 250.50, #queue-req: 1, timestamp: 2025-07-18T15:32:54.159394")
    assert metrics(r, "gen_throughput_tok_s") == [(250.5, 1, "")]
    assert metrics(r, "queue_req") == [(1.0, 1, "")]


def test_decode_2026_comma_forward_counter_swa_pool_and_cpu_graph():
    r = decode(
        "Decode batch [30123], #running-req: 5, #full token: 1234, full token usage: 0.01, "
        "#swa token: 500, swa token usage: 0.02, accept len: 3.10, accept rate: 0.78, "
        "cpu graph: False, gen throughput (token/s): 123.45, #queue-req: 0, ",
        prefix="[2026-09-01 10:00:00 TP0 EP0] ",
    )
    assert metrics(r, "kv_tokens") == [(1234.0, 1, "")]
    assert metrics(r, "swa_kv_tokens") == [(500.0, 1, "")]
    assert metrics(r, "swa_token_usage") == [(0.02, 1, "")]
    assert metrics(r, "tokens_per_cycle") == [(3.1, 1, "")]
    assert metrics(r, "graph") == [(0.0, 1, "")]


def test_decode_mamba_pool_and_pd_decode_fields():
    r = decode(
        "Decode batch, #running-req: 2, #full token: 80, full token usage: 0.00, mamba num: 3, "
        "mamba usage: 0.10, pre-allocated usage: 0.05, #prealloc-req: 1, #transfer-req: 4, "
        "#retracted-req: 0, cuda graph: True, gen throughput (token/s): 60.00, #queue-req: 0",
        prefix="[2026-02-01 10:00:00 DP1 TP1 EP1] ",
    )
    assert metrics(r, "mamba_usage") == [(0.1, 1, "DP1")]
    assert metrics(r, "transfer_req") == [(4.0, 1, "DP1")]
    assert metrics(r, "prealloc_req") == [(1.0, 1, "DP1")]


def test_decode_in_custom_logging_format_is_found_anywhere():
    r = parse_lines(formats=["sglang"], lines=[
        "2025-12-04 20:35:53 INFO 151972 [scheduler_metrics_mixin.py:287] Decode batch. #running-req: 48, "
        "#token: 3894, token usage: 0.00, accept len: 1.00, accept rate: 0.11, cuda graph: False, "
        "gen throughput (token/s): 5452.63, #queue-req: 0,",
        "sglang-jax 2025-12-17 05:10:47 DP2 TP2 Decode batch. #running-req: 1, #token: 64, token usage: 0.00, "
        "gen throughput (token/s): 84.39, #queue-req: 0, #cache_miss: 1",
    ])
    assert metrics(r, "gen_throughput_tok_s") == [(5452.63, 1, ""), (84.39, 1, "DP2")]
    assert metrics(r, "cache_miss") == [(1.0, 1, "DP2")]


def test_decode_line_cut_before_throughput_is_not_a_window():
    r = decode("Decode batch. #running-req: 1, #token: 108, token usage: 0.00, accept len: 2.")
    assert r.metrics == [] and r.formats == []


def test_dp_attention_ranks_add_throughput_and_weight_accept_len_by_verify_steps():
    line = "[2025-05-08 10:00:0{s} DP{d} TP{d}] Decode batch. #running-req: 8, #token: 900, token usage: 0.05, " \
           "accept len: {a}, gen throughput (token/s): {g}, #queue-req: 0, "
    r = parse_lines(formats=["sglang"], lines=[
        line.format(s=0, d=0, a="3.00", g="300.00"),
        line.format(s=1, d=1, a="2.00", g="100.00"),
        line.format(s=5, d=1, a="2.00", g="100.00"),  # DP ranks drift apart: order differs
        line.format(s=5, d=0, a="3.00", g="300.00"),
    ])
    assert {rank for _, _, rank in metrics(r, "gen_throughput_tok_s")} == {"DP0", "DP1"}
    summary = summarize(r)["summary"]
    assert summary["throughput_tok_s"] == 400.0
    # 300 tok/s at 3 per step is 100 steps/s, 100 tok/s at 2 is 50: 400 / 150 tokens per step.
    assert summary["tokens_per_cycle"] == pytest.approx(2.6667, abs=1e-4)
    assert summary["windows"] == 2


def test_dp_attention_throughput_says_it_is_a_sum_over_the_dp_ranks():
    line = "[2025-05-08 10:00:0{s} DP{d} TP{d}] Decode batch. #running-req: 8, #token: 900, token usage: 0.05, " \
           "gen throughput (token/s): {g}, #queue-req: 0, "
    r = parse_lines(formats=["sglang"], lines=[
        "server_args=ServerArgs(model_path='m', tp_size=2, dp_size=2, enable_dp_attention=True)",
        line.format(s=0, d=0, g="300.00"), line.format(s=1, d=1, g="100.00"),
    ])
    summary = summarize(r)["summary"]
    assert summary["throughput_tok_s"] == 400.0
    assert summary["throughput_scope"] == {"kind": "sum_over_dp_ranks", "ranks": 2, "dp_size": 2, "dp_attention": True}


def test_dp_attention_with_untagged_decode_lines_says_the_ranks_could_not_be_told_apart():
    r = parse_lines(formats=["sglang"], lines=dp_attention_log(tagged=False).decode().splitlines())
    parsed = summarize(r)
    summary = parsed["summary"]
    # Each line is one rank's rate: no sum can be made, the figure is the median over all of them.
    assert summary["throughput_tok_s"] == pytest.approx((150.05 + 47.00) / 2)
    assert summary["throughput_scope"] == {"kind": "untagged_dp_ranks", "ranks": None, "dp_size": 2,
                                           "dp_attention": True}
    assert [w["message"] for w in parsed["warnings"]] == [untagged_dp_ranks_warning(2)]
    assert "cannot be told apart" in parsed["warnings"][0]["message"]


def test_untagged_decode_lines_without_dp_attention_or_with_one_dp_rank_have_no_scope():
    one_rank = dp_attention_log(rates=("150.05",), tagged=False).decode().splitlines()
    no_dp_attention = ["server_args=ServerArgs(model_path='m', dp_size=2)", DECODE_2024, DECODE_2024]
    for lines in (one_rank, no_dp_attention):
        parsed = summarize(parse_lines(formats=["sglang"], lines=lines))
        assert "throughput_scope" not in parsed["summary"] and parsed["warnings"] == []


def test_one_stream_of_decode_lines_has_no_throughput_scope():
    summary = summarize(parse_lines(formats=["sglang"], lines=[DECODE_2024, DECODE_2024]))["summary"]
    assert summary["throughput_tok_s"] is not None and "throughput_scope" not in summary


def test_tp_and_ep_tags_without_dp_are_one_stream():
    r = parse_lines(formats=["sglang"], lines=[DECODE_2024.replace("TP0]", "TP0 EP0]"), DECODE_2024])
    assert [w for _, w, _ in metrics(r, "gen_throughput_tok_s")] == [1, 2]


def test_first_tiny_throughput_after_idle_is_left_out_of_the_median():
    values = ["0.39", "178.86", "165.41", "188.68"]
    r = parse_lines(formats=["sglang"], lines=[DECODE_2024.replace("147.64", v) for v in values])
    assert summarize(r)["summary"]["throughput_tok_s"] == 178.86


# -- Prefill batch lines -----------------------------------------------------------------------


def test_prefill_lines_2025_cache_hit_rate_and_2026_input_throughput():
    r = parse_lines(formats=["sglang"], lines=[
        "[2025-01-07 20:16:02 TP0] Prefill batch. #new-seq: 1, #new-token: 75, #cached-token: 0, "
        "cache hit rate: 12.50%, token usage: 0.01, #running-req: 1, #queue-req: 62",
        "[2026-01-07 20:16:02 TP0] Prefill batch [77], #new-seq: 2, #new-token: 8192, #cached-token: 64, "
        "token usage: 0.20, #running-req: 0, #queue-req: 0, #pending-token: 10, cuda graph: False, "
        "input throughput (token/s): 15321.40",
    ])
    assert metrics(r, "cache_hit_rate_pct", "sglang_prefill") == [(12.5, 1, "")]
    assert metrics(r, "new_tokens", "sglang_prefill") == [(75.0, 1, ""), (8192.0, 2, "")]
    assert metrics(r, "input_throughput_tok_s", "sglang_prefill") == [(15321.4, 2, "")]
    assert r.formats == ["sglang_prefill"]
    assert summarize(r)["summary"]["throughput_tok_s"] is None  # prefill is not decode throughput


# -- server_args=ServerArgs(...) ---------------------------------------------------------------

SERVER_ARGS = (
    "[2025-11-06 01:22:00] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=2, dp_size=1, "
    "ep_size=1, speculative_algorithm='EAGLE3', speculative_draft_model_path='AngelSlim/Qwen3-8B_eagle3', "
    "speculative_num_steps=3, speculative_eagle_topk=1, speculative_num_draft_tokens=4, "
    "cuda_graph_config=CudaGraphConfig(decode=PhaseConfig(backend='full', max_bs=16, bs=[1, 2, 4])), "
    "enable_dp_attention=False, attention_backend='fa3', mem_fraction_static=0.835, note='a ) b')"
)


def test_server_args_repr_with_nested_dataclass():
    r = parse_lines(formats=["sglang"], lines=[SERVER_ARGS])
    s = settings(r)
    assert (s["spec.algorithm"], s["spec.steps"], s["spec.topk"], s["spec.draft_tokens"]) == ("EAGLE3", 3, 1, 4)
    assert (s["tp_size"], s["dp_size"], s["ep_size"]) == (2, 1, 1)
    assert s["model"] == "Qwen/Qwen3-8B" and s["spec.draft_model"] == "AngelSlim/Qwen3-8B_eagle3"
    assert s["sglang.enable_dp_attention"] is False and s["sglang.mem_fraction_static"] == 0.835
    assert r.settings["spec.steps"].source == "sglang_server_args" and r.formats == ["sglang_server_args"]


def test_server_args_none_values_are_not_settings():
    r = parse_lines(formats=["sglang"], lines=[SERVER_ARGS.replace("speculative_num_steps=3", "speculative_num_steps=None")])
    assert "spec.steps" not in r.settings


def test_server_args_wrapped_paste_is_joined_mid_token():
    text = SERVER_ARGS
    cut = [text[:150], text[150:331], text[331:]]
    assert "speculative_num_steps" not in cut[0] + cut[2]
    r = parse_lines(formats=["sglang"], lines=cut + [DECODE_2024])
    assert settings(r)["spec.steps"] == 3 and settings(r)["spec.draft_tokens"] == 4
    assert metrics(r, "gen_throughput_tok_s") == [(147.64, 1, "")]  # the next log line still counts


def test_server_args_unreadable_repr_falls_back_to_keywise_values():
    r = parse_lines(formats=["sglang"], lines=[
        "[2025-11-06 01:22:00] server_args=ServerArgs(model_path='m', load_format=<LoadFormat.AUTO: 'auto'>, "
        "tp_size=4, speculative_num_steps=2, cut_off_mid_val",
    ])
    assert settings(r)["tp_size"] == 4 and settings(r)["spec.steps"] == 2


def test_server_args_beat_the_launch_line_but_not_each_other():
    r = parse_lines(formats=["sglang"], lines=[
        "python -m sglang.launch_server --model-path m --speculative-num-steps 5",
        SERVER_ARGS,
        SERVER_ARGS.replace("speculative_num_steps=3", "speculative_num_steps=7"),
    ])
    assert settings(r)["spec.steps"] == 3 and r.settings["spec.steps"].line == 2


# -- launch command ----------------------------------------------------------------------------


def test_launch_flags_with_equals_continuations_and_env_prefixes():
    r = parse_lines(formats=["sglang"], lines=[
        "SGLANG_ENABLE_SPEC_V2=1 NCCL_PROTO=LL python3 -m sglang.launch_server \\",
        "    --model-path deepseek-ai/DeepSeek-R1 --speculative-algorithm=NEXTN \\",
        "    --speculative-num-steps=3 --speculative-eagle-topk 1 --speculative-num-draft-tokens=4 \\",
        "    --tp 8 --enable-dp-attention --dp-size 8 --trust-remote-code",
        "--tp 2",
    ])
    s = settings(r)
    assert (s["spec.algorithm"], s["spec.steps"], s["spec.topk"], s["spec.draft_tokens"]) == ("NEXTN", 3, 1, 4)
    assert (s["tp_size"], s["dp_size"], s["sglang.enable_dp_attention"]) == (8, 8, True)
    assert s["env.SGLANG_ENABLE_SPEC_V2"] == "1" and "env.NCCL_PROTO" not in s
    assert r.settings["spec.steps"].line == 1 and r.formats == ["sglang_launch"]


def test_launch_argparse_prefix_abbreviations_and_tp_aliases():
    for flag in ("--tp", "--tp-size", "--tensor-parallel-size"):
        r = parse_lines(formats=["sglang"], lines=[
            f"python -m sglang.launch_server --model m {flag} 4 --speculative-algo eagle "
            "--speculative-draft lmsys/EAGLE-x --mem-fraction 0.7 --speculative-num 9",
        ])
        s = settings(r)
        assert s["tp_size"] == 4, flag
        assert s["spec.algorithm"] == "EAGLE" and s["spec.draft_model"] == "lmsys/EAGLE-x"
        assert s["sglang.mem_fraction_static"] == 0.7
        assert "spec.steps" not in s and "spec.draft_tokens" not in s  # `--speculative-num` is ambiguous


def test_bench_serving_client_flags_are_not_server_flags():
    r = parse_lines(formats=["sglang"], lines=["python -m sglang.bench_serving --backend sglang --model m --num-prompts 10"])
    assert r.settings == {}


# -- bench_serving result blocks ---------------------------------------------------------------


BENCH_V040 = [
    "============ Serving Benchmark Result ============",
    row("Backend:", "sglang-oai-chat"),
    row("Traffic request rate:", "inf"),
    row("Max reqeuest concurrency:", "not set"),
    row("Successful requests:", "500"),
    row("Benchmark duration (s):", "1139031.87"),
    row("Output token throughput (tok/s):", "1234.50"),
    row("Peak concurrent requests:", "16"),
    "---------------Inter-token Latency----------------",
    row("Mean ITL (ms):", "8.00"),
    row("P99 ITL (ms):", "8.82"),
    "==================================================",
]


def test_bench_serving_block_rows_become_serving_keys():
    r = parse_lines(formats=["sglang"], lines=BENCH_V040)
    serving = summarize(r)["serving"]
    assert serving == {
        "backend": "sglang-oai-chat", "traffic_request_rate": "inf", "max_request_concurrency": "not set",
        "successful_requests": 500, "benchmark_duration_s": 1139031.87, "output_throughput_tok_s": 1234.5,
        "peak_concurrent_requests": 16, "mean_itl_ms": 8.0, "p99_itl_ms": 8.82,
    }
    assert r.formats == ["sglang_bench_serving"] and r.settings["serving.p99_itl_ms"].line == 11
    assert r.settings["engine"].value == "sglang"


def test_bench_accept_length_is_not_the_runs_tokens_per_cycle_when_decode_lines_exist():
    bench = BENCH_V040[:-1] + ["Accept length:                           2.61      ", BENCH_V040[-1]]
    decode_line = DECODE_2024.replace("gen throughput", "accept len: 1.90, gen throughput")
    plain = DECODE_2024
    assert summarize(parse_lines(formats=["sglang"], lines=bench + [decode_line]))["summary"]["tokens_per_cycle"] == 1.9
    assert summarize(parse_lines(formats=["sglang"], lines=bench + [plain]))["summary"]["tokens_per_cycle"] is None
    only_bench = summarize(parse_lines(formats=["sglang"], lines=bench))
    assert only_bench["summary"]["tokens_per_cycle"] == 2.61  # no server windows: the best there is
    assert only_bench["serving"]["accept_length"] == 2.61


def test_bench_block_without_tool_markers_belongs_to_the_logs_engine():
    rows = ["============ Serving Benchmark Result ============",  # an abridged copy
            "Request throughput (req/s):              4.70",
            "Output token throughput (tok/s):         1201.13",
            "=================================================="]
    sg = parse_lines([DECODE_2024] + rows)
    assert "sglang_bench_serving" in sg.formats and "vllm_bench_serve" not in sg.formats
    vl = parse_lines(["INFO 04-02 18:03:41 [loggers.py:87] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
                      "Avg generation throughput: 10.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs"] + rows)
    assert "vllm_bench_serve" in vl.formats and "sglang_bench_serving" not in vl.formats
    assert vl.settings["serving.output_throughput_tok_s"].source == "vllm_bench_serve"


def test_vllm_bench_block_is_not_read_as_sglang():
    r = parse_lines(formats=["sglang"], lines=[
        "============ Serving Benchmark Result ============",
        "Successful requests:                     80        ",  # SGLang would print `Backend:` first
        "Benchmark duration (s):                  17.01     ",
        "Output token throughput (tok/s):         1201.13   ",
        "==================================================",
    ])
    assert r.formats == [] and r.settings == {}


# -- bench_one_batch ---------------------------------------------------------------------------


def test_bench_one_batch_keeps_only_numbers_after_the_benchmark_banner():
    r = parse_lines(formats=["sglang"], lines=[
        "Prefill. latency: 0.46342 s, throughput:   9316.59 token/s",
        "Decode 0. Batch size: 4, latency: 0.29446 s, throughput:     13.58 token/s",
        "Decode 1. Batch size: 4, latency: 0.01225 s, throughput:    326.46 token/s",
        "Benchmark ...",
        "Prefill. latency: 0.37183 s, throughput:  11015.86 token/s",
        "Decode 0. Batch size: 4, latency: 0.01211 s, throughput:    330.38 token/s",
        "Decode 1. Batch size: 4, latency: 0.01191 s, throughput:    335.75 token/s",
        "Decode 2. Batch size: 4, latency: 0.01187 s, throughput:    337.05 token/s",
        "Decode.  median latency: 0.01178 s, median throughput:    339.57 token/s",
        "Total. latency:  1.112 s, throughput:   3981.76 token/s",
    ])
    tput = metrics(r, "throughput_tok_s", "sglang_bench_one_batch")
    assert tput == [(335.75, 1, ""), (337.05, 2, "")]  # Decode 0 carries warm-up
    assert metrics(r, "decode_latency_ms", "sglang_bench_one_batch")[0][0] == 11.91
    s = settings(r)
    assert s["serving.prefill_latency_s"] == 0.37183 and s["serving.batch_size"] == 4
    assert s["serving.decode_median_throughput_tok_s"] == 339.57
    assert s["serving.total_throughput_tok_s"] == 3981.76


def test_bench_one_batch_older_style_counts_steps_after_the_banner():
    r = parse_lines(formats=["sglang"], lines=[
        "Decode.  latency: 2.03403 s, throughput:      1.97 token/s",  # warm-up, its banner cut off
        "Benchmark ...",
        "Prefill. latency: 3.58247 s, throughput:   1143.34 token/s",
        "Decode.  latency: 0.03126 s, throughput:    127.94 token/s",
        "Decode.  latency: 0.01914 s, throughput:    209.03 token/s",
        "Decode.  latency: 0.01905 s, throughput:    209.94 token/s",
    ])
    assert metrics(r, "throughput_tok_s", "sglang_bench_one_batch") == [(209.03, 1, ""), (209.94, 2, "")]


def test_bench_one_batch_warmup_only_yields_nothing():
    r = parse_lines(formats=["sglang"], lines=["Warmup ...", "Prefill. latency: 4.32211 s, throughput:    947.69 token/s"])
    assert r.metrics == [] and r.settings == {}


# -- public samples ----------------------------------------------------------------------------

SAMPLES = {
    "sglang_decode_eagle3_issue11948.log": {
        "formats": ["sglang_prefill", "sglang_decode"],
        "summary.windows": 5, "summary.tokens_per_cycle": 1.95,
        # 0.39 tok/s after idle is dropped: median of 178.86, 165.41, 188.68, 165.59.
        "summary.throughput_tok_s": 172.225,
    },
    "sglang_decode_nospec_issue6949.log": {"summary.windows": 4, "summary.throughput_tok_s": 97.55},
    "sglang_decode_2024_issue2271.log": {
        "summary.windows": 2, "summary.throughput_tok_s": 137.025,
        "settings.model": "meta-llama/Llama-3.1-8B-Instruct",
    },
    "sglang_decode_altlogfmt_fastrl_pr4.log": {
        "summary.windows": 3, "summary.throughput_tok_s": 5452.63, "summary.tokens_per_cycle": 1.0,
    },
    "sglang_decode_mtp_tp8_pr7376.log": {"summary.tokens_per_cycle": 2.74, "summary.throughput_tok_s": 396.76},
    "sglang_jax_decode_cache_miss_pr564.log": {"summary.windows": 4, "summary.throughput_tok_s": 84.4},
    "sglang_prefill_eagle2_issue2777.log": {"formats": ["sglang_prefill"], "summary.windows": None},
    "sglang_server_args_issue12726_truncated.log": {
        "formats": ["sglang_server_args"], "settings.sglang.mem_fraction_static": 0.835,
        "settings.sglang.max_running_requests": 48, "settings.sglang.page_size": 1,
        "settings.model": "/shared/public/elr-models/Qwen/Qwen3-4B/1cfa9a7208912126459214e8b04321603b3df60c/",
    },
    "sglang_launch_eagle3_issue11948.sh": {
        "spec": {"algorithm": "EAGLE3", "steps": 3, "topk": 1, "draft_tokens": 4},
        "settings.tp_size": 2, "settings.sglang.cuda_graph_max_bs": 128,
    },
    "sglang_bench_serving_eagle_dsv3_cookbook.txt": {
        "serving.accept_length": 2.61, "serving.output_throughput_tok_s": 34.26,
        "serving.p99_itl_ms": 60.99, "serving.max_itl_ms": 61.49, "serving.traffic_request_rate": "inf",
        "summary.tokens_per_cycle": 2.61,
    },
    "sglang_bench_serving_ngram_pr13376_partial.txt": {
        "serving.accept_length": 5.86, "serving.concurrency": 142.34, "serving.max_request_concurrency": 256,
    },
    "sglang_bench_serving_2024_issue2097_partial.txt": {
        "serving.output_throughput_tok_s": 748.92, "serving.p99_ttft_ms": 95.83,
        "serving.total_generated_tokens_retokenized": 226855,
    },
    "sglang_bench_serving_nextn_dsv3_early2025_doc.txt": {
        "formats": ["sglang_bench_serving"], "serving.median_itl_ms": 26.8, "serving.mean_e2e_latency_ms": 4556.85,
    },
    "sglang_bench_one_batch_2026_decode_i.txt": {
        "summary.windows": 3, "summary.throughput_tok_s": 337.05, "serving.prefill_latency_s": 0.37183,
    },
    "sglang_bench_one_batch_older_decode_latency.txt": {
        "summary.windows": 4, "summary.throughput_tok_s": 210.845, "serving.prefill_latency_s": 3.73642,
    },
}


def pick(parsed: dict, settings_: dict, path: str):
    if path.startswith("settings."):
        return settings_.get(path[len("settings."):])
    head, _, rest = path.partition(".")
    return parsed[head][rest] if rest else parsed[head]


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_public_sample_summary(name, golden):
    with open(public_sample(name), "rb") as f:
        result = parse_stream(f)
    parsed = summarize(result)
    values = settings(result)
    for path, expected in SAMPLES[name].items():
        assert pick(parsed, values, path) == expected, path
    assert parsed["engine"] == ("sglang" if "nextn" not in name else None)
    golden(name.rsplit(".", 1)[0], parsed)


def test_speculative_flags_pasted_without_the_command_head_are_read():
    """A "Key Launch Parameters" list, or continuation lines cut from their `python -m ...` head."""
    r = parse_lines(lines=["Key Launch Parameters:", "--tp 8", "--speculative-algo EAGLE",
                           "  --speculative-num-steps 4 \\", "--speculative-eagle-topk=1",
                           "--speculative-num-draft-tokens {5, 12, 32}", "see --speculative-num-steps 9 in the docs"])
    out = summarize(r)
    assert out["spec"] == {"algorithm": "EAGLE", "steps": 4, "topk": 1, "draft_tokens": None}
