"""The trend page: one figure of a project's runs over commits, regressions flagged."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from runs import charts, queries
from runs.trend import METRIC_INFO, trend


@login_required
@require_GET
def trend_view(request: HttpRequest) -> HttpResponse:
    q = request.GET
    requested = q.get("metric", "")
    metric = requested if requested in METRIC_INFO else "throughput_tok_s"
    filters = {k: q.get(k, "").strip() for k in ("project", "branch", "tag", "nccl_status")}
    projects = queries.project_names(request.user)
    if not filters["project"] and len(projects) == 1:
        filters["project"] = projects[0]
    result = trend(queries.trend_points(request.user, filters["project"], metric, filters["branch"], filters["tag"],
                                filters["nccl_status"]), metric) if filters["project"] else None
    if result is not None and q.get("format") == "json":
        return JsonResponse(result)
    chart = charts.trend_chart(result) if result and result["points"] else None
    return render(request, "runs/trend.html", {
        "result": result, "chart": chart, "filters": filters, "metric": metric, "projects": projects,
        "metrics": [(k, v[0]) for k, v in METRIC_INFO.items()], "nccl_statuses": ["ok", "drift", "unknown"],
    })
