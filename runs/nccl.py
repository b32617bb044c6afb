"""Declared versus effective NCCL configuration (DESIGN, "Words": declared, effective, drift).

Pure: takes the NCCL values the parsers found (objects with key, value, kind, rank, line,
source) and says whether what the launcher declared reached every worker.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Protocol

from runs.layout import LAUNCHER, NCCL_TESTS, WORKER, Layout

# NCCL's documented environment parameters (NVIDIA NCCL docs, "Environment Variables").
# Variables outside this list (NCCL_VERSION, set by NGC containers) are not tuning knobs.
# The shape of an NCCL variable name (a pasted or uploaded declaration must have it).
NCCL_KEY = re.compile(r"^NCCL_[A-Z0-9_]+$")

NCCL_PARAMETERS = frozenset("""
NCCL_SOCKET_IFNAME NCCL_SOCKET_FAMILY NCCL_SOCKET_RETRY_CNT NCCL_SOCKET_RETRY_SLEEP_MSEC
NCCL_SOCKET_NTHREADS NCCL_NSOCKS_PERTHREAD NCCL_CROSS_NIC NCCL_IB_HCA NCCL_IB_TIMEOUT
NCCL_IB_RETRY_CNT NCCL_IB_GID_INDEX NCCL_IB_ADDR_FAMILY NCCL_IB_ADDR_RANGE NCCL_IB_ROCE_VERSION_NUM
NCCL_IB_SL NCCL_IB_TC NCCL_IB_FIFO_TC NCCL_IB_RETURN_ASYNC_EVENTS NCCL_OOB_NET_ENABLE
NCCL_OOB_NET_IFNAME NCCL_UID_STAGGER_THRESHOLD NCCL_UID_STAGGER_RATE NCCL_NET NCCL_NET_PLUGIN
NCCL_TUNER_PLUGIN NCCL_PROFILER_PLUGIN NCCL_ENV_PLUGIN NCCL_IGNORE_CPU_AFFINITY NCCL_CONF_FILE
NCCL_DEBUG NCCL_DEBUG_FILE NCCL_DEBUG_SUBSYS NCCL_DEBUG_TIMESTAMP_LEVELS NCCL_DEBUG_TIMESTAMP_FORMAT
NCCL_COLLNET_ENABLE NCCL_COLLNET_NODE_THRESHOLD NCCL_CTA_POLICY NCCL_TOPO_FILE NCCL_TOPO_DUMP_FILE
NCCL_SET_THREAD_NAME NCCL_P2P_DISABLE NCCL_P2P_LEVEL NCCL_P2P_DIRECT_DISABLE NCCL_SHM_DISABLE
NCCL_BUFFSIZE NCCL_NTHREADS NCCL_MAX_NCHANNELS NCCL_MIN_NCHANNELS NCCL_CHECKS_DISABLE
NCCL_CHECK_POINTERS NCCL_LAUNCH_MODE NCCL_IB_DISABLE NCCL_IB_AR_THRESHOLD NCCL_IB_QPS_PER_CONNECTION
NCCL_IB_SPLIT_DATA_ON_QPS NCCL_IB_CUDA_SUPPORT NCCL_IB_PCI_RELAXED_ORDERING NCCL_IB_ADAPTIVE_ROUTING
NCCL_IB_ECE_ENABLE NCCL_IB_MERGE_NICS NCCL_IB_MQP_RETRY_ALL NCCL_IB_MQP_RETRY_CNT
NCCL_IB_MQP_RETRY_SLEEP_MSEC NCCL_MEM_SYNC_DOMAIN NCCL_NET_GDR_LEVEL NCCL_NET_GDR_C2C
NCCL_NET_GDR_READ NCCL_NET_SHARED_BUFFERS NCCL_NET_SHARED_COMMS NCCL_SINGLE_RING_THRESHOLD
NCCL_LL_THRESHOLD NCCL_TREE_THRESHOLD NCCL_ALGO NCCL_PROTO NCCL_NVB_DISABLE NCCL_PXN_DISABLE
NCCL_P2P_PXN_LEVEL NCCL_PXN_C2C NCCL_RUNTIME_CONNECT NCCL_GRAPH_REGISTER NCCL_LOCAL_REGISTER
NCCL_LEGACY_CUDA_REGISTER NCCL_WIN_ENABLE NCCL_SET_STACK_SIZE NCCL_GRAPH_MIXING_SUPPORT
NCCL_DMABUF_ENABLE NCCL_P2P_NET_CHUNKSIZE NCCL_P2P_LL_THRESHOLD NCCL_P2P_NVL_CHUNKSIZE
NCCL_P2P_PCI_CHUNKSIZE NCCL_P2P_READ_ENABLE NCCL_P2P_USE_CUDA_MEMCPY NCCL_NET_OVERHEAD
NCCL_NVLS_ENABLE NCCL_NVLS_CHUNKSIZE NCCL_IB_SPLIT_DATA_ON_QPS NCCL_CUMEM_ENABLE
NCCL_CUMEM_HOST_ENABLE NCCL_NCHANNELS_PER_NET_PEER NCCL_MNNVL_ENABLE NCCL_RAS_ENABLE
NCCL_RAS_ADDR NCCL_RAS_TIMEOUT_FACTOR NCCL_NVLSTREE_MAX_CHUNKSIZE NCCL_MAX_CTAS NCCL_MIN_CTAS
NCCL_ALGO_THRESHOLD NCCL_COMM_BLOCKING NCCL_CGA_CLUSTER_SIZE NCCL_WORK_FIFO_BYTES
NCCL_WORK_FIFO_DEPTH NCCL_NVLS_NCHANNELS NCCL_GDRCOPY_ENABLE NCCL_ASYNC_ERROR_HANDLING
NCCL_MAX_P2P_NCHANNELS NCCL_MIN_P2P_NCHANNELS NCCL_IB_USE_INLINE NCCL_SHM_USE_CUDA_MEMCPY
NCCL_CREATE_THREAD_CONTEXT NCCL_PROXY_APPEND_BATCH_SIZE NCCL_NET_FORCE_FLUSH
""".split())

# Read by NCCL but never echoed as "set by environment": absent from echo lines is no evidence.
NOT_ECHOED = frozenset({
    "NCCL_DEBUG", "NCCL_DEBUG_FILE", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_TIMESTAMP_LEVELS",
    "NCCL_DEBUG_TIMESTAMP_FORMAT", "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_NET",
    "NCCL_NET_PLUGIN", "NCCL_TUNER_PLUGIN", "NCCL_PROFILER_PLUGIN", "NCCL_ENV_PLUGIN",
    "NCCL_CONF_FILE", "NCCL_TOPO_FILE", "NCCL_TOPO_DUMP_FILE", "NCCL_ASYNC_ERROR_HANDLING",
})

# Knobs NVIDIA documents for debugging: left in a production launch they pin one algorithm.
DEBUG_ONLY = frozenset({"NCCL_ALGO", "NCCL_PROTO"})

# Sources whose evidence is the worker's whole environment, not just what NCCL echoed.
FULL_ENV_SOURCES = frozenset({"worker env dump"})


class NcclValueLike(Protocol):
    key: str
    value: str
    kind: str
    rank: str
    line: int
    source: str


# NCCL_-named variables that are not NCCL's: build paths and nccl-tests' own settings.
NOT_PARAMETERS = frozenset({
    "NCCL_VERSION", "NCCL_HOME", "NCCL_ROOT", "NCCL_DIR", "NCCL_PATH", "NCCL_LIB", "NCCL_LIB_DIR",
    "NCCL_LIBRARY", "NCCL_INCLUDE_DIR", "NCCL_INC", "NCCL_INSTALL_DIR", "NCCL_SRC",
})


def is_documented(key: str) -> bool:
    """One of NCCL's documented parameters: what a person types is checked against these (a typo
    such as NCCL_PROTOCOL gets a warning)."""
    return key in NCCL_PARAMETERS


def is_parameter(key: str) -> bool:
    """An NCCL parameter as a log declares or echoes it: a documented one, or any NCCL_ name that
    is not a path or nccl-tests' own (NCCL adds parameters every release, e.g. NCCL_NETDEVS_POLICY,
    NCCL_IB_OOO_RQ): a launch line's variable is never dropped for being new."""
    return key in NCCL_PARAMETERS or (
        bool(NCCL_KEY.match(key)) and key not in NOT_PARAMETERS and not key.startswith("NCCL_TESTS_"))


def analyze(values: Iterable[NcclValueLike], version: object = None) -> dict:
    """Declared vs effective per rank, drift list and status (`ok`, `drift` or `unknown`)."""
    declared: dict[str, NcclValueLike] = {}
    effective: dict[str, dict[str, NcclValueLike]] = {}
    full_env_ranks: set[str] = set()
    for v in values:
        if not is_parameter(v.key):
            continue
        if v.kind == "declared":
            declared[v.key] = v
        elif v.kind == "effective":
            effective.setdefault(v.rank, {})[v.key] = v
            if v.source in FULL_ENV_SOURCES:
                full_env_ranks.add(v.rank)

    drift = []
    for key, d in sorted(declared.items()):
        missing_ranks, seen = [], None
        for rank, env in sorted(effective.items()):
            got = env.get(key)
            if got is None:
                if rank in full_env_ranks or key not in NOT_ECHOED:
                    missing_ranks.append(rank)
            elif not same_value(key, d.value, got.value):
                missing_ranks.append(rank)
                seen = got
        if missing_ranks:
            drift.append({
                "key": key, "declared": d.value, "declared_line": d.line or None,
                "declared_logfile": getattr(d, "logfile", None), "declared_source": d.source,
                "effective": seen.value if seen else None,
                "effective_line": seen.line if seen else None,
                "ranks": missing_ranks,
            })

    if not effective:
        status = "unknown"
    else:
        status = "drift" if drift else "ok"
    return {
        "version": version,
        "declared": {k: v.value for k, v in sorted(declared.items())},
        "effective": _agreed(effective),
        "effective_by_rank": {
            rank: {k: v.value for k, v in sorted(env.items())} for rank, env in sorted(effective.items())
        },
        "status": status,
        "drift": drift,
        "debug_knobs": sorted(k for k in declared if k in DEBUG_ONLY),
        # Where each value was read: [log file id or None, line, source], for provenance links.
        "sources": {
            "declared": {k: _where(v) for k, v in sorted(declared.items())},
            "effective": {
                rank: {k: _where(v) for k, v in sorted(env.items())} for rank, env in sorted(effective.items())
            },
        },
    }


# nvidia-smi topo -m link names, nearest first (NV# before all): NCCL_P2P_LEVEL takes the same names.
PCI_LINKS = ("C2C", "PIX", "PXB", "PHB", "NODE", "SYS", "SOC")


def p2p_level_note(topology: dict) -> str | None:
    """What a machine's GPU links mean for NCCL_P2P_LEVEL (NCCL docs, "NCCL_P2P_LEVEL": the farthest
    PCIe path over which P2P is used). With every GPU pair on NVLink the level never decides."""
    links = [link for link in topology.get("links") or [] if not link.startswith("NV")]
    if topology.get("nvlink"):
        return "every GPU pair is on NVLink: NCCL_P2P_LEVEL does not change the path"
    if not links:
        return None
    return (f"GPU pairs over PCIe ({', '.join(links)}): NCCL uses P2P between two GPUs only when their path is "
            f"no farther than NCCL_P2P_LEVEL, so the level decides the transport of the {links[-1]} pairs")


def person_conflicts(values: Iterable[NcclValueLike]) -> list[dict]:
    """Declared values a person gave (annotation, upload metadata: no log file) that differ from
    what a launcher in the logs declared for the same variable. The person's value is the one the
    analysis uses; both are shown, so a wrong paste is visible, not silently believed."""
    from_logs: dict[str, NcclValueLike] = {}
    from_people: dict[str, NcclValueLike] = {}
    for v in values:
        if v.kind != "declared":
            continue
        if getattr(v, "logfile", None) is None and not v.line:
            from_people[v.key] = v
        else:
            from_logs[v.key] = v  # the last, as the analysis reads them
    return [
        {"key": key, "person": person.value, "person_source": person.source, "log": from_logs[key].value,
         "log_line": from_logs[key].line or None, "log_logfile": getattr(from_logs[key], "logfile", None)}
        for key, person in sorted(from_people.items())
        if key in from_logs and not same_value(key, person.value, from_logs[key].value)
    ]


def _where(v: NcclValueLike) -> list:
    return [getattr(v, "logfile", None), v.line or None, v.source]


def same_value(key: str, declared: str, effective: str) -> bool:
    """NCCL echoes some values normalised (`simple` vs `Simple`, P2P levels as names)."""
    return canonical(key, declared) == canonical(key, effective)


_LEVELS = {"0": "LOC", "1": "NVL", "2": "PIX", "3": "PXB", "4": "PHB", "5": "SYS"}


def canonical(key: str, value: object) -> str:
    """One spelling per meaning: case and a trailing dot do not count, P2P levels are names."""
    text = str(value).strip().rstrip(".")
    if key in ("NCCL_P2P_LEVEL", "NCCL_NET_GDR_LEVEL"):
        return _LEVELS.get(text, text).upper()
    return text.lower()


def _agreed(effective: dict[str, dict[str, NcclValueLike]]) -> dict[str, str]:
    """Values every rank that reports the key agrees on (ranks that disagree are in drift)."""
    merged: dict[str, str] = {}
    conflict: set[str] = set()
    for env in effective.values():
        for key, v in env.items():
            if key in merged and not same_value(key, merged[key], v.value):
                conflict.add(key)
            merged.setdefault(key, v.value)
    return {k: v for k, v in sorted(merged.items()) if k not in conflict}


def drift_clause(drift: list[dict], limit: int = 6) -> str:
    """What drifted, in words: the one phrasing of the run page, the comparison's headline and the
    run list. `drift` is the analysis' list of {key, declared, effective}."""
    missing = [d["key"] for d in drift if d.get("effective") is None]
    changed = [d for d in drift if d.get("effective") is not None]
    parts = []
    if missing:
        names = ", ".join(missing[:limit]) + (", ..." if len(missing) > limit else "")
        parts.append(f"the workers never got {len(missing)} NCCL variable{'s' if len(missing) != 1 else ''} "
                     f"the launcher declared ({names})")
    if changed:
        values = ", ".join(f"{d['key']} {d['declared']} → {d['effective']}" for d in changed[:limit])
        parts.append(f"{len(changed)} reached them with another value ({values})")
    return "; ".join(parts)


def nccl_sentence(nccl: dict) -> str:
    """The NCCL verdict in one sentence a person can act on."""
    status = nccl.get("status")
    if nccl.get("launches_count", 0) > 1:
        per: dict[int, int] = {}
        for d in nccl.get("drift", []):
            per[d["launch"]] = per.get(d["launch"], 0) + 1
        verdicts = [
            f"launch {n}: " + (f"{per[n]} variable{'s' if per[n] != 1 else ''} drifted" if n in per else "no drift")
            for n in range(1, nccl["launches_count"] + 1)
        ]
        return (f"{nccl['launches_count']} serving launches, each judged on its own ({'; '.join(verdicts)}); "
                "see Launches.")
    if status == "drift":
        clause = drift_clause(nccl.get("drift", []))
        return clause[:1].upper() + clause[1:] + "."
    if status == "ok":
        if not nccl.get("declared"):
            count = len(nccl.get("effective") or {})
            return (f"No launcher declaration in the logs; the workers report {count} NCCL "
                    f"variable{'s' if count != 1 else ''} set by environment.")
        return "Every NCCL variable the launcher declared reached every worker."
    return "No log shows what the workers actually used (no NCCL echo lines or worker environment dumps)."


PERSON = "person"  # the process tag of values a person gave (upload metadata, annotations)


def launch_verdicts(values: Iterable[NcclValueLike], lay: Layout, version: object = None) -> dict:
    """Drift per serving launch: what its launcher declared against what each of its workers had.

    `lay` is a runs.layout.Layout. A person's declarations count for every launch.
    nccl-tests processes get their own verdict per log file (`nccl_tests`: {logfile: verdict})
    and count for no launch. `run` is the run's verdict: its one launch's, several launches summed up (status
    `drift` when any drifts, else `several`), or None when there is no launch, in which case
    the caller judges `other_values` (everything but nccl-tests) as one set, as before.
    """
    values = list(values)
    per_launch: list[list] = [[] for _ in lay.launches]
    tests: dict[object, list] = {}
    other: list = []
    person: list = []
    for v in values:
        process = getattr(v, "process", "") or ""
        logfile = getattr(v, "logfile", None)
        if process == PERSON:
            person.append(v)
            continue
        role = lay.role(logfile, process)
        if role == NCCL_TESTS:
            tests.setdefault(logfile, []).append(v)
            continue
        other.append(v)
        i = lay.launch_index(logfile, process, v.line)
        if i is None:
            continue
        if (v.kind == "declared" and role == LAUNCHER) or (v.kind == "effective" and role == WORKER):
            per_launch[i].append(v)
    verdicts = [analyze(vs + person, version=version) for vs in per_launch]
    # A job script (`export NCCL_...; srun all_reduce_perf`) declares, its Slurm output echoes:
    # a file of nccl-tests declarations only lends them to the run's test outputs that declare none.
    scripts = {lf for lf, vs in tests.items() if all(v.kind == "declared" for v in vs)}
    lent = [v for lf in sorted(scripts, key=lambda f: (f is None, f or 0)) for v in tests[lf]]
    for logfile, vs in tests.items():
        if lent and logfile not in scripts and not any(v.kind == "declared" for v in vs):
            tests[logfile] = lent + vs
    panels = {logfile: analyze(vs, version=version) for logfile, vs in tests.items()}
    run = None
    if len(verdicts) == 1:
        run = verdicts[0]
    elif verdicts:
        statuses = {v["status"] for v in verdicts}
        run = {
            "version": version,
            "status": "drift" if "drift" in statuses else "unknown" if statuses == {"unknown"} else "several",
            "launches_count": len(verdicts),
            "declared": {}, "effective": {}, "effective_by_rank": {},
            "drift": [{**d, "launch": n} for n, v in enumerate(verdicts, 1) for d in v["drift"]],
            "debug_knobs": sorted({k for v in verdicts for k in v["debug_knobs"]}),
            "sources": {"declared": {}, "effective": {}},
        }
    return {"launches": verdicts, "run": run, "nccl_tests": panels, "other_values": other + person,
            "nccl_tests_scripts": scripts}


# Logging switches: they change what NCCL prints, not how it moves data.
LOGGING_ONLY = frozenset({"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE"})


def effective_settings(nccl: dict) -> dict[str, str] | None:
    """The settings a run's workers had (every rank agreeing), logging switches left out; None
    when no log shows them: no worker evidence, or several launches (each has its own)."""
    if not nccl or nccl.get("status") in (None, "unknown") or nccl.get("launches_count", 0) > 1:
        return None
    return {k: str(v) for k, v in (nccl.get("effective") or {}).items() if k not in LOGGING_ONLY}


def effective_differences(settings: list[dict[str, str] | None]) -> list[dict]:
    """Variables whose effective value differs among runs: [{key, values}] with one value per run
    (None: not set, NCCL's default; "?" for a run whose settings are unknown, which takes no part). A
    variable NCCL never echoes counts only where both sides show it: its absence from echo lines
    is no evidence that it was unset."""
    known = [s for s in settings if s is not None]
    if len(known) < 2:
        return []
    out = []
    for key in sorted({k for s in known for k in s}):
        values = ["?" if s is None else s.get(key) for s in settings]
        seen = [v for s, v in zip(settings, values, strict=True) if s is not None]
        if key in NOT_ECHOED:
            seen = [v for v in seen if v is not None]
        if len({canonical(key, v) if v is not None else None for v in seen}) > 1:
            out.append({"key": key, "values": values})
    return out
