"""The API's docs page in a real browser: Swagger UI reads openapi.json and lists the operations."""

from __future__ import annotations

import pytest

from tests.browser.conftest import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_api_docs_list_the_operations_without_a_parser_error(page):
    page.goto(f"{page.base}/api/v1/docs")
    # Swagger UI shows a document it cannot read as an error box instead of the operations.
    page.wait_for_selector(".opblock-summary-path, .errors-wrapper")
    page.screenshot(path=str(ARTIFACTS / "api-docs.png"), full_page=True)
    errors = page.locator(".errors-wrapper")
    assert errors.count() == 0, errors.inner_text()
    paths = [p.strip() for p in page.locator(".opblock-summary-path").all_inner_texts()]
    assert "/api/v1/runs" in paths and "/api/v1/client/runlens-upload.py" in paths
    assert len(paths) > 20
    assert not page.errors
