"""Getting logs in through the browser, and serving their lines back (provenance)."""

from __future__ import annotations

from itertools import islice

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from ingest import services, storage
from ingest.parsers.text import clean
from runs.models import Annotation, LogFile, Membership, visible_runs

MAX_LINES = 200


@login_required
@require_http_methods(["GET", "POST"])
def upload(request: HttpRequest) -> HttpResponse:
    projects = [m.project for m in Membership.objects.filter(user=request.user).select_related("project")]
    if request.method == "GET":
        return render(request, "ingest/upload.html", {"projects": projects})
    wants_json = "application/json" in request.headers.get("Accept", "")
    files = request.FILES.getlist("files")  # parses the body: the size cap is checked here
    refused = getattr(request, "upload_refused", None)
    error, status = None, 400
    if refused:
        error, status = refused, 413
    elif not files:
        error = "choose at least one log file"
    if error is None:
        try:
            run, _ = services.register_upload(
                request.user,
                [services.IncomingFile(f.name, f, f.size) for f in files],
                name=request.POST.get("name", "").strip(),
                project=request.POST.get("project") or None,
                tags=request.POST.get("tags", "").split(","),
                notes=request.POST.get("notes", ""),
            )
        except storage.StorageError as e:
            error, status = e.message, 413 if "too_large" in e.code else 400
        except PermissionError as e:
            error, status = str(e), 403
    if error is not None:
        if wants_json:
            return JsonResponse({"error": {"code": "upload_refused", "message": error}}, status=status)
        return render(request, "ingest/upload.html", {"projects": projects, "error": error}, status=status)
    url = reverse("run_detail", args=[run.id])
    if wants_json:
        return JsonResponse({"id": run.id, "status": run.status, "url": url}, status=202)
    return redirect(url)


def _get_logfile_for_user(request: HttpRequest, pk: int) -> LogFile:
    lf = LogFile.objects.filter(pk=pk, run__in=visible_runs(request.user)).first()
    if lf is None:
        raise Http404("no such log file")
    return lf


@login_required
@require_GET
def logfile_lines(request: HttpRequest, pk: int) -> JsonResponse:
    """Lines start..end of a stored log (1-based, inclusive), cleaned as the parsers saw them."""
    lf = _get_logfile_for_user(request, pk)
    try:
        start = max(1, int(request.GET.get("start", "1")))
        end = int(request.GET.get("end", str(start)))
    except ValueError:
        return JsonResponse({"error": {"code": "bad_range", "message": "start and end are line numbers"}}, status=400)
    end = max(start, min(end, start + MAX_LINES - 1))
    try:
        with storage.open_log(lf.path, lf.registered) as f:
            raw = list(islice(f, start - 1, end))
    except (OSError, storage.StorageError):
        return JsonResponse({"error": {"code": "unreadable", "message": "the stored log cannot be read"}}, status=410)
    lines = [
        {"line": start + i, "text": clean(b.decode("utf-8", "replace").rstrip("\n").rstrip("\r"))[:4000]}
        for i, b in enumerate(raw)
    ]
    return JsonResponse({"logfile": lf.id, "name": lf.original_name, "lines": lines})


@login_required
@require_GET
def logfile_raw(request: HttpRequest, pk: int) -> FileResponse:
    """The stored log as a download: never rendered, whatever its content (RELIABILITY U6)."""
    lf = _get_logfile_for_user(request, pk)
    try:
        f = storage.open_log(lf.path, lf.registered)
    except (OSError, storage.StorageError):
        raise Http404("the stored log cannot be read") from None
    response = FileResponse(f, as_attachment=True, filename=lf.original_name or f"log-{lf.id}.log",
                            content_type="text/plain; charset=utf-8")
    response["X-Content-Type-Options"] = "nosniff"
    return response


@login_required
@require_http_methods(["POST"])
def annotate(request: HttpRequest, pk: int) -> HttpResponse:
    """The run page's annotation form: a note, pasted NCCL settings, or the step count."""
    run = visible_runs(request.user).filter(pk=pk).first()
    if run is None:
        raise Http404("no such run")
    kind = request.POST.get("kind", Annotation.Kind.NOTE)
    try:
        services.add_annotation(request.user, run, kind, request.POST.get("body", ""))
    except services.ServiceError as e:
        messages.error(request, e.message)
    return redirect(reverse("run_detail", args=[run.id]) + "#annotations")


@login_required
@require_POST
def split_run(request: HttpRequest, pk: int) -> HttpResponse:
    """The run page's "split into runs" button: one run per serving launch."""
    run = visible_runs(request.user).filter(pk=pk).first()
    if run is None:
        raise Http404("no such run")
    try:
        new = services.split_run(request.user, run)
    except services.ServiceError as e:
        messages.error(request, e.message)
        return redirect(reverse("run_detail", args=[run.id]))
    messages.info(request, f"split: this run keeps launch 1; new runs {', '.join(f'#{r.id}' for r in new)}")
    return redirect(reverse("run_detail", args=[run.id]))


@login_required
@require_POST
def set_roles(request: HttpRequest, pk: int) -> HttpResponse:
    """The run page's role correction: one select per log file (`role-<id>`)."""
    run = visible_runs(request.user).filter(pk=pk).first()
    if run is None:
        raise Http404("no such run")
    roles = {key[len("role-"):]: value for key, value in request.POST.items() if key.startswith("role-")}
    try:
        services.set_file_roles(request.user, run, roles)
    except services.ServiceError as e:
        messages.error(request, e.message)
    return redirect(reverse("run_detail", args=[run.id]) + "#processes")
