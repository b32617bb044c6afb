"""Schemathesis against /api/v1/openapi.json, in process (WSGI): every operation, generated inputs,
a Bearer token of a user who has runs. Gate (RELIABILITY F1): no 5xx, no response outside the schema.

Kept fast: MAX_EXAMPLES cases per operation (RUNLENS_SCHEMA_EXAMPLES raises it, e.g. for a nightly run).
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, assume, settings
from openapi_spec_validator import validate

from webapp.wsgi import application

MAX_EXAMPLES = int(os.environ.get("RUNLENS_SCHEMA_EXAMPLES", "25"))

# Valid by the schema yet refused by the domain: a file that starts like gzip but is not one (400)
# or inflates past the cap (413), a path outside the log roots, a run that was not registered (400),
# an `nccl`/`steps` annotation whose body does not parse (422), a role for a file the run lacks (400). Those codes are what
# positive_data_acceptance should accept for these operations; everything else stays strict.
DEFAULT_ACCEPTED = ["2xx", "3xx", "401", "403", "404", "409", "429", "5xx"]
DOMAIN_REFUSALS = {
    "POST /api/v1/runs": ["400", "413"],
    "POST /api/v1/runs/register": ["400"],
    "POST /api/v1/runs/{run_id}/refresh": ["400"],
    "POST /api/v1/runs/{run_id}/annotations": ["422"],
    "POST /api/v1/runs/{run_id}/roles": ["400"],  # names a file the run does not have
    # An expiry outside 1970..9999-01-01 UTC: JSON Schema has no bounds for a date-time.
    "POST /api/v1/tokens": ["422"],
}
# The upload's negative cases are serialised as multipart, where a mutated `files` value still goes
# out as a file part named `files` (see the reproduction curl of such a case): the server then
# receives a valid upload, so "negative data accepted" there is the serialiser's, not ours. The
# upload's refusals of bad multipart are covered in tests/test_api_ingest.py instead.
MULTIPART_NEGATIVES_OFF = {"POST /api/v1/runs"}
config = schemathesis.Config.from_dict({"operations": [
    {"include-name": name, "checks": {
        "positive_data_acceptance": {"expected-statuses": DEFAULT_ACCEPTED + codes},
        **({"negative_data_rejection": {"enabled": False}} if name in MULTIPART_NEGATIVES_OFF else {}),
    }}
    for name, codes in DOMAIN_REFUSALS.items()
]})
schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", application, config=config)
CASES: Counter[str] = Counter()


@pytest.fixture
def runs_of_alice(alice, upload_run, tmp_path, settings):
    """alice's runs (one parsed, one queued) and a log root, so generated calls can hit real rows."""
    settings.API_RATE = settings.API_FAILED_AUTH_RATE = "100000/m"
    root = tmp_path / "roots"
    root.mkdir()
    settings.LOG_ROOTS = [root.resolve()]
    return [upload_run(alice, "spec_eagle3_tuned_2step.log").id, upload_run(alice, "spec_baseline_nospec.log",
                                                                             parse=False).id]


@pytest.fixture(autouse=True)
def _keep_the_test_transaction():
    """Django closes the database connection at the end of each request, which would end the test's
    transaction: the test client avoids that the same way (signals off during the call)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture(autouse=True)
def _quiet_4xx(caplog):
    """Thousands of expected 4xx warnings would bury a real failure; 5xx are errors and still show."""
    caplog.set_level(logging.ERROR, logger="django.request")


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    if CASES:
        print(f"\nschemathesis: {len(CASES)} operations, {sum(CASES.values())} cases: {dict(sorted(CASES.items()))}")


@pytest.mark.django_db
@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.filter_too_much])
def test_api_conforms_to_its_schema(case, alice, bearer, runs_of_alice):
    # Half the valid generated ids point at alice's runs, so the operations do more than answer 404
    # (invalid ids of negative cases stay invalid).
    run_id = (case.path_parameters or {}).get("run_id")
    negative = case.meta is not None and case.meta.generation.mode.is_negative
    if not negative and isinstance(run_id, int) and run_id >= 1 and run_id % 2 == 0:
        case.path_parameters["run_id"] = runs_of_alice[run_id // 2 % 2]
    # Two cases the transport makes, not the API: a generated header named Host replaces the request's
    # own (Django's ALLOWED_HOSTS answers 400 before any view, as it does for every site), and werkzeug
    # encodes an empty file part without the CRLF before the next boundary, so Django's multipart
    # parser (rightly) finds no file in it; curl and browsers send that CRLF, and an empty upload is
    # accepted (tests/test_api_ingest.py).
    for name in [k for k in case.headers or {} if k.lower() == "host"]:
        del case.headers[name]  # type: ignore[union-attr]
    files = case.body.get("files") if isinstance(case.body, dict) else None
    assume(not (isinstance(files, list) and any(isinstance(f, (bytes, str)) and not f for f in files)))
    CASES[case.operation.label] += 1
    case.call_and_validate(headers=bearer(alice))


def _refuse_repeated_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    keys = [key for key, _ in pairs]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    assert not repeated, f"keys written twice in one object of openapi.json: {repeated}"
    return dict(pairs)


def test_openapi_json_is_a_valid_openapi_document(client):
    # Read from the bytes served: a key written twice is lost when parsed into a dict, yet Swagger UI
    # (a YAML parser) refuses the whole document for it.
    document = json.loads(client.get("/api/v1/openapi.json").content, object_pairs_hook=_refuse_repeated_keys)
    validate(document)
    assert document["paths"]["/api/v1/client/runlens-upload.py"]["get"]["responses"]["200"]["content"]
