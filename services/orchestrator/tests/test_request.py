"""Planning a job: peer selection trusts what the platform measured over what peers claim."""

from __future__ import annotations

from peertrain.common.events.datasets import ColumnEncoding, FeatureSpec
from peertrain.common.security import Principal
from peertrain.orchestrator.domain.directory import DatasetInfo, Directory, PeerInfo
from peertrain.orchestrator.domain.job_request import JobRequest
from peertrain.orchestrator.domain.request import plan_job

USER = Principal("u1", frozenset({"user"}), "t", 0, 0)


def _directory(*peers: PeerInfo) -> Directory:
    d = Directory()
    d.datasets["d1"] = DatasetInfo(
        "d1",
        owner_id="u1",
        state="validated",
        feature_spec=FeatureSpec(
            kind="table",
            input_shape=(4,),
            input_size=4,
            classes=("a", "b"),
            columns=(ColumnEncoding(name="x", type="numeric", offset=0, width=4),),
            label_column="y",
        ),
        train_rows=100,
        classes=("a", "b"),
    )
    for p in peers:
        d.peers[p.peer_id] = p
    return d


def _peer(peer_id: str, owner: str, memory: float, *, shared: bool = True) -> PeerInfo:
    return PeerInfo(
        peer_id, owner_id=owner, registered=True, online=True, shared=shared, memory_gb=memory
    )


def _select(directory: Directory, count: int) -> tuple[str, ...]:
    request = JobRequest(name="j", dataset_id="d1", selection={"count": count})  # type: ignore[arg-type]
    return plan_job("j1", request, USER, directory).peers


def test_a_strangers_absurd_claim_does_not_win_the_selection() -> None:
    hostile = _peer("zz-hostile", "stranger", 8192.0)
    honest = _peer("aa-honest", "other", 64.0)
    own = _peer("mm-own", "u1", 8.0, shared=False)
    directory = _directory(hostile, honest, own)
    assert _select(directory, 1) == ("mm-own",)  # the caller's own peers first
    # claims above the cap rank alike: the hostile claim buys nothing (id breaks ties)
    assert _select(directory, 2) == ("mm-own", "aa-honest")


def test_measured_speed_outranks_claimed_memory() -> None:
    fast, big = _peer("fast", "other", 4.0), _peer("big", "other", 60.0)
    fast.observe(rows=1000, seconds=2.0)
    big.observe(rows=1000, seconds=20.0)
    assert _select(_directory(fast, big), 1) == ("fast",)
