"""The auth service's private state in its own database (and the key directory).

FerretDB (the local MongoDB stand-in) scans a whole collection for every query but an
insert, so each collection here holds only what is live: one document per user, per
login session, per counted attempt of a throttling window, per key, per enrollment and
per peer; expired documents are purged by the housekeeping task.
"""

from .keys import KeyRecord, KeyStore
from .peers import EnrollmentRecord, PeerRecord, PeerStore
from .sessions import SessionStore
from .throttle import ThrottleStore
from .users import UserRecord, UserStore

__all__ = [
    "EnrollmentRecord",
    "KeyRecord",
    "KeyStore",
    "PeerRecord",
    "PeerStore",
    "SessionStore",
    "ThrottleStore",
    "UserRecord",
    "UserStore",
]
