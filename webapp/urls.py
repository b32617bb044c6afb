from pathlib import Path

import plotly
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import FileResponse, HttpRequest
from django.urls import path, re_path
from django.views.decorators.cache import cache_control
from django.views.decorators.gzip import gzip_page
from django.views.decorators.http import require_GET

from ingest import views as ingest_views
from runs import trace_views
from runs import views as run_views
from runs import views_sweep as sweep_views
from runs import views_trend as trend_views
from webapp import views as account_views
from webapp.api import api, not_found

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


@require_GET  # a file to read: every page that takes a POST has its row in tests/test_role_matrix.py
@gzip_page  # 4.8 MB as sent by plotly; about 1.4 MB gzipped
@cache_control(max_age=86400, public=True)
def plotly_js(request: HttpRequest) -> FileResponse:
    """plotly.js from the installed plotly package: no CDN, ever (air-gapped clusters)."""
    return FileResponse(open(PLOTLY_JS, "rb"), content_type="text/javascript; charset=utf-8")


urlpatterns = [
    path("", run_views.run_list, name="run_list"),
    path("runs/<int:pk>/", run_views.run_detail, name="run_detail"),
    path("runs/status.json", run_views.run_status, name="run_status"),
    path("runs/<int:pk>/figure.json", run_views.figure_lines, name="figure_lines"),
    path("compare/", run_views.compare_view, name="compare"),
    path("runs/<int:pk>/pin", run_views.pin, name="pin"),
    path("sweep/", sweep_views.sweep_view, name="sweep"),
    path("trend/", trend_views.trend_view, name="trend"),
    path("runs/<int:pk>/annotate", run_views.annotate, name="annotate"),
    path("runs/<int:pk>/split", run_views.split_run, name="split_run"),
    path("runs/<int:pk>/roles", run_views.set_roles, name="set_roles"),
    path("runs/<int:pk>/tags", run_views.set_tags, name="set_tags"),
    path("runs/<int:pk>/trace.csv", trace_views.trace_csv, name="trace_csv"),
    path("runs/<int:pk>/trace/phases", trace_views.trace_phases, name="trace_phases"),
    path("annotations/<int:pk>/edit", run_views.annotation_edit, name="annotation_edit"),
    path("annotations/<int:pk>/delete", run_views.annotation_delete, name="annotation_delete"),
    path("projects/", run_views.project_list, name="project_list"),
    path("projects/<int:pk>/", run_views.project_detail, name="project_detail"),
    path("invitations/<int:pk>/accept", run_views.answer_invitation, {"answer": "accept"}, name="accept_invitation"),
    path("invitations/<int:pk>/decline", run_views.answer_invitation, {"answer": "decline"},
         name="decline_invitation"),
    path("settings/tokens/", account_views.tokens, name="tokens"),
    path("settings/tokens/<int:pk>/revoke", account_views.revoke_token, name="revoke_token"),
    path("accounts/password/", account_views.PasswordChange.as_view(), name="password_change"),
    path("accounts/password/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("upload/", ingest_views.upload, name="upload"),
    path("ingest/logfiles/<int:pk>/lines", ingest_views.logfile_lines, name="logfile_lines"),
    path("ingest/logfiles/<int:pk>/raw", ingest_views.logfile_raw, name="logfile_raw"),
    path("vendor/plotly.min.js", plotly_js, name="plotly_js"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    re_path(r"^api/", not_found),
]
