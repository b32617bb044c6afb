"""Getting logs in through the browser, and serving their lines back (provenance)."""

from __future__ import annotations

from itertools import islice

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from ingest import registration, storage
from ingest.forms import UploadForm
from ingest.parsers.text import clean
from runs.http import AuthenticatedRequest
from runs.models import LogFile, Membership, visible_runs
from runs.services import ServiceError

MAX_LINES = 200
MAX_LINE_NUMBER = 2**32  # far past any log we accept; larger offsets would overflow islice


@login_required
@require_http_methods(["GET", "POST"])
def upload(request: AuthenticatedRequest) -> HttpResponse:
    # Projects the user may upload to: viewers read and annotate only.
    projects = [m.project for m in Membership.objects.filter(
        user=request.user, role__in=[Membership.Role.EDITOR, Membership.Role.ADMIN]).select_related("project")]
    if request.method == "GET":
        return render(request, "ingest/upload.html", {"projects": projects})
    wants_json = "application/json" in request.headers.get("Accept", "")
    form = UploadForm(request.POST, request.FILES)  # reads the body: the size cap is checked here
    refused = getattr(request, "upload_refused", None)
    error, status = None, 400
    if refused:
        error, status = refused, 413
    elif not form.is_valid():
        error = "; ".join(str(problem) for problems in form.errors.values() for problem in problems)
    code = "upload_refused"
    if error is None:
        data = form.cleaned_data
        try:
            # The API's service with the API's rules: the same content in the same project is the
            # same run, an unknown project is an error unless created on purpose.
            run, created = registration.register_upload(
                request.user,
                [registration.IncomingFile(f.name, f, f.size) for f in data["files"]],
                name=data["name"].strip(), project=data["project"] or None, tags=form.tag_list(),
                notes=data["notes"], create_project=data["create_project"],
            )
        except storage.StorageError as e:
            error, status = e.message, 413 if "too_large" in e.code else 400
        except ServiceError as e:
            error, status, code = e.message, e.status, e.code
        except (PermissionError, PermissionDenied) as e:
            error, status = str(e), 403
    if error is not None:
        if wants_json:
            return JsonResponse({"error": {"code": code, "message": error}}, status=status)
        return render(request, "ingest/upload.html", {"projects": projects, "error": error}, status=status)
    url = reverse("run_detail", args=[run.id])
    if not created:
        messages.info(request, f"These files were uploaded before to {run.project.name}: this is that run "
                               f"(#{run.id}); nothing new was stored.")
    if wants_json:
        return JsonResponse({"id": run.id, "status": run.status, "url": url, "created": created},
                            status=202 if created else 200)
    return redirect(url)


def _get_logfile_for_user(request: HttpRequest, pk: int) -> LogFile:
    lf = LogFile.objects.filter(pk=pk, run__in=visible_runs(request.user)).first()
    if lf is None:
        raise Http404("no such log file")
    return lf


@login_required
@require_GET
def logfile_lines(request: HttpRequest, pk: int) -> JsonResponse:
    """Lines start..end of a stored log (1-based, inclusive), or the lines listed in ?at=3,40,77
    (a median figure's windows), cleaned as the parsers saw them; at most MAX_LINES."""
    lf = _get_logfile_for_user(request, pk)
    try:
        if request.GET.get("at"):
            wanted = sorted({int(n) for n in request.GET["at"].split(",") if n})[:MAX_LINES]
            if not wanted or wanted[0] < 1 or wanted[-1] > MAX_LINE_NUMBER:
                raise ValueError
        else:
            start = max(1, int(request.GET.get("start", "1")))
            end = int(request.GET.get("end", str(start)))
            if start > MAX_LINE_NUMBER:
                raise ValueError
            end = max(start, min(end, start + MAX_LINES - 1))
            wanted = list(range(start, end + 1))
    except ValueError:
        message = f"start, end and at are line numbers (1 to {MAX_LINE_NUMBER})"
        return JsonResponse({"error": {"code": "bad_range", "message": message}}, status=400)
    keep = set(wanted)
    try:
        with storage.open_log(lf.path, lf.registered) as f:
            raw = [(n, b) for n, b in enumerate(islice(f, wanted[-1]), start=1) if n in keep]
    except (OSError, storage.StorageError):
        return JsonResponse({"error": {"code": "unreadable", "message": "the stored log cannot be read"}}, status=410)
    lines = [
        {"line": n, "text": clean(b.decode("utf-8", "replace").rstrip("\n").rstrip("\r"))[:4000]}
        for n, b in raw
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
    return response
