"""The profiler-trace parts of the pages: the run page's trace section (its context), the CSV
export and the form that maps range names to phases. Thin: reads through runs.queries, writes
through runs.services, figures from runs/trace_charts.py."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from runs import queries, services, trace_charts, traces
from runs.http import AuthenticatedRequest, csv_download
from runs.models import Run, RunEdit
from runs.permissions import Role, has_role

PHASE_CHOICES = [phase for phase, _ in traces.PHASE_NAMES]


def _int(text: str | None, default: int | None) -> int | None:
    return int(text) if text and text.lstrip("-").isdigit() else default


def trace_context(request: HttpRequest, run: Run) -> dict:
    """What the run page's trace section shows: the chosen GPU's phases by kernel class beside the
    log's phase times, the agreement, launch-bound phases, the chosen cycle's timeline, the mapping form."""
    trace = queries.trace_of(run)
    if trace is None:
        return {"trace": None}
    rank_i = _int(request.GET.get("trace_rank"), 0) or 0
    rank_i = rank_i if 0 <= rank_i < len(trace["ranks"]) else 0
    rank = trace["ranks"][rank_i]
    agreement = traces.agreement(rank["phases"], (run.parsed or {}).get("phases", []))
    tl = traces.timeline(queries.trace_files(run), rank_i, _int(request.GET.get("cycle"), None), run.trace_phases)
    names = sorted({n for p in rank["phases"] for n in p["ranges"]} | {u["name"] for u in rank["unmapped"]})
    return {
        "trace": trace, "trace_rank": rank, "trace_rank_index": rank_i,
        "trace_chart": trace_charts.phase_classes(rank, agreement) if rank["phases"] else None,
        "trace_agreement": agreement, "trace_idle": traces.idle_notes(rank),
        "trace_timeline": tl, "trace_timeline_chart": trace_charts.cycle_timeline(tl) if tl else None,
        "trace_ranges": [(n, traces.phase_of(n, run.trace_phases) or "", n in run.trace_phases) for n in names],
        "trace_phase_choices": PHASE_CHOICES,
        "can_map_trace": has_role(request.user, run.project_id, Role.EDITOR),
        "trace_edits": queries.run_edits(run, RunEdit.What.TRACE_PHASES),
    }


def trace_csv_response(trace: dict, run_id: int) -> HttpResponse:
    header, rows = traces.csv_rows(trace)
    return csv_download(f"runlens-run{run_id}-trace.csv", [header, *rows])


@login_required
@require_GET
def trace_csv(request: HttpRequest, pk: int) -> HttpResponse:
    run = queries.visible_run(request.user, pk)
    trace = queries.trace_of(run)
    if trace is None:
        raise Http404(f"run {pk} has no parsed profiler trace")
    return trace_csv_response(trace, pk)


@login_required
@require_POST
def trace_phases(request: AuthenticatedRequest, pk: int) -> HttpResponse:
    """The run page's mapping form: `range` and `phase` pairs (a blank phase: not a phase; the
    phase runlens guesses is not kept as a person's word)."""
    run = queries.visible_run(request.user, pk)
    if not has_role(request.user, run.project_id, Role.EDITOR):
        raise PermissionDenied("editors and admins map trace ranges")
    mapping = {}
    for name, phase in zip(request.POST.getlist("range"), request.POST.getlist("phase"), strict=False):
        phase = phase.strip()
        if phase != (traces.phase_of(name) or ""):
            mapping[name] = phase
    try:
        edit = services.set_trace_phases(request.user, run, mapping)
    except services.ServiceError as e:
        messages.error(request, e.message)
    else:
        messages.success(request, "trace phases saved" if edit else "nothing changed")
    return redirect(reverse("run_detail", args=[pk]) + "#trace")
