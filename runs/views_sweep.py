"""The sweep page: runs grouped by configuration against their draft step count, with its CSV and
JSON downloads."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from runs import charts, forms, queries
from runs.http import csv_download
from runs.sweep import to_csv_rows


@login_required
@require_GET
def sweep_view(request: HttpRequest) -> HttpResponse:
    query = request.GET
    result, selection = queries.sweep_for(request.user, forms.run_ids(query), query.get("project", "").strip(),
                                          query.get("tag", "").strip())
    fmt = request.GET.get("format")
    if fmt == "json":
        response: HttpResponse = JsonResponse(result)
        response["Content-Disposition"] = 'attachment; filename="runlens-sweep.json"'
        return response
    if fmt == "csv":
        return csv_download("runlens-sweep.csv", to_csv_rows(result))
    chart_data = {}
    if result["groups"]:
        for key in charts.SWEEP_METRICS:
            if any(p[key] is not None for g in result["groups"] for p in g["points"]):
                chart_data[f"chart-sweep-{key}"] = charts.sweep_chart(result, key)
    share = {"runs": selection["runs"]} if not selection["project"] else {
        k: selection[k] for k in ("project", "tag") if selection[k]}
    return render(request, "runs/sweep.html", {
        "result": result, "charts": chart_data, "selection": selection, "share": urlencode(share),
    })
