"""The run list fills itself in while runs parse: each row filled by the script reads exactly as
the row the server renders afterwards (figures, steps, status, every badge)."""

from __future__ import annotations

import pytest

from ingest import registration, services
from tests.browser.conftest import ARTIFACTS, login
from tests.samples import dp_attention_log, upload_bytes

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Each field's text, whether it is drawn (not just flagged hidden: a class's display can override
# that), and its classes.
ROW = """(row) => Array.from(row.querySelectorAll('[data-field]')).map((el) =>
    [el.dataset.field, el.textContent.replace(/\\s+/g, ' ').trim(), !el.checkVisibility(), el.className])"""


def _rows(page, ids):
    return {i: page.eval_on_selector(f"tr[data-run='{i}']", ROW) for i in ids}


def test_rows_filled_live_read_as_the_servers(page, alice, upload_run, private_queue):
    runs = [
        upload_run(alice, "spec_eagle3_tuned_2step.log", name="person says 5 steps", steps=5, parse=False),
        upload_run(alice, "spec_eagle3_tuned_2step.log", "sweep/sweep_dropped_2step.log", name="two launches",
                   parse=False),
        upload_run(alice, "sweep/sweep_dropped_2step.log", name="dropped", parse=False),
        upload_bytes(alice, "dp attention.log", dp_attention_log()),
    ]
    ids = [r.id for r in runs]
    login(page, "alice", "alice-pw")
    assert page.get_attribute("#run-table", "data-busy") == ",".join(map(str, reversed(ids)))
    assert page.inner_text(f"tr[data-run='{ids[0]}'] [data-field=throughput_tok_s]") == "—"

    for run in runs:  # the parse ends while the page is open; the list polls and fills the rows
        for lf in run.logfiles.all():
            services.parse_logfile(lf.id)
    for i in ids:
        page.wait_for_selector(f"tr[data-run='{i}'] .status.ready", timeout=30_000)
    live = _rows(page, ids)
    page.screenshot(path=str(ARTIFACTS / "run-list-live.png"), full_page=True)
    page.reload()
    served = _rows(page, ids)
    assert live == served

    def shown(i: int, field: str) -> str | None:
        return next((text for f, text, hidden, _ in served[i] if f == field and not hidden), None)

    conflict, launches, dropped, dp = ids
    assert shown(conflict, "person_conflict") == "person ≠ log" and shown(conflict, "steps") == "5"
    assert shown(launches, "launches") == "⚠ 2 launches" and shown(conflict, "launches") is None
    assert shown(dropped, "nccl_drift") == "NCCL drift" and shown(conflict, "nccl_drift") is None
    # 150.05 + 47.00 per window: 197.05 is written 197.1 (Number.toFixed would say 197.0).
    assert shown(dp, "throughput_tok_s") == "197.1"
    assert shown(dp, "throughput_scope") == "sum over 2 DP ranks (DP attention)"
    assert shown(conflict, "throughput_scope") is None and shown(conflict, "throughput_tok_s") not in (None, "—")
    assert not page.errors


def test_a_ready_run_with_a_failed_file_says_so_in_the_list_and_on_its_page(page, alice, private_queue):
    import io

    from tests.samples import log_path

    tuned = log_path("spec_eagle3_tuned_2step.log").read_bytes()
    dump = b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8  # a binary attached by mistake: NUL bytes
    run, _ = registration.register_upload(alice, [registration.IncomingFile("server.log", io.BytesIO(tuned), len(tuned)),
                                              registration.IncomingFile("core.bin", io.BytesIO(dump), len(dump))],
                                      project="team", name="one file failed")
    login(page, "alice", "alice-pw")
    for lf in run.logfiles.all():  # parsed while the list is open: the row fills itself in
        services.parse_logfile(lf.id)
    row = f"tr[data-run='{run.id}']"
    page.wait_for_selector(f"{row} [data-field=status].ready")
    live = _rows(page, [run.id])
    assert page.is_visible(f"{row} [data-field=failed]")
    assert page.inner_text(f"{row} [data-field=failed]") == "⚠ failed files: 1"
    assert "core.bin" in page.get_attribute(f"{row} [data-field=failed]", "title")
    page.reload()
    assert _rows(page, [run.id]) == live
    page.goto(f"{page.base}/runs/{run.id}/")
    assert page.inner_text("#run-status") == "ready · 1 file failed"
    banner = page.inner_text("#failed-files")
    assert banner.startswith("1 of 2 log files failed") and "core.bin: this is a binary file" in banner
    page.screenshot(path=str(ARTIFACTS / "run-with-a-failed-file.png"), full_page=True)
    assert page.errors == []
