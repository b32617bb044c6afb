import os

# runlens does no linear algebra: numpy's OpenBLAS needs no thread pool, whose threads spin at
# import on the cores the parse needs. Set here,
# the first module of every entry point (manage.py, the Celery worker, gunicorn), before numpy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from .celery import app as celery_app  # noqa: E402  (after the environment it must see)

__all__ = ["celery_app"]
