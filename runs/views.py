"""Pages: run list, run detail, live status, comparison, annotations, projects (the sweep and trend
pages are runs/views_sweep.py and runs/views_trend.py). Thin: read the request,
fetch through runs/queries.py what the user may see, call pure code, render."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from runs import charts, forms, markdown, queries, series, services, specdecode, trace_charts
from runs.compare import to_csv_rows
from runs.display import throughput_scope_text
from runs.forms import AnnotationEditForm, AnnotationForm, MemberForm, RoleForm
from runs.http import AuthenticatedRequest, csv_download
from runs.models import Annotation, RunEdit, Status
from runs.nccl import nccl_sentence
from runs.permissions import Role, has_role, role_in
from runs.summary import person_vs_logs
from runs.trace_views import trace_context

SORT_COLUMNS = [
    ("name", "Run"), ("status", "Status"), ("steps", "Steps"), ("tok_s", "tok/s"),
    ("tpc", "tokens/cycle"), ("cycle", "cycle ms"), ("verify", "verify ms"), ("date", "Date"),
]
MAX_CURVES = 4
FILTER_KEYS = ("q", "status", "tag", "engine", "steps", "nccl", "nccl_status")


@login_required
@require_GET
def run_list(request: HttpRequest) -> HttpResponse:
    sort = request.GET.get("sort", "-date")
    runs = queries.run_pages(request.user, forms.filters_from_query(request.GET), sort)
    page = Paginator(runs, 50).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    query.pop("sort", None)
    return render(request, "runs/run_list.html", {
        "page": page, "filters": {**{k: request.GET.get(k, "") for k in FILTER_KEYS}, "sort": sort},
        "busy_ids": [r.id for r in page if r.is_busy], "statuses": Status.values,
        "query": query.urlencode(), "nccl_statuses": ["ok", "drift", "unknown", "several"],
        "engines": queries.engines(request.user), "sort_columns": SORT_COLUMNS,
        # The feed is the front page's: a filtered list is a search, and shows only what matched.
        "activity": [] if any(request.GET.get(k) for k in (*FILTER_KEYS, "page")) else queries.activity(request.user),
    })


@login_required
@require_GET
def run_detail(request: AuthenticatedRequest, pk: int) -> HttpResponse:
    run = queries.visible_run(request.user, pk)
    zoom = forms.zoom_from_query(request.GET)
    phases, kept = queries.chart_phase_rows(run, zoom)
    collectives = queries.collective_rows(run)
    parsed = run.parsed or {}
    nccl = parsed.get("nccl") or {}
    baseline, no_baseline = queries.chosen_or_suggested_baseline(request.user, run,
                                                                 forms.optional_id(request.GET.get("baseline")))
    target = forms.positive_float(request.GET.get("target"))
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
    logfiles = queries.run_logfiles(run)
    return render(request, "runs/run_detail.html", {
        "thread": _thread(annotations, request.user, role), "role": role,
        "anchored": [a for a in annotations if a.anchored and not a.deleted_at],
        "run": run, "logfiles": logfiles, "parsed": parsed,
        "phases": parsed.get("phases", []), "chart": chart,
        "nccl": nccl, "nccl_sentence": nccl_sentence(nccl), "first_line": queries.first_lines(run, kept, logfiles),
        **_zoom_context(request, zoom, series.PHASE_CHART_POINTS), "thinned": _thinned(kept["phases"]["windows"], zoom),
        "warnings": parsed.get("warnings", []),
        "person_conflicts": person_vs_logs(parsed, run.steps, run.steps_by_person),
        "baseline": baseline, "no_baseline": no_baseline, "analysis": analysis, "curve": curve, "target": target,
        "collectives_chart": charts.collectives([(run.name, collectives)]) if collectives else None,
        "serving": sorted((parsed.get("serving") or {}).items()),
        "baseline_choices": queries.baseline_choices(request.user, run), "annotation_form": AnnotationForm(),
        "can_pin": run.status == Status.READY and services.can_pin(request.user, run),
        "can_tag": has_role(request.user, run.project_id, Role.EDITOR),
        "run_edits": queries.run_edits(run, RunEdit.What.TAGS),
        **trace_context(request, run),
        "role_edits": queries.run_edits(run, RunEdit.What.ROLES),
    })


def _thinned(windows: int, zoom: tuple[int, int] | None) -> bool:
    """Whether the phase chart shows a thinned run (the page says so and how to zoom)."""
    return zoom is None and windows > series.PHASE_CHART_POINTS


def _zoom_context(request: HttpRequest, zoom: tuple[int, int] | None, points: int) -> dict:
    """The zoom form's context: the page's other parameters (kept), the whole run's query string."""
    keep = [(k, v) for k in request.GET if k not in ("from", "to") for v in request.GET.getlist(k)]
    return {"zoom": zoom, "zoom_keep": keep, "zoom_whole": urlencode(keep), "zoom_points": points,
            "zoom_max": series.ZOOM_MAX_WINDOWS}


def _count(run, key: str) -> int:
    points = run.series.get(key, [])
    return points[-1][0] if points else 0  # x is the position in the run: the last one is the count


@login_required
@require_GET
def run_status(request: HttpRequest) -> JsonResponse:
    """Statuses of the runs named in ?ids=1,2,3 (the list and detail pages poll this)."""
    raw = [i for i in request.GET.get("ids", "").split(",") if i]
    if not all(forms.is_int(i) for i in raw):
        return JsonResponse({"error": {"code": "bad_ids", "message": "ids must be integers"}}, status=400)
    runs = queries.run_statuses(request.user, [int(i) for i in raw][:200])
    return JsonResponse({"runs": [
        {
            "id": r.id, "status": r.status, "busy": r.is_busy, "error": r.error,
            "throughput_tok_s": r.throughput_tok_s, "tokens_per_cycle": r.tokens_per_cycle,
            "cycle_ms": r.cycle_ms, "verify_ms": r.verify_ms, "steps": r.steps, "nccl_status": r.nccl_status,
            # Everything else the list row shows, so a row filled live matches one rendered by the server.
            "person_conflict": r.person_conflict, "launches_count": r.launches_count, "failed_files": r.failed_files,
            # An annotation of queries.run_statuses (lists never load `parsed`).
            "throughput_scope": throughput_scope_text(getattr(r, "throughput_scope", None)),
            "logfiles": [{"id": lf.id, "status": lf.status, "error": lf.error} for lf in r.logfiles.all()],
        }
        for r in runs
    ]})


@login_required
@require_GET
def figure_lines(request: HttpRequest, pk: int) -> JsonResponse:
    """The windows behind one median figure of the run page, for the source panel: every file's
    windows with their values and lines (at most FIGURE_LINES_SHOWN), the card's figure, and the
    middle window (odd count) or two (even: the median is their mean) marked."""
    run = queries.visible_run(request.user, pk)
    found = queries.figure_windows(run, request.GET.get("key", ""))
    if found is None:
        return JsonResponse({"error": {"code": "no_figure", "message": "no such figure in this run"}}, status=404)
    return JsonResponse(found)


@login_required
@require_GET
def compare_view(request: HttpRequest) -> HttpResponse:
    # ?runs=3,7,9 (shareable) or ?run=3&run=7 (the run list's checkboxes without JavaScript)
    asked = forms.run_ids(request.GET)
    ids, left_out = asked[:queries.MAX_COMPARED], asked[queries.MAX_COMPARED:]
    fmt = request.GET.get("format")
    zoom = forms.zoom_from_query(request.GET)
    inputs, result = queries.comparison_for(request.user, ids, forms.optional_id(request.GET.get("baseline")),
                                            points=fmt not in ("json", "csv"), zoom=zoom)
    if fmt == "json":
        response: HttpResponse = JsonResponse({**result, "left_out": left_out})
        response["Content-Disposition"] = 'attachment; filename="runlens-compare.json"'
        return response
    if fmt == "csv":
        return csv_download("runlens-compare.csv", to_csv_rows(result))
    ordered = queries.in_result_order(inputs, result)
    chart_data = {}
    if result.get("trace") and (deltas := trace_charts.class_deltas(result["trace"])):
        chart_data["chart-trace-deltas"] = deltas
    if inputs and result["phases"]:
        chart_data["chart-breakdown"] = charts.cycle_breakdown(result)
        if len(inputs) >= 2:
            chart_data["chart-deltas"] = charts.phase_deltas(result)
    notes = queries.anchored_notes(ids)
    who = {n.id: f"{n.run.name} · {n.author.get_username() if n.author else 'someone'}" for n in notes}
    for key, (title, unit) in charts.SERIES.items():
        # Stored series thinned again for up to 20 runs a chart; a zoom shows every row it read.
        traces = [(r.name, r.series.get(key, []) if zoom
                   else series.downsample(r.series.get(key, []), series.FIGURE_POINTS)) for r in ordered]
        if any(points for _, points in traces):
            # Each compared run's anchored notes, labelled with the run they are about.
            chart_data[f"chart-{key}"] = charts.with_notes(
                charts.over_the_run(traces, key, title, unit), notes, who, selectable=False)
    target = forms.positive_float(request.GET.get("target"))
    analyses = specdecode.analyses_against_baseline(result, target)
    # A curve per run reads well for a few runs; past that the table says it and run pages have each curve.
    for a in analyses[:MAX_CURVES]:
        if a["analysis"]["curve"].get("series"):
            chart_data[f"chart-curve-{a['id']}"] = charts.acceptance_curve(a["name"], a["analysis"]["curve"])
    coll = [(r.name, r.collectives) for r in ordered if r.collectives]
    if coll:
        chart_data["chart-collectives"] = charts.collectives(coll)
    return render(request, "runs/compare.html", {
        "result": result, "inputs": inputs, "charts": chart_data, "ids": ",".join(map(str, ids)),
        "show_all": request.GET.get("all") == "1", "analyses": analyses, "target": target,
        "left_out": left_out, "max_compared": queries.MAX_COMPARED, "max_curves": MAX_CURVES,
        **_zoom_context(request, zoom, series.FIGURE_POINTS),
        "thinned": not zoom and any(_count(r, k) > series.FIGURE_POINTS for r in ordered for k in charts.SERIES),
    })


@login_required
@require_POST
def annotate(request: AuthenticatedRequest, pk: int) -> HttpResponse:
    """The run page's annotation form: a note, pasted NCCL settings, or the step count."""
    run = queries.visible_run(request.user, pk)
    form = AnnotationForm(request.POST)
    if not form.is_valid():
        for problems in form.errors.values():
            for problem in problems:
                messages.error(request, str(problem))  # the stubs allow a ValidationError; Django yields str
    else:
        try:
            data = form.cleaned_data
            annotation = services.add_annotation(
                request.user, run, data["kind"], data["body"], parent=data["parent"],
                window_from=data["window_from"], window_to=data["window_to"], phase=data["phase"].strip())
            for warning in annotation.warnings:
                messages.warning(request, warning)
        except services.ServiceError as e:
            messages.error(request, e.message)
    return redirect(reverse("run_detail", args=[run.id]) + "#annotations")


@login_required
@require_POST
def split_run(request: AuthenticatedRequest, pk: int) -> HttpResponse:
    """The run page's "split into runs" button: one run per serving launch."""
    run = queries.visible_run(request.user, pk)
    try:
        new = services.split_run(request.user, run)
    except services.ServiceError as e:
        messages.error(request, e.message)
    else:
        messages.info(request, f"Split: this run keeps launch 1; new runs {', '.join(f'#{r.id}' for r in new)}.")
    return redirect(reverse("run_detail", args=[run.id]))


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
def annotation_edit(request: AuthenticatedRequest, pk: int) -> HttpResponse:
    annotation = queries.visible_annotation(request.user, pk)
    form = AnnotationEditForm(request.POST)
    try:
        if not form.is_valid():
            raise services.ServiceError(422, "invalid", "; ".join(str(p) for ps in form.errors.values() for p in ps))
        services.edit_annotation(request.user, annotation, form.cleaned_data["body"])
    except services.ServiceError as e:
        messages.error(request, e.message)
    return redirect(reverse("run_detail", args=[annotation.run_id]) + f"#note-{annotation.id}")


@login_required
@require_POST
def pin(request: AuthenticatedRequest, pk: int) -> HttpResponse:
    """The run page's "pin as CI baseline" button (and its unpin twin)."""
    run = queries.visible_run(request.user, pk)
    pinned = request.POST.get("pinned") == "1"
    try:
        services.pin_baseline(request.user, run, pinned)
    except services.ServiceError as e:  # the button shows only to admins: a race, or a hand-made POST
        messages.error(request, e.message)
    return redirect(reverse("run_detail", args=[run.id]))


@login_required
@require_POST
def set_tags(request: AuthenticatedRequest, pk: int) -> HttpResponse:
    """The run page's tag editor: `tags`, comma-separated, replace all of the run's tags."""
    run = queries.visible_run(request.user, pk)
    tags = [t for t in request.POST.get("tags", "").split(",") if t.strip()]
    try:
        services.replace_tags(request.user, run, tags[:100])
    except PermissionDenied as e:
        messages.error(request, str(e) or "changing tags needs the editor role")
    return redirect(reverse("run_detail", args=[run.id]) + "#tags")


@login_required
@require_POST
def set_roles(request: AuthenticatedRequest, pk: int) -> HttpResponse:
    """The run page's role correction: one select per log file (`role-<id>`)."""
    run = queries.visible_run(request.user, pk)
    # QueryDict.items() gives each key's last value, a str (the stubs say str | list).
    roles = {key[len("role-"):]: str(value) for key, value in request.POST.items() if key.startswith("role-")}
    try:
        services.set_file_roles(request.user, run, roles)
    except services.ServiceError as e:
        messages.error(request, e.message)
    except PermissionDenied as e:
        messages.error(request, str(e) or "correcting roles needs the editor role")
    return redirect(reverse("run_detail", args=[run.id]) + "#processes")


@login_required
@require_POST
def annotation_delete(request: AuthenticatedRequest, pk: int) -> HttpResponse:
    annotation = queries.visible_annotation(request.user, pk)
    try:
        services.delete_annotation(request.user, annotation)
    except services.ServiceError as e:
        messages.error(request, e.message)
    return redirect(reverse("run_detail", args=[annotation.run_id]) + "#annotations")


@login_required
@require_GET
def project_list(request: HttpRequest) -> HttpResponse:
    """Your projects, and the invitations waiting for you to accept or decline."""
    return render(request, "runs/project_list.html", {"memberships": queries.my_memberships(request.user),
                                                      "invitations": list(queries.invitations_for(request.user))})


@login_required
@require_POST
def answer_invitation(request: AuthenticatedRequest, pk: int, answer: str) -> HttpResponse:
    try:
        if answer == "accept":
            membership = services.accept_invitation(request.user, pk)
            messages.info(request, f"you joined {membership.project.name} as {membership.role}")
            return redirect("project_detail", pk=membership.project_id)
        services.decline_invitation(request.user, pk)
        messages.info(request, "invitation declined")
    except services.ServiceError as e:
        messages.error(request, e.message)
    return redirect("project_list")


@login_required
@require_http_methods(["GET", "POST"])
def project_detail(request: AuthenticatedRequest, pk: int) -> HttpResponse:
    """Members and roles; admins add (by username or e-mail), change roles and remove."""
    project = queries.visible_project(request.user, pk)
    if request.method == "POST":
        _member_action(request, project)
        return redirect("project_detail", pk=project.pk)
    is_admin = has_role(request.user, project, Role.ADMIN)
    return render(request, "runs/project_detail.html", {
        "project": project, "members": queries.project_members(project),
        "is_admin": is_admin, "role": role_in(request.user, project),
        "invitations": queries.project_invitations(project) if is_admin else [],
        "member_form": MemberForm(), "roles": Role.choices,
    })


def _member_action(request: AuthenticatedRequest, project) -> None:
    action = request.POST.get("action")
    try:
        if action == "add":
            form = MemberForm(request.POST)
            if not form.is_valid():
                raise services.ServiceError(422, "invalid",
                                            "; ".join(str(p) for ps in form.errors.values() for p in ps))
            invitation = services.invite(request.user, project, form.cleaned_data["user"], form.cleaned_data["role"])
            messages.info(request, f"invited {invitation.invitee} as {invitation.role}: they join when they accept")
        elif action == "role":
            role_form = RoleForm(request.POST)
            if not role_form.is_valid():
                raise services.ServiceError(422, "bad_role", "choose viewer, editor or admin")
            services.set_role(request.user, project, request.POST.get("username", ""), role_form.cleaned_data["role"])
        elif action == "remove":
            services.remove_member(request.user, project, request.POST.get("username", ""))
        elif action == "withdraw":
            raw = request.POST.get("invitation")
            services.withdraw_invitation(request.user, project, int(raw) if forms.is_int(raw) else 0)
        else:
            raise services.ServiceError(400, "bad_action", "unknown action")
    except services.ServiceError as e:
        messages.error(request, e.message)
