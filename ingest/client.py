"""runlens-upload: send run logs to runlens from CI, standard library only.

    runlens-upload --url https://runlens.example --token $RUNLENS_TOKEN \\
        --project team --name "nightly $SHA" --tag ci --tag h200 --wait server.log bench.log.gz

Files stream from disk in 1 MiB chunks (never whole in memory). Exit status: 0 uploaded (and,
with --wait, parsed), 1 the parse failed (or, with --wait, one of the files did while others
parsed), 2 bad arguments, 3 the server refused or could not be reached (a .gz cut short is refused
naming the file; so is an unknown --project), 4 --wait timed out, 6 --fail-on-regression: the run
regressed past the limit, 7 --wait: a file was partial (it ends mid-line: its last line was not
read), 8 --fail-on-drift: NCCL settings the launcher declared did not reach the run's workers (checked
before the regression gate: a drifted run's figures measure another configuration). --allow-partial
accepts a ready run holding less than was sent (exit 0, warnings printed).

Every figure this script prints is the text the server wrote (runs/display.py on the server): the
console, the markdown summary and the pages read the same digits.

A CI gate (the baseline: a run id, "pinned", the project's pinned run, or branch:main, the
latest run of that branch uploaded before this one):

    runlens-upload ... --baseline branch:main --wait --fail-on-regression 3 --fail-on-drift \
        --summary-md "$GITHUB_STEP_SUMMARY"
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

CHUNK = 1 << 20
EXIT_FAILED, EXIT_USAGE, EXIT_HTTP, EXIT_TIMEOUT = 1, 2, 3, 4
EXIT_REGRESSION = 6
EXIT_PARTIAL = 7
EXIT_DRIFT = 8


class ClientError(Exception):
    def __init__(self, message: str, code: int = EXIT_HTTP, status: int | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.status = status  # the HTTP status, when the server answered
        self.retry_after = retry_after


class Multipart:
    """A multipart/form-data body whose length is known up front and whose files are read lazily."""

    def __init__(self, fields: dict[str, str], files: list[Path]) -> None:
        self.boundary = f"runlens-{uuid.uuid4().hex}"
        self.parts: list[bytes | Path] = []
        for name, value in fields.items():
            self.parts.append(self._head(name) + value.encode() + b"\r\n")
        for path in files:
            filename = path.name.replace('"', "%22").replace("\r", "").replace("\n", "")
            self.parts.append(self._head("files", filename))
            self.parts.append(path)
            self.parts.append(b"\r\n")
        self.parts.append(f"--{self.boundary}--\r\n".encode())

    def _head(self, name: str, filename: str | None = None) -> bytes:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        kind = "application/octet-stream" if filename else "text/plain; charset=utf-8"
        return (f"--{self.boundary}\r\nContent-Disposition: {disposition}\r\nContent-Type: {kind}\r\n\r\n").encode()

    @property
    def content_type(self) -> str:
        return f"multipart/form-data; boundary={self.boundary}"

    def __len__(self) -> int:
        return sum(p.stat().st_size if isinstance(p, Path) else len(p) for p in self.parts)

    def __iter__(self) -> Iterator[bytes]:
        for part in self.parts:
            if isinstance(part, Path):
                with open(part, "rb") as f:
                    while chunk := f.read(CHUNK):
                        yield chunk
            else:
                yield part


def request(method: str, url: str, token: str, body: Multipart | None = None, timeout: float = 300,
            extra_headers: dict[str, str] | None = None) -> dict:
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json", "User-Agent": "runlens-upload",
               **(extra_headers or {})}
    data = None
    if body is not None:
        headers["Content-Type"] = body.content_type
        headers["Content-Length"] = str(len(body))
        data = iter(body)
    req = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as e:
        raise ClientError(f"{method} {url}: HTTP {e.code} {_reason(e)}", status=e.code,
                          retry_after=_seconds(e.headers.get("Retry-After"))) from None
    except urllib.error.URLError as e:
        raise ClientError(f"cannot reach {url}: {e.reason}") from None
    except (TimeoutError, ConnectionError) as e:
        raise ClientError(f"{method} {url}: {e}") from None


def _seconds(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None  # an HTTP date: use our own backoff


RETRY_STATUSES = frozenset({502, 503, 504})  # busy database, Redis away, a proxy in between restarting


def with_retries(call, attempts: int = 6, first_delay: float = 1.0, max_delay: float = 30.0,
                 sleep=time.sleep, say=print):
    """`call()` again while the server answers 503 (or 502/504), with bounded
    exponential backoff (1, 2, 4, ... s, at most `max_delay`, or the server's Retry-After if
    longer), `attempts` tries in all. Other errors, and the last one, are raised as they are.
    Uploads are safe to repeat: they carry an Idempotency-Key, so a retry never makes a second run.
    """
    delay = first_delay
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except ClientError as e:
            if attempt == attempts or e.status not in RETRY_STATUSES:
                raise
            wait = min(max(delay, e.retry_after or 0.0), max_delay)
            say(f"runlens-upload: {e}; retrying in {wait:g} s ({attempt}/{attempts - 1})", file=sys.stderr)
            sleep(wait)
            delay = min(delay * 2, max_delay)
    raise AssertionError("unreachable")


def _reason(e: urllib.error.HTTPError) -> str:
    """The server's {"error": {"code", "message"}}, or whatever it sent instead."""
    raw = e.read()[:2000]
    try:
        err = json.loads(raw)["error"]
        return f"{err['code']}: {err['message']}"
    except (ValueError, KeyError, TypeError):
        return e.reason if not raw else f"{e.reason}: {raw.decode('utf-8', 'replace').strip()[:300]}"


def ci_from_environment(env: dict[str, str]) -> dict[str, str]:
    """Commit, branch and job URL from GitHub Actions or GitLab CI, when running there."""
    if env.get("GITHUB_SHA"):
        url = ""
        if env.get("GITHUB_RUN_ID"):
            url = f"{env.get('GITHUB_SERVER_URL', 'https://github.com')}/{env.get('GITHUB_REPOSITORY', '')}" \
                  f"/actions/runs/{env['GITHUB_RUN_ID']}"
        ci = {"commit": env["GITHUB_SHA"], "branch": env.get("GITHUB_REF_NAME", ""), "url": url}
    elif env.get("CI_COMMIT_SHA"):
        ci = {"commit": env["CI_COMMIT_SHA"], "branch": env.get("CI_COMMIT_REF_NAME", ""),
              "url": env.get("CI_JOB_URL", "")}
    else:
        return {}
    return {k: v for k, v in ci.items() if v}


def build_meta(args: argparse.Namespace) -> dict:
    meta: dict = {}
    if args.meta_json:
        try:
            meta = json.loads(Path(args.meta_json).read_text())
        except (OSError, ValueError) as e:
            raise ClientError(f"--meta-json {args.meta_json}: {e}", EXIT_USAGE) from None
        if not isinstance(meta, dict):
            raise ClientError(f"--meta-json {args.meta_json}: not a JSON object", EXIT_USAGE)
    if args.name:
        meta["name"] = args.name
    if args.project:
        meta["project"] = args.project
    if args.create_project:
        if not meta.get("project"):
            raise ClientError("--create-project needs --project NAME (or meta.project)", EXIT_USAGE)
        meta["create_project"] = True
    if args.tag:
        meta["tags"] = list(dict.fromkeys([*meta.get("tags", []), *args.tag]))
    if "ci" not in meta and (ci := ci_from_environment(dict(os.environ))):
        meta["ci"] = ci
    return meta


def losses(body: dict) -> tuple[list[str], list[str]]:
    """What a ready run's /status says it lost: (files that failed, files read only in part)."""
    failed, partial = [], []
    for lf in body.get("logfiles") or []:
        if lf.get("status") == "failed":
            failed.append(f"{lf.get('name')}: {lf.get('error') or 'failed'}")
        elif lf.get("partial"):
            partial.append(f"{lf.get('name')}: {lf['partial']}")
    return failed, partial


def wait_for(base: str, token: str, run_id: int, timeout: float, allow_partial: bool = False) -> int:
    """Poll the run's status until it is ready (0) or failed (1); EXIT_TIMEOUT after `timeout` s.

    A ready run that holds less than was sent is not a success unless `allow_partial`: a file
    that failed while others parsed is EXIT_FAILED, a file cut mid-line EXIT_PARTIAL."""
    deadline = time.monotonic() + timeout
    delay = 0.5
    status = "queued"
    while time.monotonic() < deadline:
        body = with_retries(lambda: request("GET", f"{base}/api/v1/runs/{run_id}/status", token, timeout=60))
        status = body.get("status")
        if status == "ready":
            failed, partial = losses(body)
            for what, files in (("failed", failed), ("partial", partial)):
                for line in files:
                    print(f"run {run_id}: {what}: {line}")
            if (failed or partial) and not allow_partial:
                print(f"run {run_id}: ready, but not every file was read whole (--allow-partial accepts that)")
                return EXIT_FAILED if failed else EXIT_PARTIAL
            print(f"run {run_id}: ready")
            return 0
        if status == "failed":
            print(f"run {run_id}: failed: {body.get('error') or 'no reason given'}")
            return EXIT_FAILED
        time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 2, 5.0)
    raise ClientError(f"run {run_id} still {status} after {timeout:g} s", EXIT_TIMEOUT)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="runlens-upload", description="Upload the log files of one run to runlens.",
        epilog="Exit status: 0 done, 1 the parse failed (--wait), 2 bad arguments, 3 HTTP or network error, "
        "4 --wait timed out, 6 regressed past --fail-on-regression, 7 a file was partial (--wait), "
        "8 NCCL drift with --fail-on-drift (the workers did not get the declared NCCL settings).",
    )
    p.add_argument("files", nargs="+", type=Path, metavar="FILES",
                   help="log files of the run, and PyTorch profiler traces (.json; .gz is fine)")
    p.add_argument("--url", required=True, help="runlens base URL, e.g. https://runlens.example")
    p.add_argument("--token", default=None, help="API token (default: $RUNLENS_TOKEN)")
    p.add_argument("--project", help="project name, one of yours (default: your first project); "
                   "a name that is not one of your projects is an error (exit 3)")
    p.add_argument("--create-project", action="store_true",
                   help="create --project (you its admin) if no project has that name")
    p.add_argument("--name", help="run name (default: the first file's name)")
    p.add_argument("--tag", action="append", default=[], help="a tag; repeat for more")
    p.add_argument("--meta-json", metavar="FILE", help="JSON file with more metadata (steps, nccl_env, notes, ci)")
    p.add_argument("--wait", action="store_true", help="wait until the run is parsed; exit 1 if it failed")
    p.add_argument("--timeout", type=float, default=600, metavar="S", help="how long --wait waits (default 600)")
    p.add_argument("--allow-partial", action="store_true",
                   help="with --wait: exit 0 even if a file ends mid-line or failed while the others parsed")
    add_gate_arguments(p)
    return p


# ---- the CI gate: the run's verdict against its baseline --------------------------------------


def add_gate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--baseline", metavar="B",
                   help='what the verdict compares with: a run id, "pinned" (the project\'s pinned run, the '
                   'default) or branch:NAME (the latest ready run of that branch before this one)')
    p.add_argument("--fail-on-regression", type=float, metavar="PCT",
                   help="with --wait: exit 6 when the metric got worse by more than PCT %% beyond the noise")
    p.add_argument("--fail-on-drift", action="store_true",
                   help="with --wait: exit 8 when NCCL variables the launcher declared did not reach the run's "
                   "workers (checked before --fail-on-regression)")
    p.add_argument("--metric", default="throughput_tok_s",
                   help="the figure --fail-on-regression checks (default throughput_tok_s; also tokens_per_cycle, "
                   "cycle_ms, verify_ms, phase:NAME)")
    p.add_argument("--summary-md", type=Path, metavar="FILE",
                   help="with --wait: append a markdown summary (table and links) to FILE, e.g. $GITHUB_STEP_SUMMARY")


def gate_requested(args: argparse.Namespace) -> bool:
    return args.fail_on_regression is not None or args.summary_md is not None or args.fail_on_drift


def check_gate_arguments(args: argparse.Namespace) -> None:
    if gate_requested(args) and not args.wait:
        raise ClientError("--fail-on-regression, --fail-on-drift and --summary-md need --wait "
                          "(the verdict comes after the parse)",
                          EXIT_USAGE)
    if args.fail_on_regression is not None and args.fail_on_regression < 0:
        raise ClientError("--fail-on-regression takes a percentage >= 0", EXIT_USAGE)


def with_baseline(meta: dict, args: argparse.Namespace) -> dict:
    """meta.baseline from --baseline: 42, "pinned" or {"branch": "main"} (from branch:main)."""
    raw = (args.baseline or "").strip()
    if not raw:
        return meta
    if raw.isdigit():
        meta["baseline"] = int(raw)
    elif raw == "pinned":
        meta["baseline"] = "pinned"
    elif raw.startswith("branch:") and raw[len("branch:"):].strip():
        meta["baseline"] = {"branch": raw[len("branch:"):].strip()}
    else:
        raise ClientError(f"--baseline {raw!r}: give a run id, pinned or branch:NAME", EXIT_USAGE)
    return meta


def report_verdict(base: str, token: str, run_id: int, args: argparse.Namespace) -> int:
    """Print the verdict, write the summary; exit 8 on NCCL drift (--fail-on-drift), 6 if the gate
    says the run regressed."""
    query = {"metric": args.metric}
    if args.fail_on_regression is not None:
        query["fail_on_regression"] = f"{args.fail_on_regression:g}"
    verdict = request("GET", f"{base}/api/v1/runs/{run_id}/verdict?{urllib.parse.urlencode(query)}", token,
                      timeout=60)
    print_verdict(verdict)
    gate = verdict.get("gate") or {}
    if args.summary_md:
        try:
            with open(args.summary_md, "a", encoding="utf-8") as f:
                f.write(summary_markdown(verdict))
        except OSError as e:
            raise ClientError(f"--summary-md {args.summary_md}: {e.strerror or e}", EXIT_USAGE) from None
    if args.fail_on_drift and (verdict.get("nccl") or {}).get("alarm"):
        print("gate: NCCL drift (--fail-on-drift)")
        return EXIT_DRIFT
    return EXIT_REGRESSION if gate.get("fail") else 0


def print_verdict(verdict: dict) -> None:
    """The verdict on the console: headline, reasons, NCCL findings, links, the gate's word."""
    print(verdict.get("headline", ""))
    for reason in verdict.get("reasons", []):
        print(f"  - {reason}")
    for line in nccl_lines(verdict.get("nccl") or {}):
        print(f"  nccl: {line}")
    if verdict.get("compare_url"):
        print(f"compare: {verdict['compare_url']}")
    if (verdict.get("gate") or {}).get("text"):
        print(f"gate: {verdict['gate']['text']}")


def nccl_lines(nccl: dict) -> list[str]:
    """The NCCL finding, a line per drifted variable and per setting that differs from the baseline's."""
    lines = []
    for d in nccl.get("drift") or []:
        got = "never reached the workers" if d.get("effective") is None else f"reached them as {d['effective']}"
        lines.append(f"{d['key']} declared {d.get('declared')}, {got}")
    for d in nccl.get("differs") or []:
        lines.append(f"{d['key']}: this run {_unset(d.get('run'))}, baseline {_unset(d.get('baseline'))}")
    return lines


def _unset(value: object) -> str:
    return "unset" if value is None else str(value)


def _md(text: object) -> str:
    """A table cell: run names come from people, and a pipe or newline would break the table."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _text(f: dict, key: str) -> str:
    """A figure's number as the server wrote it (the pages' rounding); this script never rounds."""
    return str((f.get("text") or {}).get(key) or "—")


def summary_markdown(verdict: dict) -> str:
    """The verdict as markdown: title (with any NCCL finding), headline, one row per figure, the
    NCCL variables behind the finding, links to the comparison and the run."""
    word = verdict.get("verdict", "?")
    nccl = verdict.get("nccl") or {}
    # A drifted run is never green: its figures measure a configuration nobody asked for.
    icon = "⚠️" if nccl.get("alarm") else {"regression": "🔴", "improvement": "🟢", "no change": "⚪"}.get(word, "⚠️")
    lines = [f"### {icon} {_md(verdict.get('title') or f'runlens: {word}')}", "", _md(verdict.get("headline", "")), ""]
    figures = verdict.get("figures") or []
    if figures:
        lines += ["| Figure | Baseline | This run | Δ | Δ % | Noise ± | |", "|---|---:|---:|---:|---:|---:|---|"]
        for f in figures:
            pct = "—" if f.get("delta_pct") is None else f"{_text(f, 'delta_pct')}%"
            label = f"{f['label']} {f['unit']}" if f.get("unit") else f["label"]
            lines.append(f"| {_md(label)} | {_text(f, 'baseline')} | {_text(f, 'value')} | {_text(f, 'delta')} | "
                         f"{pct} | {_text(f, 'noise')} | "
                         f"{_md(f.get('direction') or ('noise' if f.get('delta') is not None else ''))} |")
        lines.append("")
    if nccl.get("drift") or nccl.get("differs"):
        lines += ["| NCCL variable | Declared | Workers had | Baseline's workers had |", "|---|---|---|---|"]
        for d in nccl.get("drift") or []:
            lines.append(f"| {_md(d['key'])} | {_md(d.get('declared'))} | {_md(_unset(d.get('effective')))} | |")
        for d in nccl.get("differs") or []:
            lines.append(f"| {_md(d['key'])} | | {_md(_unset(d.get('run')))} | {_md(_unset(d.get('baseline')))} |")
        lines.append("")
    for reason in verdict.get("reasons", []) if word == "not comparable" else []:
        lines.append(f"- {_md(reason)}")
    links = []
    if verdict.get("compare_url"):
        links.append(f"[Compare in runlens]({verdict['compare_url']})")
    if verdict.get("run_url"):
        links.append(f"[Run]({verdict['run_url']})")
    if (verdict.get("gate") or {}).get("text"):
        links.append(_md(verdict["gate"]["text"]))
    lines += [" · ".join(links), ""]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    token = args.token or os.environ.get("RUNLENS_TOKEN", "")
    try:
        if not token:
            raise ClientError("no token: pass --token or set RUNLENS_TOKEN", EXIT_USAGE)
        for path in args.files:
            if not path.is_file():
                raise ClientError(f"{path}: not a readable file", EXIT_USAGE)
        check_gate_arguments(args)
        base = args.url.rstrip("/")
        body = Multipart({"meta": json.dumps(with_baseline(build_meta(args), args))}, args.files)
        key = {"Idempotency-Key": f"runlens-upload-{uuid.uuid4().hex}"}
        created = with_retries(lambda: request("POST", f"{base}/api/v1/runs", token, body, extra_headers=key))
        print(f"run {created['id']}: {created['url']} ({created['status']}"
              f"{', uploaded before' if created.get('created') is False else ''})")
        if args.wait:
            done = wait_for(base, token, created["id"], args.timeout, args.allow_partial)
            if done == 0 and gate_requested(args):
                return report_verdict(base, token, created["id"], args)
            return done
        return 0
    except ClientError as e:
        print(f"runlens-upload: {e}", file=sys.stderr)
        return e.code


if __name__ == "__main__":
    sys.exit(main())
