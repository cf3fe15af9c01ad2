"""Checked work (``aggregation.verify``): who is checked, by whom, and what verdicts do."""

from __future__ import annotations

from datetime import timedelta

from peertrain.common.events import EventData
from peertrain.common.events.models import ModelEvaluated, UpdateChecked
from peertrain.common.events.training import JobCreated, PeerExcluded, RoundClosed, TaskAssigned
from peertrain.common.specs import VerifySpec
from peertrain.orchestrator.api.views import JobMetrics
from peertrain.orchestrator.domain.checks import check_key, pick_peer, resolve, sampled
from peertrain.orchestrator.domain.configuration import configure

from .test_job import Harness, configured


class Checked(Harness):
    """The job harness with ``aggregation.verify`` set."""

    verify = VerifySpec(share=1e-9, probation=1)

    def record(self, stream: str, data: EventData) -> None:
        if isinstance(data, JobCreated):
            agg = data.aggregation.model_copy(update={"verify": self.verify})
            data = data.model_copy(update={"aggregation": agg})
        super().record(stream, data)

    def verdict(self, a: TaskAssigned, b: TaskAssigned, agree: bool) -> None:
        record_verdict(self, a, b, agree=agree)


def record_verdict(h: Harness, a: TaskAssigned, b: TaskAssigned, *, agree: bool) -> None:
    """The aggregator's comparison of ``a``'s and ``b``'s updates (one of them is the
    group's checked task, or checks it), appended to the model stream."""
    h.record(
        "model",
        UpdateChecked(
            job_id="j1",
            round=a.round,
            attempt=a.attempt,
            shard=a.shard,
            checked=a.checks or b.checks or a.task_id,
            task_id=a.task_id,
            peer_id=a.peer_id,
            other_task_id=b.task_id,
            other_peer_id=b.peer_id,
            distance=1e-7 if agree else 0.9,
            tolerance=1e-3,
            agree=agree,
        ),
    )


def checked(**kw: object) -> Checked:
    """A configured job with verify on, v0 stored (as ``configured``)."""
    h = Checked(**kw)  # type: ignore[arg-type]
    h.step()
    h.shard()
    h.record("job", configure(h.job, bucket="b", exchanges={}).event)
    h.version(0)
    return h


def _assigned(events: list[EventData]) -> list[TaskAssigned]:
    return [e for e in events if isinstance(e, TaskAssigned)]


def _pairs(tasks: list[TaskAssigned]) -> list[tuple[TaskAssigned, TaskAssigned]]:
    by_id = {t.task_id: t for t in tasks}
    return [(by_id[t.checks], t) for t in tasks if t.checks is not None]


def _dispute(
    h: Checked,
) -> tuple[list[tuple[TaskAssigned, TaskAssigned]], TaskAssigned, TaskAssigned, TaskAssigned]:
    """The first pair of round 1 disagrees: the pairs, that pair and its tie-break."""
    pairs = _pairs(_assigned(h.settle()))
    primary, check = pairs[0]
    h.accept(primary)
    h.accept(check)
    h.verdict(primary, check, agree=False)
    (tie,) = _assigned(h.settle())
    h.accept(tie)
    return pairs, primary, check, tie


def _agreeing(h: Checked, pairs: list[tuple[TaskAssigned, TaskAssigned]]) -> None:
    """Each pair's updates come in, and agree."""
    for primary, check in pairs:
        h.accept(primary)
        h.accept(check)
        h.verdict(primary, check, agree=True)


def test_resolve_confirms_an_agreeing_pair_and_waits_on_a_dispute() -> None:
    assert resolve(["p", "c"], {frozenset("pc"): True}) is not None
    assert resolve(["p", "c"], {frozenset("pc"): True}).confirmed == ("p", "c")  # type: ignore[union-attr]
    assert resolve(["p", "c"], {frozenset("pc"): False}) is None
    assert resolve(["p", "c", "t"], {frozenset("pc"): False, frozenset("pt"): True}) is None


def test_resolve_strikes_the_member_the_other_two_do_not_confirm() -> None:
    base = {frozenset("pc"): False}
    lazy_check = resolve(["p", "c", "t"], {**base, frozenset("pt"): True, frozenset("ct"): False})
    assert lazy_check is not None and lazy_check.struck == ("c",)
    assert lazy_check.confirmed == ("p", "t")
    lazy_primary = resolve(["p", "c", "t"], {**base, frozenset("pt"): False, frozenset("ct"): True})
    assert lazy_primary is not None and lazy_primary.struck == ("p",)
    apart = {**base, frozenset("pt"): False, frozenset("ct"): False}
    assert resolve(["p", "c", "t"], apart) is None  # a lazy checker shields: a fourth peer
    four = {**apart, frozenset("pf"): False, frozenset("cf"): False, frozenset("tf"): True}
    both = resolve(["p", "c", "t", "f"], four)
    assert both is not None and both.struck == ("p", "c") and both.confirmed == ("t", "f")
    nobody = resolve(["p", "c", "t", "f"], {**four, frozenset("tf"): False})
    assert nobody is not None and nobody.struck == () and nobody.confirmed == ()


def test_the_checked_share_follows_the_jobs_secret_key_not_the_seed_peers_are_sent() -> None:
    h = checked()
    assert h.job.configured is not None
    seed = h.job.configured.training.seed
    picks = {
        key: [sampled(key, r, s, 0.5) for r in range(1, 20) for s in range(4)]
        for key in (seed, 11, 12)
    }
    assert picks[11] != picks[12] and picks[11] != picks[seed]
    assert check_key(h.job) == seed  # configured without one, as an old log was
    keyed = h.job.configured.model_copy(update={"check_key": 11})
    h.job.configured = keyed
    assert check_key(h.job) == 11


def test_with_verify_off_nothing_is_checked() -> None:
    h = configured()
    assert all(t.checks is None for t in _assigned(h.settle()))


def test_on_probation_every_task_is_checked_by_another_peer_on_its_shard() -> None:
    h = checked()
    tasks = _assigned(h.settle())
    pairs = _pairs(tasks)
    assert len(pairs) == 4
    for primary, check in pairs:
        assert check.shard == primary.shard and check.peer_id != primary.peer_id
        assert check.round == primary.round and check.update_key != primary.update_key


def test_the_round_waits_for_its_checks_and_sums_only_the_checked_updates() -> None:
    h = checked()
    tasks = _assigned(h.settle())
    pairs = _pairs(tasks)
    for primary, _ in pairs:
        h.accept(primary)
    assert h.settle() == []  # the checks are still open
    for primary, check in pairs:
        h.accept(check)
        h.verdict(primary, check, agree=True)
    (closed,) = h.settle()
    assert isinstance(closed, RoundClosed) and closed.reason == "complete"
    assert {u.task_id for u in closed.included} == {p.task_id for p, _ in pairs}
    assert all(h.job.confirmations[p] == 1 for p in ("p0", "p1", "p2", "p3"))
    assert not h.job.strikes


def test_a_dispute_goes_to_a_third_peer_which_strikes_the_lazy_checker() -> None:
    h = checked()
    _, primary, check, tie = _dispute(h)
    assert tie.checks == primary.task_id and tie.shard == primary.shard
    assert tie.peer_id not in (primary.peer_id, check.peer_id)
    h.verdict(primary, tie, agree=True)
    h.verdict(check, tie, agree=False)
    assert [s.code for s in h.job.strikes[check.peer_id]] == ["check_mismatch"]
    assert primary.peer_id not in h.job.strikes  # the honest primary: never struck
    rnd = h.job.current
    assert rnd is not None and rnd.accepted[primary.shard].task_id == primary.task_id


def test_a_lazy_primarys_update_leaves_the_round_for_the_confirmed_one() -> None:
    h = checked()
    pairs, primary, check, tie = _dispute(h)
    h.verdict(primary, tie, agree=False)
    h.verdict(check, tie, agree=True)
    assert [s.code for s in h.job.strikes[primary.peer_id]] == ["check_mismatch"]
    _agreeing(h, pairs[1:])
    (closed,) = h.settle()
    assert isinstance(closed, RoundClosed)
    shard0 = [u for u in closed.included if u.shard == primary.shard]
    assert [u.task_id for u in shard0] == [check.task_id]  # one update per shard
    assert len(closed.included) == 4


def test_a_struck_peer_is_checked_on_every_task_and_excluded_after_enough_strikes() -> None:
    h = checked(rounds=4)
    lazy = "p0"
    excluded: list[PeerExcluded] = []
    for round_ in (1, 2, 3):
        pairs = _pairs(_assigned(h.settle()))
        if round_ > 1:  # confirmed peers left probation: only the struck one is checked
            assert [p.peer_id for p, _ in pairs] == [lazy]
        for p, c in pairs:
            h.accept(p)
            h.accept(c)
            h.verdict(p, c, agree=lazy not in (p.peer_id, c.peer_id))
        for tie in _assigned(h.settle()):
            (p, c) = next((p, c) for p, c in pairs if p.task_id == tie.checks)
            h.accept(tie)
            h.verdict(p, tie, agree=p.peer_id != lazy)
            h.verdict(c, tie, agree=c.peer_id != lazy)
        events = h.settle()
        excluded += [e for e in events if isinstance(e, PeerExcluded)]
        if excluded:
            break
        assert isinstance(events[0], RoundClosed)
        h.version(round_)
    assert [e.peer_id for e in excluded] == [lazy]
    assert set(h.job.strikes) == {lazy}  # never an honest peer


def test_a_check_is_sent_as_its_checked_task_is_with_the_same_seed_model_and_shard() -> None:
    h = checked()
    for primary, check in _pairs(_assigned(h.settle())):
        a, b = h.job.dispatch(primary.task_id), h.job.dispatch(check.task_id)
        assert a is not None and b is not None
        assert a.seed == b.seed and a.plan == b.plan and a.version == b.version
        assert a.training == b.training


def _to_a_fourth(
    h: Checked,
) -> tuple[
    list[tuple[TaskAssigned, TaskAssigned]], TaskAssigned, TaskAssigned, TaskAssigned, TaskAssigned
]:
    """:func:`_dispute`, and the tie-break agrees with neither: a fourth peer's task,
    accepted. Returns the pairs, the disputed pair, the tie-break and the fourth."""
    pairs, primary, check, tie = _dispute(h)
    h.verdict(primary, tie, agree=False)
    h.verdict(check, tie, agree=False)
    (fourth,) = _assigned(h.settle())
    assert fourth.checks == primary.task_id
    assert fourth.peer_id not in {primary.peer_id, check.peer_id, tie.peer_id}
    h.accept(fourth)
    return pairs, primary, check, tie, fourth


def test_a_lazy_checker_shielding_a_lazy_peer_brings_a_fourth_peer_and_both_are_struck() -> None:
    h = checked()
    _, primary, check, tie, fourth = _to_a_fourth(h)
    h.verdict(primary, fourth, agree=False)
    h.verdict(check, fourth, agree=False)
    h.verdict(tie, fourth, agree=True)
    assert set(h.job.strikes) == {primary.peer_id, check.peer_id}
    assert _assigned(h.settle()) == []  # decided: no fifth
    rnd = h.job.current
    assert rnd is not None and rnd.accepted[primary.shard].task_id == tie.task_id


def test_an_update_that_nobody_confirms_sits_the_round_out_and_nobody_is_struck() -> None:
    h = checked()
    pairs, primary, check, tie, fourth = _to_a_fourth(h)
    for other in (primary, check, tie):  # three lazy peers of four: no two agree
        h.verdict(other, fourth, agree=False)
    _agreeing(h, pairs[1:])
    (closed,) = h.settle()
    assert isinstance(closed, RoundClosed)
    assert primary.shard not in {u.shard for u in closed.included}
    assert len(closed.included) == 3
    assert [u.task_id for u in closed.unconfirmed] == [primary.task_id]  # said, in the log
    assert not h.job.strikes  # nothing tells who was right
    h.version(1)
    h.record("model", ModelEvaluated(job_id="j1", version=1, loss=0.5, accuracy=0.8, samples=9))
    assert [r.peers for r in JobMetrics.of(h.job).rounds] == [3]  # what the version sums


def _check_lost_at_the_deadline(h: Checked) -> tuple[TaskAssigned, RoundClosed]:
    """Every update of the round in, every check agreeing but the first pair's, whose
    check never comes: the round closes at its deadline."""
    pairs = _pairs(_assigned(h.settle()))
    _agreeing(h, pairs[1:])
    primary, _ = pairs[0]
    h.accept(primary)
    assert h.settle() == []  # the round waits for the check
    h.now += timedelta(seconds=61)
    closed = next(e for e in h.settle() if isinstance(e, RoundClosed))
    return primary, closed


def test_a_checked_update_whose_check_never_came_sits_the_round_out() -> None:
    primary, closed = _check_lost_at_the_deadline(checked(deadline_s=60))
    assert closed.reason == "deadline"
    assert primary.task_id not in {u.task_id for u in closed.included}
    assert len(closed.included) == 3


def test_a_peer_that_held_a_check_until_its_deadline_checks_others_last() -> None:
    h = checked(deadline_s=60, rounds=3)
    primary, _ = _check_lost_at_the_deadline(h)
    (check,) = [t for t in h.job.rounds[(1, 1)].tasks.values() if t.checks == primary.task_id]
    assert h.job.missed_checks == {check.peer_id: 1}
    others = set(h.online) - {primary.peer_id, check.peer_id}
    assert pick_peer(h.job, {}, h.online, besides={primary.peer_id}) in others
    assert pick_peer(h.job, {}, {check.peer_id}, besides={primary.peer_id}) == check.peer_id


def test_an_unconfirmed_update_goes_in_when_the_round_needs_it_for_min_peers() -> None:
    primary, closed = _check_lost_at_the_deadline(checked(deadline_s=60, min_peers=4))
    assert primary.task_id in {u.task_id for u in closed.included}
    assert len(closed.included) == 4 and closed.unconfirmed == ()


def test_a_round_does_not_close_between_a_checks_update_and_its_verdict() -> None:
    h = checked()
    pairs = _pairs(_assigned(h.settle()))
    for p, _ in pairs:
        h.accept(p)
    for p, c in pairs[1:]:
        h.accept(c)
        h.verdict(p, c, agree=True)
    primary, check = pairs[0]
    h.accept(check)  # its verdict is folded next (the same append, on the platform)
    assert h.settle() == []
    h.verdict(primary, check, agree=False)
    (tie,) = _assigned(h.settle())
    assert tie.checks == primary.task_id


def test_a_spare_taking_over_a_lost_shard_is_checked_and_a_lost_check_moves_nowhere() -> None:
    h = checked()
    pairs = _pairs(_assigned(h.settle()))
    primary = next(p for p, _ in pairs if p.peer_id == "p0")
    h.online.discard("p0")  # its tasks are lost: its own shard's and the check it had
    events = h.settle()
    again = [t for t in _assigned(events) if t.reassigned_from == primary.task_id]
    assert len(again) == 1 and again[0].peer_id != "p0"
    (recheck,) = [t for t in _assigned(events) if t.checks == again[0].task_id]
    assert recheck.peer_id not in ("p0", again[0].peer_id) and recheck.shard == primary.shard
    lost_checks = [c for _, c in pairs if c.peer_id == "p0"]
    assert lost_checks and not [
        t for t in _assigned(events) if t.reassigned_from in {c.task_id for c in lost_checks}
    ]
