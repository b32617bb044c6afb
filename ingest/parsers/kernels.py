"""The classes of GPU kernels a trace's time is broken into: one table, first match wins.

docs/traces.md lists the same table for people; tests/test_parsers_kernels.py holds the two
equal and checks each class on real kernel names. NCCL kernels are split further by what their
name says: collective, algorithm and protocol (`ncclDevKernel_AllReduce_Sum_bf16_RING_LL` is
"NCCL AllReduce RING_LL"), because the protocol a collective ran with is what a tuning changes.
"""

from __future__ import annotations

import re
from functools import lru_cache

NCCL = "NCCL"
OTHER = "Other"

# (class, pattern searched in the kernel's name, what it catches). Order matters: attention
# kernels are often CUTLASS templates (so before GEMM), and a copy can be an elementwise
# template whose functor is a copy (`elementwise_kernel<... direct_copy_kernel_cuda ...>`).
CLASSES: tuple[tuple[str, str, str], ...] = (
    (NCCL, r"^(void )?nccl|ncclDevKernel|ncclKernel",
     "NCCL collectives and send/recv, split by op, algorithm and protocol"),
    ("Attention", r"(?i)flash|fmha|attention|attn|paged_?kv|BatchDecode|BatchPrefill|mha_|xformers|"
                  r"decode_kernel|merge_state",
     "FlashAttention, memory-efficient attention (fmha_cutlass), FlashInfer, paged attention"),
    ("GEMM", r"(?i)gemm|gemv|nvjet|cublas|cutlass|xmma|matmul|_mm_|splitKreduce|sm\d+_.*_tn|wgmma|Kernel2",
     "cuBLAS/cuBLASLt (nvjet, sm90_xmma), CUTLASS, Triton matmuls, split-K reductions"),
    ("Copy/concat", r"(?i)^Memcpy|^Memset|copy|CatArray|concat|gather|scatter|index_select|indexSelect|"
                    r"index_put|index_kernel|take_along|_to_copy|transpose",
     "memcpy/memset, copies and casts, torch.cat, gather/scatter and indexing"),
    ("Elementwise/reduction", r"(?i)elementwise|reduce|reduction|softmax|norm|silu|gelu|swiglu|act_and_mul|"
                              r"rotary|rope|triton_|argmax|topk|sort|cumsum|sum_|mean|max_|min_|where|fill|"
                              r"sampling|arange",
     "pointwise and fused Triton kernels, norms, activations, rotary, softmax, argmax/top-k, sampling"),
    (OTHER, r"", "everything else"),
)

_COMPILED = tuple((name, re.compile(pattern)) for name, pattern, _ in CLASSES)
# ncclDevKernel_AllReduce_Sum_bf16_RING_LL, ncclKernel_AllReduce_RING_LL_Sum_float (older NCCL),
# ncclDevKernel_SendRecv, ncclDevKernel_AllGather_RING_LL: op first, then the algorithm and protocol.
_NCCL_NAME = re.compile(r"nccl(?:Dev)?Kernel_([A-Za-z]+)")
_NCCL_ALGO = re.compile(
    r"_(RING|TREE|COLLNET_DIRECT|COLLNET_CHAIN|COLLNET|NVLS_TREE|NVLS|PAT)_(LL128|LL|SIMPLE)(?![A-Za-z0-9])")


def nccl_parts(name: str) -> tuple[str, str, str] | None:
    """(op, algorithm, protocol) of an NCCL kernel name; '' where the name does not say."""
    m = _NCCL_NAME.search(name)
    if not m:
        return None
    algo = _NCCL_ALGO.search(name)
    return m.group(1), algo.group(1) if algo else "", algo.group(2) if algo else ""


@lru_cache(maxsize=1 << 16)
def classify(name: str) -> str:
    """The class of a kernel (or memcpy/memset) name: a CLASSES name, NCCL ones with their op,
    algorithm and protocol ("NCCL AllReduce RING_LL")."""
    for cls, pattern in _COMPILED:
        if pattern.search(name):
            if cls == NCCL:
                parts = nccl_parts(name)
                if parts is None:
                    return NCCL
                op, algo, proto = parts
                return " ".join(p for p in (NCCL, op, f"{algo}_{proto}" if algo else "") if p)
            return cls
    return OTHER


def family(cls: str) -> str:
    """The table's class a (possibly NCCL-split) class belongs to."""
    return NCCL if cls.startswith(NCCL) else cls
