"""A file of thousands of nccl-tests tests lists its first runs.summary.NCCL_TESTS_KEPT - 1 panels
and its last (which shows the file's NCCL table), the rest counted in a warning: each panel
carries the file's NCCL verdict, and 512 MB of nccl-tests outputs made a run's JSON the ingest
worker died saving."""

from __future__ import annotations

import io
from unittest import mock

from ingest.parsers import parse_stream
from runs import summary
from runs.digest import ParseDigest
from tests.samples import PROJECT_ROOT

LOG = (PROJECT_ROOT / "samples" / "nccl-tests_all_reduce_default.log").read_bytes()


def _parsed(data: bytes) -> dict:
    digest = ParseDigest()
    result = parse_stream(io.BytesIO(data), sink=digest)
    return summary.summarize(result, digest.rows(result))


def test_a_file_of_many_tests_lists_its_first_and_its_last_and_counts_the_rest():
    data = LOG * 12
    full = _parsed(data)
    assert [p["test"] for p in full["nccl_tests"]] == list(range(1, 13))
    with mock.patch.object(summary, "NCCL_TESTS_KEPT", 5):
        capped = _parsed(data)
    assert [p["test"] for p in capped["nccl_tests"]] == [1, 2, 3, 4, 12]
    assert capped["nccl_tests"] == [p for p in full["nccl_tests"] if p["test"] in (1, 2, 3, 4, 12)]
    assert capped["nccl_tests"][-1]["tests"] == 12
    assert capped["warnings"] == [*full["warnings"], {"line": None, "message": (
        "the nccl-tests panels list 5 of the 12 tests: a file lists its first 4 tests and its last one, "
        "the other 7 are counted only")}]


def test_a_real_output_is_not_capped():
    parsed = _parsed(LOG)
    assert len(parsed["nccl_tests"]) == 1 and not [w for w in parsed["warnings"] if "nccl-tests panels" in w["message"]]
