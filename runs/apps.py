import logging
from pathlib import Path

from django.apps import AppConfig
from django.conf import settings

log = logging.getLogger("runlens")


class RunsConfig(AppConfig):
    name = "runs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The data dir holds the default SQLite file and the stored logs: make it before either is
        # opened, at start-up rather than as a side effect of importing the settings.
        settings.DATA_DIR.mkdir(parents=True, exist_ok=True)
        # Django spools large uploads here; ours, so `cleanup` may remove what a killed server left.
        Path(settings.FILE_UPLOAD_TEMP_DIR).mkdir(parents=True, exist_ok=True)
        if getattr(settings, "HTTPS_IMPLIED_BY_DEBUG", False):
            log.warning("DEBUG=0 and RUNLENS_HTTPS unset: HTTPS is assumed, so every plain-HTTP request is "
                        "redirected to https:// and cookies are Secure. Behind a TLS proxy set "
                        "RUNLENS_BEHIND_PROXY=1; for plain HTTP inside a cluster set RUNLENS_HTTPS=0.")
