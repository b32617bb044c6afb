"""Pages: run list, run detail, live status, comparison, annotation form. Thin: read the request,
fetch through runs/queries.py what the user may see, call pure code, render."""

from __future__ import annotations

import csv

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from runs import charts, markdown, queries, services, specdecode
from runs.compare import downsample, to_csv_rows
from runs.forms import AnnotationEditForm, AnnotationForm, MemberForm, RoleForm
from runs.models import Annotation, Status
from runs.nccl import nccl_sentence
from runs.permissions import Role, has_role, role_in

SORT_COLUMNS = [
    ("name", "Run"), ("status", "Status"), ("steps", "Steps"), ("tok_s", "tok/s"),
    ("tpc", "tokens/cycle"), ("cycle", "cycle ms"), ("verify", "verify ms"), ("date", "Date"),
]
FILTER_KEYS = ("q", "status", "tag", "engine", "steps", "nccl", "nccl_status")


@login_required
@require_GET
def run_list(request: HttpRequest) -> HttpResponse:
    sort = request.GET.get("sort", "-date")
    runs = queries.filtered_runs(request.user, queries.filters_from_query(request.GET), sort)
    page = Paginator(runs, 50).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    query.pop("sort", None)
    return render(request, "runs/run_list.html", {
        "page": page, "filters": {**{k: request.GET.get(k, "") for k in FILTER_KEYS}, "sort": sort},
        "busy_ids": [r.id for r in page if r.is_busy], "statuses": Status.values,
        "query": query.urlencode(), "nccl_statuses": ["ok", "drift", "unknown"],
        "engines": queries.engines(request.user), "sort_columns": SORT_COLUMNS,
        # The feed is the front page's: a filtered list is a search, and shows only what matched.
        "activity": [] if any(request.GET.get(k) for k in (*FILTER_KEYS, "page")) else queries.activity(request.user),
    })


@login_required
@require_GET
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = queries.visible_run(request.user, pk)
    phases = queries.phase_rows(run)
    collectives = queries.collective_rows(run)
    parsed = run.parsed or {}
    nccl = parsed.get("nccl") or {}
    baseline = queries.chosen_or_suggested_baseline(request.user, run, request.GET.get("baseline"))
    target = queries.positive_float(request.GET.get("target"))
    analysis, curve = None, None
    if run.tokens_per_cycle:
        analysis = specdecode.analysis(
            {"throughput_tok_s": run.throughput_tok_s, "tokens_per_cycle": run.tokens_per_cycle,
             "cycle_ms": run.cycle_ms, "verify_ms": run.verify_ms, "steps": run.steps},
            {"throughput_tok_s": baseline.throughput_tok_s} if baseline else None, target_tok_s=target,
        )
        if analysis["curve"].get("series"):
            curve = charts.acceptance_curve(run.name, analysis["curve"])
    annotations = queries.run_annotations(run)
    chart = None
    if phases:
        chart = charts.with_notes(charts.phase_timeline(phases), [a for a in annotations if not a.deleted_at],
                                  {a.id: a.author.get_username() if a.author else "" for a in annotations})
    role = role_in(request.user, run.project_id)
    return render(request, "runs/run_detail.html", {
        "thread": _thread(annotations, request.user, role), "role": role,
        "anchored": [a for a in annotations if a.anchored and not a.deleted_at],
        "run": run, "logfiles": queries.logfiles_with_counts(run), "parsed": parsed,
        "phases": parsed.get("phases", []), "chart": chart,
        "nccl": nccl, "nccl_sentence": nccl_sentence(nccl), "first_line": queries.first_lines(run),
        "warnings": parsed.get("warnings", []),
        "baseline": baseline, "analysis": analysis, "curve": curve, "target": target,
        "collectives_chart": charts.collectives([(run.name, collectives)]) if collectives else None,
        "serving": sorted((parsed.get("serving") or {}).items()),
        "baseline_choices": queries.baseline_choices(request.user, run), "annotation_form": AnnotationForm(),
    })


@login_required
@require_GET
def run_status(request: HttpRequest) -> JsonResponse:
    """Statuses of the runs named in ?ids=1,2,3 (the list and detail pages poll this)."""
    raw = [i for i in request.GET.get("ids", "").split(",") if i]
    if not all(queries.is_int(i) for i in raw):
        return JsonResponse({"error": {"code": "bad_ids", "message": "ids must be integers"}}, status=400)
    runs = queries.run_statuses(request.user, [int(i) for i in raw][:200])
    return JsonResponse({"runs": [
        {
            "id": r.id, "status": r.status, "busy": r.is_busy, "error": r.error,
            "throughput_tok_s": r.throughput_tok_s, "tokens_per_cycle": r.tokens_per_cycle,
            "verify_ms": r.verify_ms, "steps": r.steps,
            "logfiles": [{"id": lf.id, "status": lf.status, "error": lf.error} for lf in r.logfiles.all()],
        }
        for r in runs
    ]})


@login_required
@require_GET
def compare_view(request: HttpRequest) -> HttpResponse:
    # ?runs=3,7,9 (shareable) or ?run=3&run=7 (the run list's checkboxes without JavaScript)
    ids = queries.parse_ids(",".join([request.GET.get("runs", ""), *request.GET.getlist("run")]))
    baseline = request.GET.get("baseline")
    inputs, result = queries.comparison_for(request.user, ids, int(baseline) if queries.is_int(baseline) else None)
    fmt = request.GET.get("format")
    if fmt == "json":
        response = JsonResponse(result)
        response["Content-Disposition"] = 'attachment; filename="runlens-compare.json"'
        return response
    if fmt == "csv":
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="runlens-compare.csv"'
        csv.writer(response).writerows(to_csv_rows(result))
        return response
    ordered = queries.in_result_order(inputs, result)
    chart_data = {}
    if inputs and result["phases"]:
        chart_data["chart-breakdown"] = charts.cycle_breakdown(result)
        if len(inputs) >= 2:
            chart_data["chart-deltas"] = charts.phase_deltas(result)
    notes = queries.anchored_notes(ids)
    who = {n.id: f"{n.run.name} · {n.author.get_username() if n.author else 'someone'}" for n in notes}
    for key, (title, unit) in charts.SERIES.items():
        traces = [(r.name, downsample(r.series.get(key, []))) for r in ordered]
        if any(points for _, points in traces):
            # Each compared run's anchored notes, labelled with the run they are about.
            chart_data[f"chart-{key}"] = charts.with_notes(
                charts.over_the_run(traces, key, title, unit), notes, who, selectable=False)
    target = queries.positive_float(request.GET.get("target"))
    analyses = specdecode.analyses_against_baseline(result, target)
    for a in analyses:
        if a["analysis"]["curve"].get("series"):
            chart_data[f"chart-curve-{a['id']}"] = charts.acceptance_curve(a["name"], a["analysis"]["curve"])
    coll = [(r.name, r.collectives) for r in ordered if r.collectives]
    if coll:
        chart_data["chart-collectives"] = charts.collectives(coll)
    return render(request, "runs/compare.html", {
        "result": result, "inputs": inputs, "charts": chart_data, "ids": ",".join(map(str, ids)),
        "show_all": request.GET.get("all") == "1", "analyses": analyses, "target": target,
    })


@login_required
@require_POST
def annotate(request: HttpRequest, pk: int) -> HttpResponse:
    """The run page's annotation form: a note, pasted NCCL settings, or the step count."""
    run = queries.visible_run(request.user, pk)
    form = AnnotationForm(request.POST)
    if not form.is_valid():
        for problems in form.errors.values():
            for problem in problems:
                messages.error(request, problem)
    else:
        try:
            data = form.cleaned_data
            services.add_annotation(request.user, run, data["kind"], data["body"], parent=data["parent"],
                                    window_from=data["window_from"], window_to=data["window_to"],
                                    phase=data["phase"].strip())
        except services.ServiceError as e:
            messages.error(request, e.message)
    return redirect(reverse("run_detail", args=[run.id]) + "#annotations")


def _thread(annotations: list[Annotation], user, role: str | None) -> list[dict]:
    """The run's notes as a thread: each with its rendered text, its depth, and what the user
    may do with it; a deleted note shows only when someone replied to it."""
    children: dict[int | None, list[Annotation]] = {}
    for a in annotations:
        children.setdefault(a.parent_id, []).append(a)
    rows: list[dict] = []

    def walk(parent: int | None, depth: int) -> None:
        for a in children.get(parent, []):
            may = not a.deleted_at and (a.author_id == user.pk or role == Role.ADMIN)
            rows.append({"a": a, "depth": min(depth, 4), "html": markdown.render(a.body), "can_change": may,
                         "can_edit": may and a.kind == Annotation.Kind.NOTE})
            walk(a.id, depth + 1)

    walk(None, 0)
    return rows


@login_required
@require_POST
def annotation_edit(request: HttpRequest, pk: int) -> HttpResponse:
    annotation = queries.visible_annotation(request.user, pk)
    form = AnnotationEditForm(request.POST)
    try:
        if not form.is_valid():
            raise services.ServiceError(422, "invalid", "; ".join(p for ps in form.errors.values() for p in ps))
        services.edit_annotation(request.user, annotation, form.cleaned_data["body"])
    except services.ServiceError as e:
        messages.error(request, e.message)
    return redirect(reverse("run_detail", args=[annotation.run_id]) + f"#note-{annotation.id}")


@login_required
@require_POST
def annotation_delete(request: HttpRequest, pk: int) -> HttpResponse:
    annotation = queries.visible_annotation(request.user, pk)
    try:
        services.delete_annotation(request.user, annotation)
    except services.ServiceError as e:
        messages.error(request, e.message)
    return redirect(reverse("run_detail", args=[annotation.run_id]) + "#annotations")


@login_required
@require_GET
def project_list(request: HttpRequest) -> HttpResponse:
    return render(request, "runs/project_list.html", {"memberships": queries.my_memberships(request.user)})


@login_required
@require_http_methods(["GET", "POST"])
def project_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """Members and roles; admins add (by username or e-mail), change roles and remove."""
    project = queries.visible_project(request.user, pk)
    if request.method == "POST":
        _member_action(request, project)
        return redirect("project_detail", pk=project.pk)
    return render(request, "runs/project_detail.html", {
        "project": project, "members": queries.project_members(project),
        "is_admin": has_role(request.user, project, Role.ADMIN), "role": role_in(request.user, project),
        "member_form": MemberForm(), "roles": Role.choices,
    })


def _member_action(request: HttpRequest, project) -> None:
    action = request.POST.get("action")
    try:
        if action == "add":
            form = MemberForm(request.POST)
            if not form.is_valid():
                raise services.ServiceError(422, "invalid", "; ".join(p for ps in form.errors.values() for p in ps))
            services.add_member(request.user, project, form.cleaned_data["user"], form.cleaned_data["role"])
        elif action == "role":
            role_form = RoleForm(request.POST)
            if not role_form.is_valid():
                raise services.ServiceError(422, "bad_role", "choose viewer, editor or admin")
            services.set_role(request.user, project, request.POST.get("username", ""), role_form.cleaned_data["role"])
        elif action == "remove":
            services.remove_member(request.user, project, request.POST.get("username", ""))
        else:
            raise services.ServiceError(400, "bad_action", "unknown action")
    except services.ServiceError as e:
        messages.error(request, e.message)
