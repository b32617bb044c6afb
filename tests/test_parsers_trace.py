"""ingest/parsers/trace.py and kernels.py: the streaming trace reader against a plain second
reading of the same JSON, on this project's own H200 recording; and every bad trace's message."""

from __future__ import annotations

import gzip
import io
import json
import math
import re
from pathlib import Path

import pytest

from ingest.parsers import kernels, trace
from tests.samples import PROJECT_ROOT

SAMPLE = PROJECT_ROOT / "samples" / "traces" / "trace_spec_k2_3cycles.json.gz"
GPU = ("kernel", "gpu_memcpy", "gpu_memset")


def _doc() -> dict:
    with gzip.open(SAMPLE, "rb") as f:
        return json.load(f)  # the test's own reading: the whole small file at once


def _read(doc: dict) -> dict:
    return trace.parse(io.BytesIO(json.dumps(doc).encode()))


def _union(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, -math.inf
    for s, e in sorted(intervals):
        if e <= end:
            continue
        total += e - max(s, end)
        end = e
    return total


def test_ranges_match_a_plain_second_reading_of_the_sample():
    doc = _doc()
    events = doc["traceEvents"]
    gpu = [e for e in events if e.get("cat") in GPU]
    ranges = [(i, e) for i, e in enumerate(events) if e.get("cat") == "gpu_user_annotation"]
    got = trace.parse(open(SAMPLE, "rb"))
    rank = got["ranks"][0]
    assert len(ranges) == 9  # 3 cycles of draft, target_verify, accept
    for i, r in ranges:
        s, e = r["ts"], r["ts"] + r["dur"]
        inside = [(max(k["ts"], s), min(k["ts"] + k["dur"], e)) for k in gpu if k["ts"] < e and k["ts"] + k["dur"] > s]
        by_class: dict[str, float] = {}
        for k in gpu:
            if k["ts"] < e and k["ts"] + k["dur"] > s:
                c = kernels.classify(k["name"])
                by_class[c] = by_class.get(c, 0.0) + min(k["ts"] + k["dur"], e) - max(k["ts"], s)
        entry = next(c for c in rank["ranges"][r["name"]]["cycles"] if c["event"] == i)
        assert entry["wall_ms"] == pytest.approx(r["dur"] / 1000, abs=1e-4)
        assert entry["busy_ms"] == pytest.approx(_union(inside) / 1000, abs=1e-3)
        assert entry["kernels"] == len(inside)
        assert entry["by_class"] == pytest.approx({c: v / 1000 for c, v in by_class.items()}, abs=1e-3)
        assert sum(entry["by_class"].values()) == pytest.approx(sum(b - a for a, b in inside) / 1000, abs=1e-3)
    assert rank["busy_ms"] == pytest.approx(_union([(k["ts"], k["ts"] + k["dur"]) for k in gpu]) / 1000, abs=1e-3)
    assert rank["kernels"] == len(gpu)


def test_cycles_come_from_the_cpu_cycle_range_holding_each_gpu_ranges_twin():
    got = trace.parse(open(SAMPLE, "rb"))
    cycles = {name: [c["cycle"] for c in r["cycles"]] for name, r in got["ranks"][0]["ranges"].items()}
    assert cycles == {"draft": [5, 6, 7], "target_verify": [5, 6, 7], "accept": [5, 6, 7]}
    verify = got["ranks"][0]["ranges"]["target_verify"]["cycles"]
    # one cudaLaunchKernel per kernel in eager PyTorch verify: launches counted in the CPU twin
    assert [c["launches"] for c in verify] == [c["kernels"] for c in verify]


def test_whole_sample_kernel_time_equals_the_recorders_own_total():
    """The recording script summed its 42,731 kernel events itself (samples README, spec_k2.log):
    336.690 ms of GPU time, 58 distinct kernels."""
    path = PROJECT_ROOT / "samples" / "traces" / "trace_spec_k2.json.gz"
    log = (PROJECT_ROOT / "samples" / "traces" / "spec_k2.log").read_text()
    total = float(re.search(r"kernel events (\d+) \((\d+) distinct, ([\d.]+) ms GPU total\)", log).group(3))
    t = trace.read(open(path, "rb"))
    got = trace.analyse(t)
    assert len(t.k_ts) - t.categories["gpu_memcpy"] - t.categories["gpu_memset"] == 42731
    names = {t.kernel_names[n] for n in t.k_name if not t.kernel_names[n].startswith("Mem")}
    assert len(names) == 58
    kernel_ms = sum(d for d, n in zip(t.k_dur, t.k_name, strict=True) if not t.kernel_names[n].startswith("Mem"))
    assert kernel_ms / 1000 == pytest.approx(total, abs=0.01)
    assert t.events == 337908
    # the loop is launch-bound: the GPU runs kernels for 15-20% of each cycle (README)
    rank = got["ranks"][0]
    assert 0.15 <= rank["busy_ms"] / rank["span_ms"] <= 0.25


def test_trace_wall_times_agree_with_the_runs_own_cycle_log():
    log = (PROJECT_ROOT / "samples" / "traces" / "spec_k2.log").read_text()
    logged = {int(m[0]): (float(m[1]), float(m[2]), float(m[3]))
              for m in re.findall(r"\[cycle (\d+)\] .*draft_ms=([\d.]+) verify_ms=([\d.]+) accept_ms=([\d.]+)", log)}
    ranges = trace.parse(open(SAMPLE, "rb"))["ranks"][0]["ranges"]
    for k, name in enumerate(("draft", "target_verify", "accept")):
        for c in ranges[name]["cycles"]:
            assert c["wall_ms"] == pytest.approx(logged[c["cycle"]][k], rel=0.15, abs=0.3)


@pytest.mark.parametrize(("name", "cls"), [
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "NCCL AllReduce RING_LL"),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "NCCL AllReduce RING_LL"),
    ("ncclDevKernel_AllGather_RING_LL128(ncclDevKernelArgsStorage<4096ul>)", "NCCL AllGather RING_LL128"),
    ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "NCCL SendRecv"),
    ("nvjet_sm90_tst_128x24_64x11_4x1_v_bz_TNT", "GEMM"),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "GEMM"),
    ("fmha_cutlassF_bf16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t>)",
     "Attention"),
    ("void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>>(Flash_fwd_params)", "Attention"),
    ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<OpaqueType<2u>, unsigned int, 4, 64, 64>()",
     "Copy/concat"),
    ("void at::native::elementwise_kernel<128, 4, gpu_kernel_impl_nocast<direct_copy_kernel_cuda(at::TensorIteratorBase&)>>",
     "Copy/concat"),
    ("Memcpy DtoH (Device -> Pageable)", "Copy/concat"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::BFloat16, at::native::ArgMaxOps<float>>>",
     "Elementwise/reduction"),
    ("void at::native::vectorized_elementwise_kernel<8, at::native::FillFunctor<c10::BFloat16>>", "Elementwise/reduction"),
    ("void at::native::tensor_kernel_scan_innermost_dim<long, std::multiplies<long> >", "Other"),
])
def test_kernel_classes_on_real_kernel_names(name, cls):
    assert kernels.classify(name) == cls


def test_the_docs_list_every_kernel_class_of_the_table():
    doc = (PROJECT_ROOT / "docs" / "traces.md").read_text()
    for cls, pattern, _ in kernels.CLASSES:
        assert f"| {cls} |" in doc
        assert f"`{pattern}`" in doc or not pattern


def test_a_cpu_only_profile_is_refused_with_why():
    doc = _doc()
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") not in GPU + ("gpu_user_annotation",)]
    with pytest.raises(trace.TraceError, match="no GPU events .* CPU-only profile .*ProfilerActivity.CUDA"):
        _read(doc)


def test_a_truncated_gz_is_refused_not_read_in_part():
    data = SAMPLE.read_bytes()
    with pytest.raises(trace.TraceError, match="truncated"):
        trace.parse(io.BytesIO(data[: len(data) // 2]))


def test_truncated_json_is_refused_with_where_it_stopped():
    raw = gzip.decompress(SAMPLE.read_bytes())
    with pytest.raises(trace.TraceError, match=r"cut short or damaged after \d+ bytes"):
        trace.parse(io.BytesIO(raw[: len(raw) // 2]))


def test_a_log_is_not_a_trace():
    assert not trace.is_trace(b"[2026-01-01 12:00:00 TP0] Decode batch. #running-req: 1\n")
    assert trace.is_trace(b'{\n  "schemaVersion": 1,\n  "deviceProperties": []')
    with pytest.raises(trace.TraceError, match="not a PyTorch profiler trace"):
        trace.parse(io.BytesIO(b"INFO server started\n"))


def test_absurd_timestamps_are_left_out_with_the_first_event_named():
    doc = _doc()
    bad = [i for i, e in enumerate(doc["traceEvents"]) if e.get("cat") == "kernel"][:5]
    for k, i in enumerate(bad):
        doc["traceEvents"][i]["ts"] = [-5.0, 1e30, "soon", 3.0, 4.0][k]
        doc["traceEvents"][i]["dur"] = [1.0, 1.0, 1.0, -2.0, 1e12][k]
    got = _read(doc)
    assert got["warnings"][0]["event"] == bad[0]
    assert "5 events have timestamps or durations that are no measurement" in got["warnings"][0]["message"]
    assert got["ranks"][0]["kernels"] == sum(1 for e in doc["traceEvents"] if e.get("cat") in GPU) - 5


def test_a_trace_of_absurd_timestamps_only_is_refused():
    doc = _doc()
    for e in doc["traceEvents"]:
        if e.get("cat") in GPU:
            e["ts"] = -1.0
    with pytest.raises(trace.TraceError, match="most of the trace is unreadable"):
        _read(doc)


def test_a_file_of_two_gpus_breaks_each_down_on_its_own():
    doc = _doc()
    twins = [dict(e, pid=1) for e in doc["traceEvents"] if e.get("cat") in GPU + ("gpu_user_annotation",)]
    doc["traceEvents"] += twins
    got = _read(doc)
    assert [r["device"] for r in got["ranks"]] == [0, 1]
    assert got["ranks"][0]["busy_ms"] == got["ranks"][1]["busy_ms"]
    assert "holds 2 GPUs" in got["warnings"][0]["message"]


def test_distributed_info_names_the_rank():
    doc = _doc()
    doc["distributedInfo"] = {"backend": "nccl", "rank": 1, "world_size": 2}
    raw = json.dumps({k: doc[k] for k in ("distributedInfo", "traceEvents")}).encode()
    got = trace.parse(io.BytesIO(raw))
    assert (got["ranks"][0]["rank"], got["ranks"][0]["world_size"]) == (1, 2)


def test_without_cycle_ranges_cycles_are_numbered_in_order():
    doc = _doc()
    doc["traceEvents"] = [e for e in doc["traceEvents"] if not str(e.get("name", "")).startswith(("cycle_", "ProfilerStep"))]
    got = _read(doc)
    r = got["ranks"][0]
    assert [c["cycle"] for c in r["ranges"]["draft"]["cycles"]] == [0, 1, 2]
    assert {c["cycle_from"] for c in r["ranges"]["draft"]["cycles"]} == {"order"}


def test_union_of_overlapping_streams_counts_overlap_once():
    import numpy as np

    starts = np.array([0.0, 500.0, 2000.0, 2100.0])
    ends = np.array([1000.0, 1500.0, 2200.0, 2150.0])
    assert trace.union_ms(starts, ends) == pytest.approx(1.7)


def test_timeline_keeps_each_cycles_kernels_and_ranges():
    got = trace.parse(open(SAMPLE, "rb"))
    tl = got["ranks"][0]["timelines"]
    assert sorted(tl) == ["5", "6", "7"]
    c = tl["6"]
    assert [r[0] for r in c["ranges"]] == ["draft", "target_verify", "accept"]
    assert len(c["start_ms"]) == len(c["dur_ms"]) == len(c["stream"]) == len(c["event"])
    assert 0 <= min(c["start_ms"]) and max(c["start_ms"]) <= c["ms"]


def test_reading_keeps_memory_per_kernel_not_per_json_byte(tmp_path: Path):
    """The reader keeps ~50 bytes a kernel in columns, never the events' dicts."""
    t = trace.read(open(SAMPLE, "rb"))
    held = sum(a.itemsize * len(a) for a in (t.k_dev, t.k_stream, t.k_name, t.k_ts, t.k_dur, t.k_idx))
    assert held <= 50 * len(t.k_ts)
    assert t.json_bytes > 40 * held  # the 3-cycle sample: 8.3 MB of JSON, 153 KB of columns


def test_without_gpu_ranges_the_cpu_ranges_are_the_windows():
    doc = _doc()
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") != "gpu_user_annotation"]
    rank = _read(doc)["ranks"][0]
    assert rank["ranges_from"] == "cpu"
    assert [c["cycle"] for c in rank["ranges"]["target_verify"]["cycles"]] == [5, 6, 7]
    assert all(c["kernels"] > 0 for c in rank["ranges"]["target_verify"]["cycles"])


def test_nccl_kernels_are_split_by_op_algorithm_and_protocol_in_a_range():
    doc = _doc()
    verify = next(e for e in doc["traceEvents"] if e.get("cat") == "gpu_user_annotation" and e["name"] == "target_verify")
    inside = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"
              and verify["ts"] <= e["ts"] and e["ts"] + e["dur"] <= verify["ts"] + verify["dur"]]
    for e in inside[:10]:
        e["name"] = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
    for e in inside[10:15]:
        e["name"] = "ncclDevKernel_AllReduce_Sum_bf16_NVLS_SIMPLE(ncclDevKernelArgsStorage<4096ul>)"
    got = _read(doc)["ranks"][0]["ranges"]["target_verify"]["cycles"]
    first = next(c for c in got if c["event"] == doc["traceEvents"].index(verify))
    assert first["by_class"]["NCCL AllReduce RING_LL"] == pytest.approx(sum(e["dur"] for e in inside[:10]) / 1000, abs=1e-3)
    assert first["by_class"]["NCCL AllReduce NVLS_SIMPLE"] == pytest.approx(
        sum(e["dur"] for e in inside[10:15]) / 1000, abs=1e-3)
