"""Celery tasks: a few lines each, ids in, services do the work (STYLE 6)."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from django.db import OperationalError

from ingest import services, storage

log = logging.getLogger(__name__)


# Retry only what may pass (the database went away for a moment); a bad log is not retried.
@shared_task(bind=True, autoretry_for=(OperationalError,), retry_backoff=5, retry_backoff_max=300, max_retries=5)
def parse_logfile(self, logfile_id: int) -> str:
    # The task id lets a redelivery of this message take over its own dead claim.
    return services.parse_logfile(logfile_id, token=self.request.id or "")


@shared_task
def reconcile() -> int:
    count = services.reconcile()
    if count:
        log.warning("reconciler re-queued or failed %d stuck log file(s)", count)
    removed = storage.remove_orphans(settings.ORPHAN_AGE_SECONDS)
    if removed:
        log.warning("reconciler removed %d orphaned temporary file(s)", len(removed))
    return count
