"""Leases: which instance of a service works on which job.

More than one orchestrator (or aggregator) may run. Every instance hears every event
and keeps its read of every job current, but only one works on a job: the holder of
the job's lease, a document ``{_id: <job id>, holder, until}`` in the service's own
database. The holder renews its leases every tick; a lease not renewed for
``ttl_s`` (its instance died, or lost the store) is taken over by another instance.

Who takes a job: each instance also renews a membership document
(``member:<instance>``), and a job's preferred instance is the rendezvous-hash winner
among the live members (:func:`preferred`). So jobs spread evenly, and only the jobs
of an instance that comes or goes move: a stopped instance's once its leases expire,
and a new instance's share once it has been live for ``ttl_s`` (their holders hand
them over). A lease nobody took within ``ttl_s`` (its preferred instance never heard
of the job) goes to whoever sees it first. A lease left expired for a whole ``ttl_s``
(its holder died, and the job may have ended meanwhile) is deleted by the next
instance that renews.

Taking a lease is atomic on FerretDB, which runs a conditional update as a query then
a write (two instances could both find a lease expired, and both take it): a free
job's lease is taken by inserting its document (unique ``_id``), and an expired one by
first inserting a claim on that very lease (``<job>@<its token>`` in
``<collection>_claims``; each lease document carries a fresh ``token``). Only the
instance that inserted the claim writes the lease; a sweep deletes an expired lease
the same way, so a takeover and a sweep never both act on one lease.

A lease is a promise, not a fence. An instance that stalls past its lease (a long
pause, a partition) may still try one append after another has taken over: the job
stream's optimistic concurrency refuses it (the expected version has moved), so two
holders can waste work but never fork a job. ``until`` is written by the holder's clock
and read by the others', so the instances' clocks must agree to well within ``ttl_s``
(NTP does); the holder itself stops counting on a lease ``ttl_s / 5`` early, by its
monotonic clock.

The parts: the book (:mod:`.book`: what this instance holds, until when, and what it
takes, renews, hands over and sweeps; pure, every call given the time), the store
(:mod:`.store`, the port; :mod:`.mongo` in the service's database, :mod:`.memory` for
unit tests), the clock (:mod:`peertrain.common.clock`), and :class:`Leases`, which reads
the clock, asks the book and writes to the store (:mod:`.holding`, beside the simulation's
:class:`SoleInstance`).
"""

from .book import MEMBER, Lease, LeaseBook, preferred
from .holding import Holding, Leases, SoleInstance, leases_for, pass_on_to_holder
from .memory import MemoryLeaseStore
from .mongo import MongoLeaseStore
from .settings import LeaseSettings, new_instance_name
from .store import LeaseStore

__all__ = [
    "MEMBER",
    "Holding",
    "Lease",
    "LeaseBook",
    "LeaseSettings",
    "LeaseStore",
    "Leases",
    "MemoryLeaseStore",
    "MongoLeaseStore",
    "SoleInstance",
    "leases_for",
    "new_instance_name",
    "pass_on_to_holder",
    "preferred",
]
