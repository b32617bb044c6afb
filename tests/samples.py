"""Where test logs live: our own recordings in samples/, public excerpts in tests/corpus/shared/."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
PROJECT_ROOT = Path(__file__).parent.parent
# Public excerpts, verbatim, each with its source in tests/corpus/SOURCES.md: in the repository so
# that the tests run from any clone.
PUBLIC_SAMPLES = Path(__file__).parent / "corpus" / "shared"


def public_excerpts() -> list[Path]:
    """The shared public excerpts themselves, sorted: not the goldens written beside them."""
    return sorted(p for p in PUBLIC_SAMPLES.iterdir() if p.is_file() and not p.name.endswith(".golden.json"))


def log_path(name: str) -> Path:
    """A log this project recorded itself on 2 H200 GPUs (samples/, shared with the demo)."""
    return PROJECT_ROOT / "samples" / name


def public_sample(name: str) -> Path:
    """A public excerpt from tests/corpus/shared. Missing is a failure, not a skip: a golden test
    that silently skips proves nothing."""
    path = PUBLIC_SAMPLES / name
    if not path.exists():
        pytest.fail(f"public sample {name} is not under {PUBLIC_SAMPLES}", pytrace=False)
    return path


def upload_bytes(user, name: str, content: bytes, **kw):
    """Register a run from raw bytes (bad-input tests)."""
    import io

    from ingest import registration

    run, _ = registration.register_upload(user, [registration.IncomingFile(name, io.BytesIO(content), len(content))],
                                      project=kw.pop("project", "team"), **kw)
    return run


def bench_row(label: str, value: str) -> str:
    """A benchmark result row as SGLang and vLLM print it: `{:<40} {:<10}`, trailing spaces and all."""
    return f"{label:<40} {value:<10}"


def with_server_args(name: str, **args) -> bytes:
    """A log of ours (samples/) with SGLang's `server_args=ServerArgs(...)` line first, saying
    the model and TP size (`model_path="llama-8b", tp_size=2`) that our recordings leave out."""
    fields = ", ".join(f"{k}={v!r}" for k, v in args.items())
    return f"server_args=ServerArgs({fields})\n".encode() + log_path(name).read_bytes()


def parsed_upload(user, name: str, content: bytes, **kw):
    """upload_bytes, then parse each file in this process (as the upload_run fixture does)."""
    from ingest import services

    run = upload_bytes(user, name, content, **kw)
    for lf in run.logfiles.all():
        services.parse_logfile(lf.id)
    run.refresh_from_db()
    return run


def dp_attention_log(windows: int = 4, rates: tuple[str, ...] = ("150.05", "47.00"), tagged: bool = True) -> bytes:
    """An SGLang log of a server with DP attention: server_args saying so, then one decode line per
    DP rank and window (`[... DP1 TP1]`, or no tag when not `tagged`), each rank with its own rate."""
    tag = " DP{d} TP{d}" if tagged else ""
    line = (f"[2025-05-08 10:00:0{{s}}{tag}] Decode batch. #running-req: 8, #token: 900, token usage: 0.05, "
            "accept len: 2.{d}5, gen throughput (token/s): {g}, #queue-req: 0, ")
    head = (f"server_args=ServerArgs(model_path='m', tp_size={len(rates)}, dp_size={len(rates)}, "
            "enable_dp_attention=True, speculative_num_steps=3)")
    lines = [head] + [line.format(s=s, d=d, g=g) for s in range(windows) for d, g in enumerate(rates)]
    return ("\n".join(lines) + "\n").encode()
