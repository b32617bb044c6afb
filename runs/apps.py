from django.apps import AppConfig
from django.conf import settings


class RunsConfig(AppConfig):
    name = "runs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The data dir holds the default SQLite file and the stored logs: make it before either is
        # opened, at start-up rather than as a side effect of importing the settings.
        settings.DATA_DIR.mkdir(parents=True, exist_ok=True)
