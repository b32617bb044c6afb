"""Headers every response carries (RELIABILITY X3): a CSP without inline scripts.

`X-Content-Type-Options: nosniff` comes from Django's SecurityMiddleware (SECURE_CONTENT_TYPE_NOSNIFF).
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

# Pages load scripts only from our own static files; chart data travels in json_script tags.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'self'; "
    "frame-ancestors 'none'; form-action 'self'"
)


class SecurityHeadersMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        # The API docs page (Swagger UI) ships its own inline bootstrap script.
        if not request.path.startswith("/api/v1/docs"):
            response.headers.setdefault("Content-Security-Policy", CSP)
        return response
