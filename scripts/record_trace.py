"""Record a small tensor-parallel speculative-decoding loop under torch.profiler: the recipe of
samples/traces/trace_tp2_*.json.gz (2 GPUs, NCCL all-reduces in every target layer).

    torchrun --nproc-per-node 2 scripts/record_trace.py --out DIR --tag default
    NCCL_PROTO=LL NCCL_ALGO=Ring torchrun --nproc-per-node 2 scripts/record_trace.py --out DIR --tag ll_ring
    torchrun --nproc-per-node 1 scripts/record_trace.py --out DIR --tag math --sdpa math   (one GPU, no NCCL)

A target of `--layers` Llama-shaped blocks (attention over a KV cache, SwiGLU MLP), tensor-parallel
over the ranks (column-parallel in, row-parallel out, one all-reduce after attention and one after
the MLP, as Megatron and the serving engines do), random bf16 weights; a one-block draft on each
rank. Each cycle: `draft` (k one-token steps), `target_verify` (k+1 tokens in one forward),
`accept` (argmax compare, a simulated number accepted): record_function ranges inside `cycle_N`,
timed with CUDA events too (the `[cycle i]` lines, like spec_k2.log). Only the acceptance is
simulated; every kernel and time is real.
"""

from __future__ import annotations

import argparse
import gzip
import os
import random
import shutil
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function, schedule


class Block(torch.nn.Module):
    def __init__(self, hidden: int, heads: int, inter: int, tp: int, ctx: int, batch: int) -> None:
        super().__init__()
        self.h, self.hd = heads // tp, hidden // heads
        d = dict(dtype=torch.bfloat16, device="cuda")
        self.qkv = torch.randn(hidden, 3 * self.h * self.hd, **d) * 0.02
        self.o = torch.randn(self.h * self.hd, hidden, **d) * 0.02
        self.up = torch.randn(hidden, 2 * inter // tp, **d) * 0.02
        self.down = torch.randn(inter // tp, hidden, **d) * 0.02
        self.k = torch.randn(batch, self.h, ctx, self.hd, **d)
        self.v = torch.randn(batch, self.h, ctx, self.hd, **d)
        self.tp = tp

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = (x @ self.qkv).view(b, t, 3, self.h, self.hd).unbind(2)
        k = torch.cat([self.k, k.transpose(1, 2)], dim=2)
        v = torch.cat([self.v, v.transpose(1, 2)], dim=2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k, v).transpose(1, 2).reshape(b, t, -1)
        a = a @ self.o
        if self.tp > 1:
            dist.all_reduce(a)
        x = F.rms_norm(x + a, (x.shape[-1],))
        g, u = (x @ self.up).chunk(2, dim=-1)
        m = (F.silu(g) * u) @ self.down
        if self.tp > 1:
            dist.all_reduce(m)
        return F.rms_norm(x + m, (x.shape[-1],))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--tag", default="default")
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--cycles", type=int, default=6)
    p.add_argument("--sdpa", default="", help="math: attention through the math backend only (a slower verify)")
    a = p.parse_args()
    if a.sdpa == "math":
        from torch.nn.attention import SDPBackend, sdpa_kernel

        sdpa_kernel(SDPBackend.MATH).__enter__()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(rank)
    torch.manual_seed(1234)
    hidden, heads, inter, vocab, batch, ctx = 4096, 32, 14336, 32000, 8, 512
    target = [Block(hidden, heads, inter, world, ctx, batch) for _ in range(a.layers)]
    draft = Block(hidden, heads, inter, 1, ctx, batch)
    lm = torch.randn(hidden, vocab, dtype=torch.bfloat16, device="cuda") * 0.02
    x = torch.randn(batch, 1, hidden, dtype=torch.bfloat16, device="cuda")
    rng = random.Random(1236)
    lines = []

    def cycle(i: int) -> None:
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
        with record_function(f"cycle_{i}"):
            ev[0].record()
            with record_function("draft"):
                h, toks = x, []
                for _ in range(a.steps):
                    h = draft(h)
                    toks.append((h[:, -1] @ lm).argmax(-1))
            ev[1].record()
            with record_function("target_verify"):
                y = torch.cat([x] + [x] * a.steps, dim=1)
                for blk in target:
                    y = blk(y)
                logits = y @ lm
            ev[2].record()
            with record_function("accept"):
                guess = logits.argmax(-1)[:, :-1]
                same = (guess == torch.stack(toks, 1)).sum()
                accepted = 0
                while accepted < a.steps and rng.random() < 0.7:
                    accepted += 1
                _ = same.item()
            ev[3].record()
        torch.cuda.synchronize()
        d, v, c = (ev[0].elapsed_time(ev[1]), ev[1].elapsed_time(ev[2]), ev[2].elapsed_time(ev[3]))
        lines.append(f"[cycle {i}] steps={a.steps} accepted={accepted} draft_ms={d:.3f} verify_ms={v:.3f} "
                     f"accept_ms={c:.3f} cycle_ms={d + v + c:.3f} tokens={accepted + 1}")

    for i in range(3):  # warm-up outside the profiler (NCCL communicators, cuBLAS handles)
        cycle(-1 - i)
    lines.clear()
    wait, warm = 1, 1
    tmp = os.path.join(a.out, f"trace_tp{world}_{a.tag}_rank{rank}.json")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 schedule=schedule(wait=wait, warmup=warm, active=a.cycles),
                 on_trace_ready=lambda prof: prof.export_chrome_trace(tmp)) as prof:
        for i in range(wait + warm + a.cycles):
            cycle(i)
            prof.step()
    with open(tmp, "rb") as f, gzip.open(tmp + ".gz", "wb", compresslevel=9) as g:
        shutil.copyfileobj(f, g)
    os.remove(tmp)
    if rank == 0:
        env = " ".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("NCCL_"))
        with open(os.path.join(a.out, f"trace_tp{world}_{a.tag}.log"), "w") as f:
            f.write(f"# record_trace tp={world} layers={a.layers} steps(k)={a.steps} tag={a.tag} sdpa={a.sdpa or 'default'} "
                    f"date={time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n")
            f.write(f"# device={torch.cuda.get_device_name()} torch={torch.__version__} nccl={torch.cuda.nccl.version()} "
                    f"env: {env or '(no NCCL_ variables)'}\n")
            f.write(f"# profiler schedule: wait={wait} warmup={warm} active={a.cycles}; trace holds cycles "
                    f"{wait + warm}..{wait + warm + a.cycles - 1}\n")
            f.write("\n".join(lines) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
