"""Per-user quotas: the pure decision (datasets kept, bytes stored)."""

from __future__ import annotations

import pytest

from peertrain.dataset.domain.errors import DatasetQuotaExceeded
from peertrain.dataset.domain.quota import Quota, Usage

QUOTA = Quota(max_datasets=3, max_bytes=1000)


def test_room_is_what_is_left_and_never_negative() -> None:
    assert QUOTA.room(Usage(1, 300)) == 700
    assert QUOTA.room(Usage(1, 1200)) == 0


def test_an_upload_that_fits_exactly_is_allowed() -> None:
    QUOTA.check(Usage(2, 600), 400)
    QUOTA.check(Usage(0, 0))


def test_one_dataset_too_many_is_refused_whatever_its_size() -> None:
    with pytest.raises(DatasetQuotaExceeded) as refused:
        QUOTA.check(Usage(3, 0), 1)
    assert refused.value.status_code == 403
    assert refused.value.code == "quota_exceeded"
    assert refused.value.detail == {"quota": "datasets", "limit": 3, "used": 3}


def test_bytes_past_the_quota_are_refused_and_a_full_quota_refuses_any_upload() -> None:
    with pytest.raises(DatasetQuotaExceeded) as refused:
        QUOTA.check(Usage(1, 600), 401)
    assert refused.value.detail == {"quota": "bytes", "limit": 1000, "used": 600, "incoming": 401}
    with pytest.raises(DatasetQuotaExceeded):
        QUOTA.check(Usage(1, 1000))  # size not known yet: no room at all is enough to refuse
