"""PeerTrain client SDK and CLI.

>>> from peertrain.client import Client
>>> with Client("http://127.0.0.1:8080") as pt:  # doctest: +SKIP
...     pt.login("ada", "a long password")
...     dataset_id = pt.upload_dataset("iris.csv")
...     pt.wait_for_dataset(dataset_id)
"""

from .aio import AsyncClient
from .auth import TokenAuth
from .base import API_ENV, DEFAULT_API, resolve_api_url
from .calls import Call
from .errors import (
    ApiError,
    ApiUnreachable,
    ChecksumMismatch,
    ClientError,
    DatasetRejected,
    NotLoggedIn,
    WaitTimeout,
)
from .jobs import JOB_STATES, TERMINAL_STATES, JobProgress
from .retry import DEFAULT_RETRY, NO_RETRY, RetryPolicy
from .sync import Client
from .tokens import FileTokenStore, MemoryTokenStore, Tokens, TokenStore, default_config_dir

__all__ = [
    "API_ENV",
    "DEFAULT_API",
    "DEFAULT_RETRY",
    "JOB_STATES",
    "NO_RETRY",
    "TERMINAL_STATES",
    "ApiError",
    "ApiUnreachable",
    "AsyncClient",
    "Call",
    "ChecksumMismatch",
    "Client",
    "ClientError",
    "DatasetRejected",
    "FileTokenStore",
    "JobProgress",
    "MemoryTokenStore",
    "NotLoggedIn",
    "RetryPolicy",
    "TokenAuth",
    "TokenStore",
    "Tokens",
    "WaitTimeout",
    "default_config_dir",
    "resolve_api_url",
]
