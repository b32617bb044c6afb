"""Record a small speculative-decoding loop under torch.profiler: the recipe of
samples/traces/trace_tp1_*.json.gz and their .log files (run on one H200, PyTorch 2.11).

    OUT=DIR TAG=flash torchrun --nproc-per-node 1 scripts/record_trace.py
    OUT=DIR TAG=flash_k4 K=4 torchrun --nproc-per-node 1 scripts/record_trace.py
    OUT=DIR TAG=ll_ring NCCL_PROTO=LL NCCL_ALGO=Ring torchrun --nproc-per-node 2 scripts/record_trace.py

A target of 8 Llama-shaped blocks (attention over a 512-token KV cache, SwiGLU MLP, random bf16
weights), a one-block draft; with several ranks the target is tensor-parallel (column-parallel in,
row-parallel out, an all-reduce after attention and after the MLP, as the serving engines do), so
its trace holds NCCL kernels. Each cycle: `draft` (K one-token steps), `target_verify` (K+1 tokens
in one forward), `accept` (argmax compare; the number accepted is drawn, p = 0.7), record_function
ranges inside `cycle_N`, also timed with CUDA events (the `[cycle i]` lines, as in spec_k2.log).
TAG=math sends attention through SDPA's math backend. The samples were recorded on one GPU (a
second was not lent): the several-rank path is written the same way but was not run.
"""

import gzip
import os
import random
import shutil

import torch
import torch.distributed as D
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function, schedule

OUT, TAG, K = os.environ["OUT"], os.environ["TAG"], int(os.environ.get("K", "2"))
if TAG == "math":
    from torch.nn.attention import SDPBackend, sdpa_kernel

    sdpa_kernel(SDPBackend.MATH).__enter__()
D.init_process_group("nccl")
RANK, WORLD = D.get_rank(), D.get_world_size()
torch.cuda.set_device(RANK)
torch.manual_seed(1234)
H, NH, INTER, VOCAB, BATCH, CTX = 4096, 32, 14336, 32000, 8, 512


def w(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.bfloat16, device="cuda") * 0.02


class Block:
    def __init__(self, tp: int) -> None:
        self.h, self.d, self.tp = NH // tp, H // NH, tp
        self.qkv, self.o = w(H, 3 * self.h * self.d), w(self.h * self.d, H)
        self.up, self.dn = w(H, 2 * INTER // tp), w(INTER // tp, H)
        self.k, self.v = w(BATCH, self.h, CTX, self.d), w(BATCH, self.h, CTX, self.d)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = (x @ self.qkv).view(b, t, 3, self.h, self.d).unbind(2)
        k = torch.cat([self.k, k.transpose(1, 2)], 2)
        v = torch.cat([self.v, v.transpose(1, 2)], 2)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k, v).transpose(1, 2).reshape(b, t, -1) @ self.o
        if self.tp > 1:
            D.all_reduce(o)
        x = F.rms_norm(x + o, (H,))
        g, u = (x @ self.up).chunk(2, -1)
        m = (F.silu(g) * u) @ self.dn
        if self.tp > 1:
            D.all_reduce(m)
        return F.rms_norm(x + m, (H,))


target = [Block(WORLD) for _ in range(8)]
draft = Block(1)
lm = w(H, VOCAB)
x = torch.randn(BATCH, 1, H, dtype=torch.bfloat16, device="cuda")
rng = random.Random(1236)
lines: list[str] = []


def cycle(i: int) -> None:
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
    with record_function(f"cycle_{i}"):
        ev[0].record()
        with record_function("draft"):
            h, toks = x, []
            for _ in range(K):
                h = draft(h)
                toks.append((h[:, -1] @ lm).argmax(-1))
        ev[1].record()
        with record_function("target_verify"):
            y = torch.cat([x] * (K + 1), 1)
            for block in target:
                y = block(y)
            logits = y @ lm
        ev[2].record()
        with record_function("accept"):
            same = (logits.argmax(-1)[:, :-1] == torch.stack(toks, 1)).sum()
            accepted = 0
            while accepted < K and rng.random() < 0.7:
                accepted += 1
            same.item()
        ev[3].record()
    torch.cuda.synchronize()
    d, v, c = ev[0].elapsed_time(ev[1]), ev[1].elapsed_time(ev[2]), ev[2].elapsed_time(ev[3])
    lines.append(f"[cycle {i}] steps={K} accepted={accepted} draft_ms={d:.3f} verify_ms={v:.3f} accept_ms={c:.3f} "
                 f"cycle_ms={d + v + c:.3f} tokens={accepted + 1}")


for i in range(3):  # warm-up outside the profiler: communicators, cuBLAS handles
    cycle(-1 - i)
lines.clear()
path = os.path.join(OUT, f"trace_tp{WORLD}_{TAG}_rank{RANK}.json")
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], schedule=schedule(wait=1, warmup=1, active=6),
             on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
    for i in range(8):
        cycle(i)
        prof.step()
with open(path, "rb") as src, gzip.open(path + ".gz", "wb", 9) as dst:
    shutil.copyfileobj(src, dst)
os.remove(path)
if RANK == 0:
    with open(os.path.join(OUT, f"trace_tp{WORLD}_{TAG}.log"), "w") as f:
        f.write(f"# record_trace tp={WORLD} layers=8 k={K} tag={TAG}\n"
                "# profiler schedule: wait=1 warmup=1 active=6; trace holds cycles 2..7\n" + "\n".join(lines) + "\n")
D.destroy_process_group()
