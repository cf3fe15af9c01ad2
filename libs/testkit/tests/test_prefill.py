"""The pre-filled log's documents are real events: they read back as what they claim."""

from __future__ import annotations

from peertrain.common.events import from_document, to_document
from peertrain.common.events.diagnostics import DiagnosticPinged
from peertrain.testkit.common.prefill import PER_STREAM, PRODUCER, documents


def test_prefilled_documents_read_back_as_the_events_they_claim_to_be() -> None:
    first, count = 3 * PER_STREAM - 5, 2 * PER_STREAM + 10  # starts mid-stream
    positions = list(range(1000, 1000 + count))
    docs = documents(first, positions)
    assert len(docs) == count
    assert len({d["_id"] for d in docs}) == count
    events = [from_document(d) for d in docs]
    for k, (doc, event) in enumerate(zip(docs, events, strict=True)):
        n = first + k
        stream, seq = divmod(n, PER_STREAM)
        assert to_document(event) == doc  # nothing lost or added by the round trip
        assert isinstance(event.data, DiagnosticPinged)
        assert (event.data.n, event.data.note) == (n, f"prefill {stream}")
        assert (event.stream, event.seq, event.position) == (
            f"bench:prefill-{stream}",
            seq + 1,
            1000 + k,
        )
        assert event.producer == PRODUCER and event.type == "diagnostic.pinged"
        if k and seq:  # within a stream: caused by the one before, one correlation
            assert event.causation_id == events[k - 1].id
            assert event.correlation_id == events[k - 1].correlation_id
        else:  # a batch's or a stream's first event
            assert event.causation_id is None
            if k:
                assert event.correlation_id != events[k - 1].correlation_id


def test_no_positions_no_documents() -> None:
    assert documents(7, []) == []
