import pytest

from ingest.parsers import parse_lines, parse_stream
from ingest.parsers.text import clean, read_lines
from runs.summary import summarize
from tests.samples import bench_row as row
from tests.samples import public_sample

V0_05 = (
    "INFO 07-24 04:00:31 metrics.py:316] Speculative metrics: Draft acceptance rate: 0.500, "
    "System efficiency: 0.300, Number of speculative tokens: 4, Number of accepted tokens: {a}, "
    "Number of draft tokens tokens: {d}, Number of emitted tokens tokens: {e}."
)
V1_CURRENT = (
    "(APIServer pid=79) INFO 08-05 12:25:03 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 2.91, "
    "Accepted throughput: 0.72 tokens/s, Drafted throughput: 2.64 tokens/s, Accepted: 44 tokens, "
    "Drafted: 161 tokens, Per-position acceptance rate: 0.739, 0.478, 0.261, Avg Draft acceptance rate: 27.3%"
)


def spec(result, name):
    return [(m.value, m.window) for m in result.metrics if m.name == name and m.source == "vllm_spec"]


def engine(result, name):
    return [(m.value, m.window, m.rank) for m in result.metrics if m.name == name and m.source == "vllm_engine"]


# -- speculative metrics lines -----------------------------------------------------------------


def test_v0_cumulative_counters_are_differenced_into_windows_despite_the_tokens_typo():
    r = parse_lines(formats=["vllm"], lines=[
        V0_05.format(a=300, d=400, e=500),  # since start: 100 steps of 4 drafts
        V0_05.format(a=450, d=600, e=620),  # +50 steps: 150 accepted, 200 drafted, 120 emitted
    ])
    assert spec(r, "accepted_tokens") == [(300.0, 1), (150.0, 2)]
    assert spec(r, "draft_tokens") == [(400.0, 1), (200.0, 2)]
    assert spec(r, "draft_acceptance_rate") == [(0.75, 1), (0.75, 2)]
    assert spec(r, "tokens_per_cycle") == [(5.0, 1), (2.4, 2)]  # emitted per verify step
    assert spec(r, "system_efficiency") == [(1.0, 1), (0.48, 2)]
    assert r.settings["spec.steps"].value == 4 and r.settings["engine"].value == "vllm"


def test_v0_counter_restart_starts_a_new_series_and_idle_intervals_are_skipped():
    r = parse_lines(formats=["vllm"], lines=[
        V0_05.format(a=300, d=400, e=500),
        V0_05.format(a=300, d=400, e=500),  # nothing new drafted
        V0_05.format(a=30, d=40, e=50),  # the server restarted
    ])
    assert spec(r, "draft_tokens") == [(400.0, 1), (40.0, 2)]


def test_v1_initial_speculative_metrics_wording_is_per_interval():
    r = parse_lines(formats=["vllm"], lines=[
        "Speculative metrics: Draft acceptance rate: 1.000, Number of accepted tokens: 66, "
        "Number of draft tokens: 66, ",
        "Speculative metrics: Draft acceptance rate: 0.500, Number of accepted tokens: 10, "
        "Number of draft tokens: 20, ",
    ])
    assert spec(r, "draft_tokens") == [(66.0, 1), (20.0, 2)]
    assert spec(r, "draft_acceptance_rate") == [(1.0, 1), (0.5, 2)]
    assert spec(r, "tokens_per_cycle") == []  # the number of drafts is not printed


def test_v1_percent_rate_and_nan_interval():
    r = parse_lines(formats=["vllm"], lines=[
        "INFO 04-02 18:03:41 [metrics.py:53] SpecDecoding metrics: Draft acceptance rate: nan%, "
        "Accepted: 0 tokens, Drafted: 0 tokens",
        "INFO 04-02 18:03:51 [metrics.py:53] SpecDecoding metrics: Draft acceptance rate: 88.8%, "
        "Accepted: 262 tokens, Drafted: 295 tokens",
    ])
    assert spec(r, "draft_acceptance_rate") == [(0.888, 1)]
    assert spec(r, "accepted_tokens") == [(262.0, 1)]
    assert r.formats == ["vllm_spec"]


def test_v1_tokens_per_cycle_from_counts_when_draft_length_is_known():
    r = parse_lines(formats=["vllm"], lines=[
        "INFO 08-31 14:41:53 [cli_args.py:325] non-default args: {'model': 'Qwen/Qwen3-8B', "
        "'speculative_config': {'method': 'eagle3', 'model': 'AngelSlim/eagle3', 'num_speculative_tokens': 3}}",
        "SpecDecoding metrics: Draft acceptance rate: 50.0%, Accepted: 60 tokens, Drafted: 120 tokens",
    ])
    assert spec(r, "tokens_per_cycle") == [(2.5, 1)]  # 40 drafts of 3: 1 + 60 / 40
    assert r.settings["spec.algorithm"].value == "EAGLE3" and r.settings["spec.steps"].value == 3


def test_v1_per_position_rates_in_the_middle_of_the_current_format():
    r = parse_lines(formats=["vllm"], lines=[V1_CURRENT])
    assert spec(r, "tokens_per_cycle") == [(2.91, 1)]
    assert spec(r, "accept_len_raw") == [(2.91, 1)]
    assert spec(r, "draft_acceptance_rate") == [(0.273, 1)]
    assert [spec(r, f"acceptance_pos_{i}") for i in (1, 2, 3)] == [[(0.739, 1)], [(0.478, 1)], [(0.261, 1)]]
    assert spec(r, "accepted_throughput_tok_s") == [(0.72, 1)]
    assert r.settings["spec.steps"].value == 3


def test_v1_per_position_rates_as_the_last_field():
    r = parse_lines(formats=["vllm"], lines=[
        "INFO 06-10 10:00:00 [metrics.py:86] SpecDecoding metrics: Draft acceptance rate: 64.8%, "
        "Mean acceptance length: 2.30, Accepted: 52 tokens, Drafted: 80 tokens, "
        "Per-position acceptance rate: 0.800, 0.500",
    ])
    assert spec(r, "acceptance_pos_2") == [(0.5, 1)]
    assert spec(r, "tokens_per_cycle") == [(2.3, 1)]


# -- engine lines ------------------------------------------------------------------------------


def test_engine_lines_v1_and_v0_give_generation_throughput_and_skip_idle_intervals():
    r = parse_lines(formats=["vllm"], lines=[
        "(APIServer pid=1) INFO 04-02 18:03:41 [loggers.py:87] Engine 000: Avg prompt throughput: 1.1 tokens/s, "
        "Avg generation throughput: 10.0 tokens/s, Running: 1 reqs, Waiting: 2 reqs, "
        "GPU KV cache usage: 0.5%, Prefix cache hit rate: 50.0%",
        "INFO 04-02 18:03:51 [loggers.py:87] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
        "Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%",
        "INFO 07-24 04:00:31 metrics.py:295] Avg prompt throughput: 558.7 tokens/s, Avg generation throughput: "
        "127.4 tokens/s, Running: 2 reqs, Swapped: 0 reqs, Pending: 3 reqs, GPU KV cache usage: 0.8%, "
        "CPU KV cache usage: 0.0%.",
    ])
    assert engine(r, "throughput_tok_s") == [(10.0, 1, "DP0"), (127.4, 1, "")]
    assert engine(r, "waiting_req") == [(2.0, 1, "DP0"), (3.0, 1, "")]
    assert engine(r, "prefix_cache_hit_rate_pct") == [(50.0, 1, "DP0")]
    assert engine(r, "cpu_kv_cache_usage_pct") == [(0.0, 1, "")]


def test_data_parallel_engines_add_up():
    line = ("Engine 00{i}: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: {g} tokens/s, "
            "Running: 4 reqs, Waiting: 0 reqs")
    r = parse_lines(formats=["vllm"], lines=[line.format(i=0, g=100.0), line.format(i=1, g=50.0)])
    summary = summarize(r)["summary"]
    assert summary["throughput_tok_s"] == 150.0
    assert summary["throughput_scope"] == {"kind": "sum_over_dp_ranks", "ranks": 2, "dp_size": None, "dp_attention": False}


def test_first_engine_interval_counts_even_when_it_is_slow():
    """SGLang's tiny first rate after idle is dropped (test_parsers_sglang); vLLM's first interval
    is a real average over its 10 s, ramp-up included, and stays a window of the median."""
    line = ("INFO 04-02 18:03:{s} [loggers.py:87] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
            "Avg generation throughput: {g} tokens/s, Running: 4 reqs, Waiting: 0 reqs")
    r = parse_lines(formats=["vllm"], lines=[line.format(s=10 * i, g=g) for i, g in enumerate([20.0, 150.0, 160.0, 156.0])])
    summary = summarize(r)["summary"]
    assert summary["windows"] == 4
    assert summary["throughput_tok_s"] == 153.0  # median of 20, 150, 156, 160 (155 without the first)


# -- SpecDecodeWorker stage times --------------------------------------------------------------


def test_stage_times_become_phases_with_proposal_per_cycle():
    r = parse_lines(formats=["vllm"], lines=[
        "INFO 02-11 14:50:38 metrics.py:477] Speculative metrics: Draft acceptance rate: 0.550, "
        "System efficiency: 0.133, Number of speculative tokens: 8, Number of accepted tokens: 44, "
        "Number of draft tokens: 80, Number of emitted tokens: 12.",
        "INFO 02-11 14:50:38 spec_decode_worker.py:1071] SpecDecodeWorker stage times: "
        "average_time_per_proposal_tok_ms=0.02 scoring_time_ms=19.13 verification_time_ms=0.17",
        "SpecDecodeWorker stage times: average_time_per_proposal_tok_ms=0.03 scoring_time_ms=19.00 "
        "verification_time_ms=0.20 prefill_sync_time_ms=0.50",
    ])
    phases = [(p.name, p.ms, p.window, p.line) for p in r.phases]
    assert phases[:3] == [("proposal", 0.16, 1, 2), ("scoring", 19.13, 1, 2), ("verification", 0.17, 1, 2)]
    assert ("prefill sync", 0.5, 2, 3) in phases
    assert summarize(r)["summary"]["tokens_per_cycle"] == 1.2  # 12 emitted over 80/8 steps


def test_stage_times_take_the_draft_length_from_the_engine_config():
    r = parse_lines(formats=["vllm"], lines=[
        "INFO 09-11 12:40:00 llm_engine.py:237] Initializing an LLM engine (v0.6.1) with config: model='m', "
        "speculative_config=SpeculativeConfig(draft_model='d', num_spec_tokens=4), tensor_parallel_size=1",
        "SpecDecodeWorker stage times: average_time_per_proposal_tok_ms=3.57 scoring_time_ms=94.42 "
        "verification_time_ms=1.32",
    ])
    assert [(p.name, p.ms) for p in r.phases] == [("proposal", 14.28), ("scoring", 94.42), ("verification", 1.32)]


def test_stage_times_before_any_draft_length_keep_proposal_per_token():
    r = parse_lines(formats=["vllm"], lines=["SpecDecodeWorker stage times: average_time_per_proposal_tok_ms=4.96 scoring_time_ms=54.92 "
                    "verification_time_ms=1.20"])
    assert [p.name for p in r.phases] == ["proposal per token", "scoring", "verification"]


# -- launch arguments and version --------------------------------------------------------------


def test_non_default_args_and_engine_version():
    r = parse_lines(formats=["vllm"], lines=[
        "(APIServer pid=1) INFO 09-09 11:51:00 [api_server.py:1805] vLLM API server version 0.10.1.1",
        "INFO 08-31 14:41:53 [cli_args.py:325] non-default args: {'port': 8080, 'model': '/mnt/models', "
        "'tensor_parallel_size': 2, 'speculative_config': '{\"method\": \"ngram\", \"num_speculative_tokens\": 5}'}",
    ])
    s = {k: v.value for k, v in r.settings.items()}
    assert s["engine.version"] == "0.10.1.1" and s["tp_size"] == 2 and s["model"] == "/mnt/models"
    assert s["spec.algorithm"] == "NGRAM" and s["spec.steps"] == 5


def test_engine_config_line_gives_version_and_parallelism():
    r = parse_lines(formats=["vllm"], lines=[
        "INFO 02-14 08:23:15 llm_engine.py:237] Initializing an LLM engine (v0.6.3) with config: "
        "model='meta-llama/Llama-3.1-70B', speculative_config=SpeculativeConfig(method='eagle', "
        "num_spec_tokens=3), tensor_parallel_size=4, pipeline_parallel_size=1",
    ])
    s = {k: v.value for k, v in r.settings.items()}
    assert (s["engine.version"], s["model"], s["tp_size"], s["spec.algorithm"]) == (
        "0.6.3", "meta-llama/Llama-3.1-70B", 4, "EAGLE")


# -- vllm bench serve --------------------------------------------------------------------------


BENCH = [
    "============ Serving Benchmark Result ============",
    row("Successful requests:", "80"),
    row("Failed requests:", "0"),
    row("Request rate configured (RPS):", "10.00"),
    row("Output token throughput (tok/s):", "1201.13"),
    row("Peak concurrent requests:", "16.00"),
    row("Total Token throughput (tok/s):", "1558.45"),
    "---------------Time to First Token----------------",
    row("Mean TTFT (ms):", "126.04"),
    row("P50 TTFT (ms):", "24.87"),
    row("P90 TTFT (ms):", "1036.24"),
    "----------------End-to-end Latency----------------",
    row("P95 E2EL (ms):", "1189419.14"),
    "---------------Speculative Decoding---------------",
    row("Acceptance rate (%):", "82.37"),
    row("Acceptance length:", "3.47"),
    row("Drafts:", "60305"),
    "Per-position acceptance (%):",
    row("  Position 0:", "91.94"),
    row("  Position 1:", "81.80"),
    "==================================================",
]


def test_bench_serve_block_with_percentiles_and_speculative_section():
    r = parse_lines(formats=["vllm"], lines=BENCH)
    serving = summarize(r)["serving"]
    assert serving["request_rate_configured_rps"] == 10.0
    assert serving["peak_concurrent_requests"] == 16.0
    assert serving["total_throughput_tok_s"] == 1558.45
    assert serving["p50_ttft_ms"] == 24.87 and serving["p90_ttft_ms"] == 1036.24
    assert serving["p95_e2el_ms"] == 1189419.14
    assert serving["acceptance_rate_pct"] == 82.37 and serving["acceptance_length"] == 3.47
    assert serving["acceptance_position_1_pct"] == 81.8
    bench = [(m.name, m.value) for m in r.metrics if m.source == "vllm_bench"]
    assert ("tokens_per_cycle", 3.47) in bench and ("acceptance_pos_2", 0.818) in bench
    assert r.settings["spec.steps"].value == 2 and r.formats == ["vllm_bench_serve"]


def test_bench_serve_after_server_log_does_not_replace_server_windows():
    r = parse_lines(formats=["vllm"], lines=[V1_CURRENT] + BENCH)
    assert summarize(r)["summary"]["tokens_per_cycle"] == 2.91


def test_sglang_bench_block_is_not_read_as_vllm():
    r = parse_lines(formats=["vllm"], lines=["============ Serving Benchmark Result ============",
                    "Backend:                                 sglang",
                    "Successful requests:                     10"])
    assert r.formats == [] and r.settings == {}


# -- public samples ----------------------------------------------------------------------------

SAMPLES = {
    "vllm_v0_spec_metrics_v0.5_issue6768.log": {
        # Cumulative 42272 then 51056 draft tokens: windows of 42272 and 8784, 1.0 token per step.
        "formats": ["vllm_engine", "vllm_spec"], "spec.steps": 16,
        "summary.tokens_per_cycle": 1.0, "summary.throughput_tok_s": 118.9, "summary.windows": 2,
    },
    "vllm_v0_spec_metrics_early2025_issue7301.log": {"spec.steps": 5, "summary.tokens_per_cycle": 1.0},
    "vllm_v0_spec_metrics_and_stage_times_doc.log": {
        "spec.steps": 8, "summary.tokens_per_cycle": 1.2, "summary.cycle_ms": 19.46,  # 8 x 0.02 + 19.13 + 0.17
    },
    "vllm_v0_specdecodeworker_stage_times_issue8370.log": {
        # Proposal per draft token, draft length never said: 4.96 + 54.92 + 1.20 would be too short.
        "formats": ["vllm_stage_times"], "summary.cycle_ms": None,
    },
    "vllm_v0_stage_times_mixed_with_bench_latency.log": {
        # 13783 emitted over 18802 / 2 steps. The stage line comes before the draft length, so its
        # proposal stays per token (a later line never changes an earlier one's record) and the
        # cycle time is unknown, not 3.57 + 94.42 + 1.32.
        "summary.tokens_per_cycle": 1.4661, "summary.cycle_ms": None, "summary.throughput_tok_s": 75.3,
    },
    "vllm_v1_specdecoding_pr15902_before_after.txt": {
        "formats": ["vllm_spec", "vllm_engine"], "summary.throughput_tok_s": 10.0, "summary.tokens_per_cycle": None,
    },
    "vllm_v1_specdecoding_nan_issue15958.log": {"summary.windows": None, "summary.throughput_tok_s": None},
    "vllm_v1_specdecoding_throughput_pr24127.log": {"spec.steps": 5, "summary.tokens_per_cycle": 5.44},
    "vllm_v1_specdecoding_avgrate_vllm_ascend_issue13640.log": {
        "spec.steps": 7, "summary.tokens_per_cycle": 2.92, "summary.windows": 2,
    },
    "vllm_bench_serve_specdecode_eagle3.txt": {
        "serving.peak_concurrent_requests": 16.0, "serving.acceptance_position_0_pct": 37.03,
        "serving.max_request_concurrency": 8, "summary.tokens_per_cycle": 1.37, "spec.steps": 1,
    },
    "vllm_bench_serve_overflow_columns.txt": {
        "serving.p90_e2el_ms": 1139031.87, "serving.p99_e2el_ms": 1212066.83, "serving.drafts": 60305,
        "spec.steps": 3,
    },
    "vllm_ansi_escape_variants.log": {"formats": ["vllm_args"], "engine": "vllm"},
}


def pick(parsed: dict, path: str):
    head, _, rest = path.partition(".")
    return parsed[head][rest] if rest else parsed[head]


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_public_sample_summary(name, golden):
    with open(public_sample(name), "rb") as f:
        result = parse_stream(f)
    parsed = summarize(result)
    for path, expected in SAMPLES[name].items():
        assert pick(parsed, path) == expected, path
    assert parsed["engine"] == "vllm"
    golden(name.rsplit(".", 1)[0], parsed)


def test_escape_residue_sample_cleans_to_plain_process_tags():
    with open(public_sample("vllm_ansi_escape_variants.log"), "rb") as f:
        lines = dict(read_lines(f))
    assert lines[2].startswith("(VllmWorker rank=1 pid=219) INFO 08-31 14:42:32 [parallel_state.py:1076]")
    # `[m` of `[multiproc_...]` is text, not a colour code that lost its ESC.
    assert lines[4].startswith("(VllmWorkerProcess pid=176029) ERROR 04-17 15:30:42 [multiproc_worker_utils.py:238]")
    assert lines[4].endswith("method load_model.")  # ^M gone
    assert lines[6].startswith("(VllmWorkerProcess pid=240) INFO 02-14 08:23:15 worker.py:266]")  # DJL relay


@pytest.mark.parametrize("dirty", [
    "\x1b[1;36m(APIServer pid=7)\x1b[0;0m X", "^[[1;36m(APIServer pid=7)^[[0;0m X",
    "\ufffd[1;36m(APIServer pid=7)\ufffd[0;0m X", "#033[1;36m(APIServer pid=7)#033[0;0m X",
    "[1;36m(APIServer pid=7)[0;0m X", "(APIServer pid=7) X\x1b[K", "(APIServer pid=7) X^M",
])
def test_clean_removes_every_escape_residue_form(dirty):
    assert clean(dirty) == "(APIServer pid=7) X"


def _v0_metrics(k: int, accepted: int, drafted: int, emitted: int) -> str:
    return (f"INFO 02-11 14:50:38 metrics.py:477] Speculative metrics: Draft acceptance rate: 0.500, System efficiency: "
            f"0.400, Number of speculative tokens: {k}, Number of accepted tokens: {accepted}, Number of draft tokens: "
            f"{drafted}, Number of emitted tokens: {emitted}.")


def _v0_stage(proposal: str, scoring: str) -> str:
    return (f"INFO 02-11 14:50:38 spec_decode_worker.py:1071] SpecDecodeWorker stage times: "
            f"average_time_per_proposal_tok_ms={proposal} scoring_time_ms={scoring} verification_time_ms=1.00")


def test_v0_stage_times_pair_with_the_metrics_of_their_own_launch():
    r = parse_lines(formats=["vllm"], lines=[
        "$ vllm serve m --speculative-model d --num-speculative-tokens 2",
        _v0_metrics(2, 100, 200, 200),
        _v0_stage("2.00", "20.00"),
        "$ vllm serve m --speculative-model d --num-speculative-tokens 4",
        _v0_stage("3.00", "30.00"),  # before its own launch's metrics line: its command said 4
        _v0_metrics(4, 200, 400, 300),
    ])
    # Proposal per draft token x the launch's draft length: 2 x 2.00, then 4 x 3.00 (not 2 x 3.00).
    assert [p.ms for p in r.phases if p.name == "proposal"] == [4.0, 12.0]
    # The second launch's counters start again and its cycles are drafts / 4: 300 / 100.
    assert [m.value for m in r.metrics if m.name == "tokens_per_cycle"] == [2.0, 3.0]


def test_v0_stage_times_of_a_launch_whose_draft_length_is_never_said_stay_per_token():
    r = parse_lines(formats=["vllm"], lines=[
        "$ vllm serve m --speculative-model d --num-speculative-tokens 2",
        _v0_metrics(2, 100, 200, 200),
        "$ python -m vllm.entrypoints.openai.api_server --model m --speculative-model d",
        _v0_stage("3.00", "30.00"),
    ])
    assert [(p.name, p.ms) for p in r.phases][:1] == [("proposal per token", 3.0)]


def test_bench_blocks_copied_as_comments_are_read_with_the_clients_settings_lines():
    rows = [("Successful requests:", "32"), ("Benchmark duration (s):", "150.87"),
            ("Output token throughput (tok/s):", "434.40")]
    block = (["# Traffic request rate: inf", "# Maximum request concurrency: 32", "# 100%|####| 32/32",
              "# ============ Serving Benchmark Result ============"]
             + [f"# {label:<40} {value:<10}" for label, value in rows] + ["# " + "=" * 50])
    r = parse_lines(formats=["vllm"], lines=block + [""] + block)
    blocks = r.settings["serving_blocks"].value
    assert [(b["tool"], b["request_rate"], b["max_concurrency"], b["output_throughput_tok_s"]) for b in blocks] == [
        ("vllm", "inf", 32, 434.4), ("vllm", "inf", 32, 434.4)]


def test_a_vllm_block_without_the_rate_row_ran_at_inf_and_one_with_it_keeps_it():
    def block(extra):
        return (["============ Serving Benchmark Result ============", "{:<40} {:<10}".format("Successful requests:", "10"),
                 "{:<40} {:<10}".format("Failed requests:", "0")]
                + [f"{label:<40} {value:<10}" for label, value in extra]
                + ["{:<40} {:<10}".format("Benchmark duration (s):", "20.30"), "=" * 50, ""])
    r = parse_lines(formats=["vllm"], lines=block([]) + block([("Request rate configured (RPS):", "100.00")]))
    assert [b["request_rate"] for b in r.settings["serving_blocks"].value] == ["inf", 100.0]


def test_the_clients_echoed_arguments_name_the_model_and_rate_of_the_next_block():
    namespace = ("Namespace(subparser='bench', bench_type='serve', seed=0, num_prompts=1000, dataset_name='random', "
                 "backend='vllm', base_url=None, max_concurrency=None, model='Qwen/Qwen3-0.6B', tokenizer=None, "
                 "request_rate=inf, burstiness=1.0)")
    rows = [("Successful requests:", "1000"), ("Failed requests:", "0"), ("Benchmark duration (s):", "30.85"),
            ("Output token throughput (tok/s):", "6582.87")]
    block = (["============ Serving Benchmark Result ============"]
             + [f"{label:<40} {value:<10}" for label, value in rows] + ["=" * 50])
    r = parse_lines(formats=["vllm"], lines=[namespace, *block])
    (b,) = r.settings["serving_blocks"].value
    assert (b["model"], b["request_rate"], b["max_concurrency"], b["speculative"]) == (
        "Qwen/Qwen3-0.6B", "inf", None, False)


def test_an_older_vllm_block_that_never_prints_the_rate_has_an_unknown_rate():
    rows = [("Successful requests:", "1000"), ("Benchmark duration (s):", "30.85"),
            ("Total Token throughput (tok/s):", "14029.44")]
    r = parse_lines(formats=["vllm"], lines=["============ Serving Benchmark Result ============"]
                    + [f"{label:<40} {value:<10}" for label, value in rows] + ["=" * 50])
    assert r.settings["serving_blocks"].value[0]["request_rate"] is None
