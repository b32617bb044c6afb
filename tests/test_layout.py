"""runs/layout.py through whole runs: processes, roles, launches, per-launch verdicts.

Two runs whose processes must be told apart, built from the project's own samples. Then its
merges of launches, pure: launches that share a pid (one launch seen in two files) and
worker-only launches joining the one with a launcher, held equal to the rule they always followed
(the quadratic merge loop, kept here as the reference) and timed on thousands.
"""

from __future__ import annotations

import copy
import io
import time
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from hypothesis import given
from hypothesis import strategies as st

from ingest import registration, services
from runs.layout import LAUNCHER, WORKER, Launch, Layout, _merge_same_pids, layout, merge_orphans
from runs.models import NcclSetting
from tests.samples import log_path

TUNING = ["NCCL_ALGO", "NCCL_BUFFSIZE", "NCCL_MAX_NCHANNELS", "NCCL_NTHREADS", "NCCL_P2P_LEVEL", "NCCL_PROTO"]


def tuned_nccl_tests_log() -> bytes:
    """samples/nccl-tests_all_reduce_default.log as if all_reduce_perf had been started with the
    PCIe tuning: the six echo lines of samples/spec_eagle3_tuned_2step.log, moved to its pid."""
    tuned = log_path("spec_eagle3_tuned_2step.log").read_text().splitlines()
    echoes = [line.replace("vm:1560:1560", "vm:1377:1377") for line in tuned
              if line.startswith("vm:1560:1560") and "set by environment" in line]
    assert len(echoes) == 7  # the six tuning knobs and NCCL_NVLS_ENABLE
    lines = log_path("nccl-tests_all_reduce_default.log").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if "NCCL_NVLS_ENABLE set by environment" in line)
    return ("\n".join(lines[:at] + echoes + lines[at + 1:]) + "\n").encode()


def upload(user, files: dict[str, bytes], **kw):
    run, _ = registration.register_upload(
        user, [registration.IncomingFile(name, io.BytesIO(data), len(data)) for name, data in files.items()],
        project="team", **kw)
    for lf in run.logfiles.all():
        services.parse_logfile(lf.id)
    run.refresh_from_db()
    return run


def dropped_plus_tuned_tests(user, **kw):
    return upload(user, {
        "sweep_dropped_2step.log": log_path("sweep/sweep_dropped_2step.log").read_bytes(),
        "all_reduce_tuned.log": tuned_nccl_tests_log(),
    }, **kw)


@pytest.mark.django_db
def test_nccl_tests_echoes_never_count_for_the_serving_workers(alice):
    run = dropped_plus_tuned_tests(alice)
    nccl = run.parsed["nccl"]
    assert run.nccl_status == "drift"
    assert sorted(d["key"] for d in nccl["drift"]) == TUNING
    assert all(d["effective"] is None and d["ranks"] == ["0", "1"] for d in nccl["drift"])
    # The nccl-tests process had the tuning: its own panel says so, with its bandwidth.
    [panel] = run.parsed["nccl_tests"]
    assert panel["file"] == "all_reduce_tuned.log" and panel["nccl"]["effective"]["NCCL_PROTO"] == "LL"
    assert panel["avg_busbw_gbs"] == 68.7056 and panel["peak_busbw_gbs"] == 300.39


@pytest.mark.django_db
def test_provenance_of_the_drift_points_into_the_serving_log(alice):
    run = dropped_plus_tuned_tests(alice)
    serving = run.logfiles.get(original_name="sweep_dropped_2step.log")
    nccl = run.parsed["nccl"]
    assert {d["declared_logfile"] for d in nccl["drift"]} == {serving.id}
    assert {where[0] for rank in nccl["sources"]["effective"].values() for where in rank.values()} == {serving.id}


@pytest.mark.django_db
def test_effective_filter_ignores_nccl_tests_processes(alice, client):
    dropped_plus_tuned_tests(alice, name="dropped+tests")
    upload(alice, {"tuned.log": log_path("spec_eagle3_tuned_2step.log").read_bytes()}, name="tuned-alone")
    client.force_login(alice)
    body = client.get("/?nccl=NCCL_PROTO=LL").content.decode()
    assert "tuned-alone" in body and "dropped+tests" not in body
    # The rows still know they are nccl-tests' (not deleted, just not a worker's): one for each of
    # the two ranks its one process drives (-g 2), from its one echo.
    rows = NcclSetting.objects.filter(key="NCCL_PROTO", kind="effective", role="nccl-tests")
    assert sorted(rows.values_list("rank", flat=True)) == ["0", "1"] and len({r.line for r in rows}) == 1


@pytest.mark.django_db
def test_processes_say_who_wrote_what(alice):
    run = dropped_plus_tuned_tests(alice)
    serving = run.logfiles.get(original_name="sweep_dropped_2step.log")
    tests = run.logfiles.get(original_name="all_reduce_tuned.log")
    by_id = {p["id"]: p for p in run.parsed["processes"]}
    worker = by_id[f"{serving.id}:pid 1573"]
    assert (worker["role"], worker["rank"], worker["host"], worker["pid"], worker["first_line"]) == (
        "serving worker", "0", "vm", 1573, 3)
    assert worker["aliases"] == ["TP0"] and worker["logfile"] == serving.id
    assert by_id[f"{serving.id}:pid 1572"]["role"] == "serving launcher"
    assert by_id[f"{tests.id}:pid 1377"]["role"] == "nccl-tests"
    [launch] = run.parsed["launches"]
    assert sorted(launch["workers"]) == [f"{serving.id}:pid 1573", f"{serving.id}:pid 1574"]
    assert launch["nccl"]["status"] == "drift" and launch["summary"]["throughput_tok_s"] == 489.55
    assert run.parsed["launches_count"] == 1


@pytest.mark.django_db
def test_two_serving_launches_are_flagged_not_blended_into_ok(alice):
    run = upload(alice, {
        "tuned.log": log_path("spec_eagle3_tuned_2step.log").read_bytes(),
        "default.log": log_path("sweep/sweep_default_2step.log").read_bytes(),
    })
    parsed = run.parsed
    assert parsed["launches_count"] == 2 and len(parsed["launches"]) == 2
    assert run.nccl_status != "ok" and parsed["nccl"]["launches_count"] == 2
    assert parsed["summary"]["blended"] is True
    assert "2 serving launches" in parsed["warnings"][0]["message"]
    tuned, default = parsed["launches"]
    assert tuned["nccl"]["status"] == "ok" and tuned["nccl"]["declared"]["NCCL_PROTO"] == "LL"
    assert "NCCL_PROTO" not in default["nccl"]["declared"]
    # Each launch's own figure, from its own windows only.
    assert tuned["summary"]["windows"] == 6 and default["summary"]["windows"] == 8
    assert tuned["summary"]["throughput_tok_s"] == 472.8
    assert default["summary"]["throughput_tok_s"] != tuned["summary"]["throughput_tok_s"]


@pytest.mark.django_db
def test_the_same_launch_in_two_files_is_one_launch(alice):
    text = log_path("sweep/sweep_dropped_2step.log").read_text().splitlines(keepends=True)
    run = upload(alice, {"part1.log": "".join(text[:150]).encode(), "part2.log": "".join(text[150:]).encode()})
    assert run.parsed["launches_count"] == 1
    assert run.parsed["launches"][0]["nccl"]["status"] == "drift"


@pytest.mark.django_db
def test_a_file_role_correction_moves_its_processes(alice):
    # Told that the "nccl-tests" file is really a serving worker's NCCL log, its echoes count.
    run = dropped_plus_tuned_tests(alice, roles={"all_reduce_tuned.log": "serving worker"})
    assert run.logfiles.get(original_name="all_reduce_tuned.log").role == "serving worker"
    assert run.parsed["nccl_tests"] == []
    assert run.parsed["launches_count"] == 1


def two_launches(user, **kw):
    return upload(user, {
        "tuned.log": log_path("spec_eagle3_tuned_2step.log").read_bytes(),
        "default.log": log_path("sweep/sweep_default_2step.log").read_bytes(),
    }, **kw)


@pytest.mark.django_db
def test_run_page_and_list_warn_about_several_launches(alice, client):
    run = two_launches(alice, name="two-launches")
    client.force_login(alice)
    page = client.get(f"/runs/{run.id}/").content.decode()
    assert "This run holds 2 serving launches" in page and 'id="split-button"' in page
    assert 'data-launch="1"' in page and 'data-launch="2"' in page and "472.8" in page
    assert "2 serving launches, each judged on its own" in page
    assert '⚠ <span data-field="launches_count">2</span> launches' in client.get("/").content.decode()


@pytest.mark.django_db
def test_api_reports_launches_and_splits_the_run(alice, client, bearer):
    run = two_launches(alice)
    headers = bearer(alice)
    body = client.get(f"/api/v1/runs/{run.id}", headers=headers).json()
    assert body["launches_count"] == 2 and body["parsed"]["launches_count"] == 2
    assert [launch["nccl"]["status"] for launch in body["parsed"]["launches"]] == ["ok", "ok"]
    assert {"id", "logfile", "role", "rank", "host", "pid", "first_line"} <= set(body["parsed"]["processes"][0])

    response = client.post(f"/api/v1/runs/{run.id}/split", headers=headers)
    assert response.status_code == 200
    [new] = response.json()["runs"]
    run.refresh_from_db()
    assert [lf.original_name for lf in run.logfiles.all()] == ["tuned.log"]
    assert run.parsed["launches_count"] == 1 and run.nccl_status == "ok" and run.throughput_tok_s == 472.8
    other = client.get(f"/api/v1/runs/{new['id']}", headers=headers).json()
    assert [lf["name"] for lf in other["logfiles"]] == ["default.log"] and other["launches_count"] == 1
    assert other["windows"] == 8
    # Nothing left to split.
    assert client.post(f"/api/v1/runs/{run.id}/split", headers=headers).json()["error"]["code"] == "one_launch"


@pytest.mark.django_db
def test_split_is_refused_to_outsiders(alice, eve, client, bearer):
    run = two_launches(alice)
    assert client.post(f"/api/v1/runs/{run.id}/split", headers=bearer(eve)).status_code == 404


@pytest.mark.django_db
def test_roles_are_corrected_through_the_api_and_the_page(alice, client, bearer):
    run = dropped_plus_tuned_tests(alice)
    tests = run.logfiles.get(original_name="all_reduce_tuned.log")
    response = client.post(f"/api/v1/runs/{run.id}/roles", data={"roles": {"all_reduce_tuned.log": "serving worker"}}, content_type="application/json",
                           headers=bearer(alice))
    assert response.status_code == 200 and response.json()["parsed"]["nccl_tests"] == []
    bad = client.post(f"/api/v1/runs/{run.id}/roles", data={"roles": {"all_reduce_tuned.log": "chef"}}, content_type="application/json",
                      headers=bearer(alice))
    assert bad.status_code == 422
    client.force_login(alice)
    client.post(f"/runs/{run.id}/roles", {f"role-{tests.id}": ""})
    run.refresh_from_db()
    assert run.parsed["nccl_tests"][0]["file"] == "all_reduce_tuned.log"


@pytest.mark.django_db
def test_upload_api_takes_roles_in_meta(alice, client, bearer):
    data = tuned_nccl_tests_log()
    response = client.post("/api/v1/runs", {
        "files": [SimpleUploadedFile("tests.log", data)],
        "meta": '{"project": "team", "roles": {"tests.log": "benchmark client"}}',
    }, headers=bearer(alice))
    assert response.status_code == 202
    from runs.models import Run

    assert Run.objects.get(id=response.json()["id"]).logfiles.get().role == "benchmark client"
    wrong = client.post("/api/v1/runs", {
        "files": [SimpleUploadedFile("tests.log", data)],
        "meta": '{"project": "team", "roles": {"other.log": "nccl-tests"}}',
    }, headers=bearer(alice))
    assert wrong.status_code == 400 and "other.log" in wrong.json()["error"]["message"]


@pytest.mark.django_db
def test_a_viewer_cannot_change_roles_and_the_figures_stay(vic, client, bearer):
    from runs.models import Membership, RunEdit

    run = upload(Membership.objects.get(role="admin").user, {"server.log": log_path("spec_eagle3_tuned_2step.log").read_bytes()})
    response = client.post(f"/api/v1/runs/{run.id}/roles", data={"roles": {"server.log": "benchmark client"}},
                           content_type="application/json", headers=bearer(vic))
    assert response.status_code == 403 and response.json()["error"]["code"] == "role_required"
    client.force_login(vic)
    page = client.get(f"/runs/{run.id}/").content.decode()
    assert "Save roles" not in page
    client.post(f"/runs/{run.id}/roles", {f"role-{run.logfiles.get().id}": "benchmark client"})
    run.refresh_from_db()
    assert run.throughput_tok_s == 472.8 and run.logfiles.get().role == "" and not RunEdit.objects.exists()


@pytest.mark.django_db
def test_a_role_change_is_recorded_with_the_figures_it_moved(bob, client, bearer):
    run = upload(bob, {"server.log": log_path("spec_eagle3_tuned_2step.log").read_bytes()})
    response = client.post(f"/api/v1/runs/{run.id}/roles", data={"roles": {"server.log": "nccl-tests"}},
                           content_type="application/json", headers=bearer(bob))
    assert response.status_code == 200
    [edit] = response.json()["edits"]
    assert edit["what"] == "roles" and edit["by"] == "bob"
    assert edit["before"]["roles"] == {"server.log": ""} and edit["after"]["roles"] == {"server.log": "nccl-tests"}
    assert edit["before"]["figures"]["throughput_tok_s"] == 472.8 and edit["after"]["figures"]["throughput_tok_s"] is None
    assert (edit["before"]["figures"]["nccl_status"], edit["after"]["figures"]["nccl_status"]) == ("ok", "unknown")
    # The same roles again change nothing and record nothing.
    client.post(f"/api/v1/runs/{run.id}/roles", data={"roles": {"server.log": "nccl-tests"}},
                content_type="application/json", headers=bearer(bob))
    client.force_login(bob)
    page = client.get(f"/runs/{run.id}/").content.decode()
    assert page.count("server.log: detected → nccl-tests") == 1
    assert "bob: server.log: detected → nccl-tests; throughput 472.8 → — tok/s" in page
    assert "NCCL ok → unknown" in page
    assert "event-roles" in client.get("/").content.decode()


@pytest.mark.django_db
def test_thousands_of_launches_in_two_files_pair_up_by_pid_and_keep_their_aliases():
    """Two files of the same 1,100 launches (a launcher and a worker each, the worker's pid also
    named by a `[TPn]` alias; the second file without hosts) give 1,100 launches of four processes,
    each worker with its alias. More merges than Python's recursion limit (each merge recursed, and
    1,100 of them raised RecursionError), and aliases found without a scan of every tag per process."""
    from runs.layout import LAUNCHER, WORKER, layout

    def table(host: str | None) -> dict:
        procs: dict[str, dict] = {}
        for n in range(1100):
            launcher, worker = 10_000 + 2 * n, 10_001 + 2 * n
            procs[f"pid {launcher}"] = {"pid": launcher, "host": host, "role": LAUNCHER, "first_line": 10 * n + 1}
            procs[f"pid {worker}"] = {"pid": worker, "host": host, "role": WORKER, "first_line": 10 * n + 2,
                                      "rank": "0"}
            procs[f"TP0 #{n}"] = {"pid": None, "host": None, "role": WORKER, "first_line": 10 * n + 3,
                                  "alias": f"pid {worker}", "label": f"TP0 #{n}"}
        return procs

    lay = layout({1: {"name": "a.log", "processes": table("vm")}, 2: {"name": "b.log", "processes": table(None)}})
    assert len(lay.launches) == 1100
    assert all(len(launch.processes) == 4 for launch in lay.launches)
    assert lay.launches[7].processes == ["1:pid 10014", "1:pid 10015", "2:pid 10014", "2:pid 10015"]
    workers = {p["id"]: p for p in lay.processes if p["role"] == WORKER}
    assert workers["2:pid 10015"]["aliases"] == ["TP0 #7"] and workers["1:pid 12199"]["aliases"] == ["TP0 #1099"]


# The merges of launches, pure (no database).


def _reference_merge(lay: Layout, into: int, other: int) -> None:
    def remap(i: int) -> int:
        i = into if i == other else i
        return i - 1 if i > other else i

    a, b = lay.launches[into], lay.launches[other]
    a.processes.extend(b.processes)
    for logfile, line in b.starts.items():
        a.starts.setdefault(logfile, line)
    del lay.launches[other]
    lay.launch_of_process = {pid: remap(i) for pid, i in lay.launch_of_process.items()}
    lay.segments = {lf: [(s, remap(i)) for s, i in segs] for lf, segs in lay.segments.items()}
    for n, launch in enumerate(lay.launches, 1):
        launch.number = n


def _reference_same_pids(lay: Layout) -> None:
    """The merge loop before it was made linear: look from the first launch, merge the first pair, again."""
    while True:
        info = {p["id"]: p for p in lay.processes}
        owner: dict[tuple, int] = {}
        keys_of_pid: dict[Any, list[tuple]] = {}
        merged = False
        for i, launch in enumerate(lay.launches):
            for pid in launch.processes:
                p = info[pid]
                if p["pid"] is None:
                    continue
                key = (p["host"] or "", p["pid"])
                j = owner.get(key)
                if j is None:
                    j = next((owner[k] for k in keys_of_pid.get(p["pid"], ()) if not k[0] or not key[0]), None)
                if j is not None and j != i:
                    _reference_merge(lay, j, i)
                    merged = True
                    break
                if key not in owner:
                    keys_of_pid.setdefault(p["pid"], []).append(key)
                owner[key] = i
            if merged:
                break
        if not merged:
            return


def _reference_orphans(lay: Layout, has_figures: set[int]) -> None:
    with_launcher = [i for i, launch in enumerate(lay.launches) if launch.has(LAUNCHER, lay.roles)]
    if len(with_launcher) != 1:
        return
    target = with_launcher[0]
    for i in range(len(lay.launches) - 1, -1, -1):
        if i != target and i not in has_figures and not lay.launches[i].has(LAUNCHER, lay.roles):
            _reference_merge(lay, target, i)
            if i < target:
                target -= 1


def _made(spec: list[list[tuple[str, int | None, str]]]) -> Layout:
    """A layout of launches as given: per launch, its processes' (host, pid, role); each launch
    its own file segment, so segments and launch_of_process are remapped as a real run's are."""
    processes, launches, roles, launch_of = [], [], {}, {}
    segments: dict[int | None, list[tuple[int, int]]] = {}
    for i, procs in enumerate(spec):
        launch = Launch(i + 1, starts={i % 3: 10 * i, (i + 1) % 3: 10 * i + 1})
        for n, (host, pid, role) in enumerate(procs):
            ident = f"{i}:{n}"
            processes.append({"id": ident, "host": host or None, "pid": pid, "role": role})
            roles[ident] = role
            launch.processes.append(ident)
            launch_of[ident] = i
        launches.append(launch)
        segments.setdefault(i % 3, []).append((10 * i, i))
    return Layout(processes, launches, {}, roles, launch_of, segments)


def _state(lay: Layout) -> tuple:
    return ([(la.number, la.processes, list(la.starts.items())) for la in lay.launches],
            list(lay.launch_of_process.items()), lay.segments)


PROCESS = st.tuples(st.sampled_from(["", "a", "b"]), st.one_of(st.none(), st.integers(1, 6)),
                    st.sampled_from([LAUNCHER, WORKER]))


@given(st.lists(st.lists(PROCESS, max_size=4), max_size=9))
def test_launches_sharing_pids_merge_as_the_merge_loop_did(spec):
    lay, ref = _made(spec), _made(spec)
    _merge_same_pids(lay)
    _reference_same_pids(ref)
    assert _state(lay) == _state(ref)


@given(st.lists(st.lists(PROCESS, max_size=3), max_size=8), st.sets(st.integers(0, 8)))
def test_orphans_join_the_one_launcher_as_the_merge_loop_did(spec, figures):
    lay = _made(spec)
    ref = copy.deepcopy(lay)
    merge_orphans(lay, figures)
    _reference_orphans(ref, figures)
    assert _state(lay) == _state(ref)


def test_three_thousand_launches_sharing_pids_merge_in_linear_time():
    """3,000 launches, each sharing a pid with the one before it (a chain: all one launch) and
    3,000 more in pairs across two files with and without hosts: the merge loop took ~25 s."""
    chain: list[list[tuple[str, int | None, str]]] = [[("vm", n, LAUNCHER), ("vm", n + 1, WORKER)] for n in range(3000)]
    pairs: list[list[tuple[str, int | None, str]]] = [[("h", 10_000 + n, WORKER)] for n in range(1500)]
    pairs += [[("", 10_000 + n, WORKER)] for n in range(1500)]
    lay = _made(chain + pairs)
    start = time.process_time()
    _merge_same_pids(lay)
    took = time.process_time() - start
    assert len(lay.launches) == 1 + 1500
    assert lay.launches[0].processes[:4] == ["0:0", "0:1", "1:0", "1:1"] and len(lay.launches[0].processes) == 6000
    assert lay.launches[1].processes == ["3000:0", "4500:0"] and lay.launches[-1].number == 1501
    assert took < 2, took


def test_many_hosts_of_one_pid_and_one_without_a_host_fold_in_order():
    """pid 7 on hosts a and b (two launches), then pid 7 with no host: it matches both, goes to the
    first, and the second follows (it now matches the first)."""
    lay = layout({1: {"name": "x.log", "processes": {
        "pid 7a": {"pid": 7, "host": "a", "role": WORKER, "first_line": 1},
        "pid 9": {"pid": 9, "host": "a", "role": LAUNCHER, "first_line": 5},
        "pid 7b": {"pid": 7, "host": "b", "role": WORKER, "first_line": 6},
        "pid 8": {"pid": 8, "host": "a", "role": LAUNCHER, "first_line": 10},
        "pid 7": {"pid": 7, "host": None, "role": WORKER, "first_line": 11},
    }}})
    assert [la.processes for la in lay.launches] == [["1:pid 7a", "1:pid 8", "1:pid 7", "1:pid 9", "1:pid 7b"]]
    assert lay.segments == {1: [(1, 0), (5, 0), (10, 0)]}


@given(st.lists(st.integers(1, 60), max_size=30), st.lists(st.tuples(st.integers(1, 60), st.booleans()), max_size=6))
def test_launch_lines_in_any_order_and_repeated_give_the_launches_of_their_sorted_events(lines, procs):
    """The launch lines merged in as they come (ascending, or sorted first where they are not) give the
    launches of the rule they always followed: every event, a tuple each, sorted together."""
    table = {f"p{i}": {"role": WORKER if worker else LAUNCHER, "first_line": first}
             for i, (first, worker) in enumerate(procs)}
    got = layout({None: {"name": "f", "role": "", "processes": table, "launch_lines": lines}})
    events = sorted([(line, 0, "") for line in lines]
                    + [(p["first_line"], 0 if p["role"] == LAUNCHER else 1, tag) for tag, p in table.items()])
    starts, members, current, has_worker = [], [], False, False
    for line, kind, pid in events:  # the loop layout() runs over them
        if (kind == 0 and (not current or has_worker)) or (kind == 1 and not current):
            starts.append(line)
            members.append([])
            current, has_worker = True, False
        if pid:
            members[-1].append(pid)
            has_worker = has_worker or kind == 1
    assert [launch.starts[None] for launch in got.launches] == starts
    assert [launch.processes for launch in got.launches] == members
