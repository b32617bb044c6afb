"""The native scanner reads vLLM's `non-default args: {...}` lines (_scan_vllm_args.h) as vllm.Parser._args
does: the real line, and the same line damaged or holding the values vLLM prints there (nested configs,
booleans, floats, a speculative config as a dict or as JSON), among real V0 and V1 spec lines whose
records depend on the launch each args line starts (its draft length, the V0 counters): the native
engine's records and settings equal the line engine's, and past the first records the scanner reads
the line itself."""

import random
import re

import pytest

from tests.test_parsers_native import _same
from tests.test_scan_vllm import SPEC, VLLM, _python_lines, mixed_log, same_mixed

ARGS = [line for line in VLLM if "non-default args" in line]
V0 = [line for line in SPEC if "System efficiency" in line]

# What an args line may hold, or how it may come damaged: each must be read as Python reads it.
ARGS_DAMAGED = [
    lambda s: s.replace("'port': 8080", "'port': 8080, 'enforce_eager': True, 'trust_remote_code': False, 'seed': None"),
    lambda s: s.replace("'port': 8080", "'gpu_memory_utilization': 0.92, 'swap_space': -4, 'x': -0.5"),
    lambda s: s.replace("'port': 8080", "'compilation_config': {'level': 3, 'cudagraph_capture_sizes': [1, 2, 4]}"),
    lambda s: s.replace("'port': 8080", "'speculative_config': {'method': 'eagle3', 'num_speculative_tokens': 3}"),
    lambda s: s.replace("'port': 8080", "'speculative_config': '{\"method\": \"ngram\", \"num_speculative_tokens\": 5}'"),
    lambda s: s.replace("'port': 8080", "'speculative_config': '{\"num_speculative_tokens\": 2'"),
    lambda s: s.replace("'port': 8080", "'max_num_seqs': 256, 'pipeline_parallel_size': 2, 'data_parallel_size': 4"),
    lambda s: s.replace("'port': 8080", "'enable_expert_parallel': True"),
    lambda s: s.replace("'tensor_parallel_size': 2", "'tensor_parallel_size': '2x'"),
    lambda s: s.replace("'tensor_parallel_size': 2", "'tensor_parallel_size': " + "9" * 30),
    lambda s: s.replace("'tensor_parallel_size': 2", "'tensor_parallel_size': 02"),
    lambda s: s.replace("'tensor_parallel_size': 2", "'tensor_parallel_size': 1e3"),
    lambda s: s.replace("'tensor_parallel_size': 2", "'tensor_parallel_size': 2.5"),
    lambda s: s.replace("'tensor_parallel_size': 2", "'tensor_parallel_size': [2]"),
    lambda s: s.replace("'tensor_parallel_size': 2", "'tensor_parallel_size': None"),
    lambda s: s.replace("'model': '/mnt/models'", "'model': \"/mnt/it's\""),
    lambda s: s.replace("'model': '/mnt/models'", "'model': '/mnt/\\'q\\''"),
    lambda s: s.replace("'model': '/mnt/models'", "'model': '/mnt/modèles'"),
    lambda s: s.replace("'model': '/mnt/models'", "'model': '/mnt/' '/models'"),
    lambda s: s.replace("'model': '/mnt/models'", "'model': b'/mnt'"),
    lambda s: s.replace("'model': '/mnt/models'", "'model': ('a', 'b')"),
    lambda s: s.replace("'model': '/mnt/models'", "1: 2"),
    lambda s: s.replace("'model': '/mnt/models'", "'model': {'a': {'b': {'c': [[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]}}}"),
    lambda s: s.replace(": ", ":", 2),
    lambda s: s.replace(", ", ",  ", 2),
    lambda s: s.replace(", ", "\t, ", 1),
    lambda s: s.replace("}", ", }"),
    lambda s: s.replace("2}", "2]"),
    lambda s: s + "  ",
    lambda s: s + " # launch 2",
    lambda s: s + " and more",
    lambda s: s[: len(s) * 2 // 3],
    lambda s: re.sub(r"\{.*", "{}", s),
    lambda s: re.sub(r"\{.*", "[1, 2]", s),
    lambda s: re.sub(r"\{.*", "", s),
    lambda s: s.replace("{", "{ ", 1).replace("}", " }"),
    lambda s: "(APIServer pid=1) " + s,
    lambda s: "(APIServer pid=7) " + s,
    lambda s: "[1;36m(APIServer pid=1)[0;0m " + s,
    lambda s: s.replace("INFO", "INFO LLM version", 1),
    lambda s: s.replace("INFO", "INFO metrics: throughput:", 1),
    lambda s: s.replace("INFO", "INFO vllm serve", 1),
    lambda s: s.replace("INFO", "INFO NCCL_PROTO=LL", 1),
    lambda s: s.replace("'port'", "'speculative'", 1),
    lambda s: s.replace("non-default args: ", "non-default args: {", 1),
    lambda s: s.replace("non-default args: ", "non-default args: x ", 1),
]


def test_the_corpus_holds_an_args_line_and_v0_spec_lines():
    assert ARGS and ARGS[0].split("non-default args: ")[1].startswith("{'port': 8080, 'model'")
    assert len(V0) >= 4


def _launches(seed: int) -> bytes:
    """Args lines (real, some damaged) each starting a launch of real V0 and V1 spec lines (the draft length
    a line names, the V0 counters: what a new launch resets), and a launch command among them."""
    rng = random.Random(seed)
    lines: list[str] = []
    for _ in range(rng.randint(3, 30)):
        line = rng.choice(ARGS)
        if rng.random() < 0.4:
            line = rng.choice(ARGS_DAMAGED)(line)
        lines.append(line if rng.random() < 0.9 else "$ vllm serve m --num-speculative-tokens 4")
        start = rng.randrange(len(SPEC))
        lines += rng.choice([V0, V0[1:], SPEC[start:start + 3], []])
    return "\n".join(lines).encode() + b"\n"


@pytest.mark.parametrize("seed", range(60))
def test_args_lines_starting_launches_of_real_spec_lines_give_the_records_lines_give(seed):
    same_mixed(_launches(seed))


@pytest.mark.parametrize("seed", range(20))
def test_args_lines_among_real_vllm_lines_give_the_records_lines_give(seed):
    same_mixed(mixed_log(seed, [VLLM, ARGS, V0], ARGS_DAMAGED, 0.3))


def test_each_damaged_args_line_alone_and_repeated_gives_the_records_lines_give():
    for damage in ARGS_DAMAGED:
        line = damage(ARGS[0])
        _same(("\n".join([ARGS[0], *V0, line, *V0, line, *V0[:2]]) + "\n").encode())


def test_the_scanner_reads_a_launchs_args_line_itself():
    """The real args line repeated, each starting a launch of V0 spec lines: past the first records (its
    settings, the spec format's) Python reads neither the args lines nor the spec lines."""
    data = (("\n".join([ARGS[0], *V0]) + "\n") * 40).encode()
    fed = _python_lines(data)
    assert len(fed) <= 2, fed[-5:]
    _same(data, 1 << 10, 1 << 10)
    _same(data)
    # booleans, None, negative numbers and floats, a nested config, other spacing: the grammar read in C
    for damage in (ARGS_DAMAGED[0], ARGS_DAMAGED[1], ARGS_DAMAGED[2], ARGS_DAMAGED[23], ARGS_DAMAGED[24]):
        data = (("\n".join([damage(ARGS[0]), *V0]) + "\n") * 10).encode()
        assert len(_python_lines(data)) <= 2
