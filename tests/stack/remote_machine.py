"""Another machine, as far as the network goes: a Linux network namespace joined to this
one by a veth pair, and a test CA whose certificate names the host end's address.

A process run with :meth:`NetNamespace.wrap` has its own loopback and one link: it
reaches this machine only at :attr:`NetNamespace.host_address`, never at 127.0.0.1.
Needs root (CAP_NET_ADMIN) and ``ip`` (iproute2).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

__all__ = ["NetNamespace", "TlsFiles", "make_tls"]

PREFIX = "ptremote"
"""Every namespace these tests make is ``ptremote<lane offset>-<pid>``."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=check)


@dataclass(frozen=True)
class NetNamespace:
    """A namespace ``name`` whose veth end has ``peer_address``; this machine's end
    (named ``host_link``) has ``host_address``, in a /30 of their own."""

    name: str
    host_link: str
    host_address: str
    peer_address: str

    @classmethod
    def create(cls, offset: int) -> NetNamespace:
        """Make the namespace of this process in lane ``offset`` (10.231.<offset>.0/30),
        after removing those of earlier runs of the lane whose process is gone (a run
        killed before its teardown would otherwise hold the addresses)."""
        lane = f"{PREFIX}{offset}-"
        for line in _ip("netns", "list").stdout.splitlines():
            name = line.split()[0] if line.split() else ""
            pid = name.removeprefix(lane)
            if name.startswith(lane) and pid.isdigit() and not Path(f"/proc/{pid}").exists():
                _ip("netns", "delete", name, check=False)
        net = f"10.231.{offset % 256}"
        ns = cls(f"{lane}{os.getpid()}", f"ptr{offset}h{os.getpid()}"[:15], f"{net}.1", f"{net}.2")
        inner = "eth0"
        _ip("netns", "add", ns.name)
        try:
            _ip(
                "link", "add", ns.host_link, "type", "veth", "peer", "name", inner, "netns", ns.name
            )
            _ip("addr", "add", f"{ns.host_address}/30", "dev", ns.host_link)
            _ip("link", "set", ns.host_link, "up")
            _ip("-n", ns.name, "addr", "add", f"{ns.peer_address}/30", "dev", inner)
            _ip("-n", ns.name, "link", "set", inner, "up")
            _ip("-n", ns.name, "link", "set", "lo", "up")
        except BaseException:
            ns.delete()
            raise
        return ns

    def wrap(self) -> list[str]:
        """The command prefix that runs a program inside the namespace."""
        return ["ip", "netns", "exec", self.name]

    def delete(self) -> None:
        """Remove the namespace; its veth end goes with it, and so the pair."""
        _ip("netns", "delete", self.name, check=False)
        _ip("link", "delete", self.host_link, check=False)


@dataclass(frozen=True)
class TlsFiles:
    """PEM files: the CA peers trust, and the server's certificate and key."""

    ca: Path
    cert: Path
    key: Path


def make_tls(directory: Path, address: str) -> TlsFiles:
    """A throwaway CA and a server certificate for ``address`` (an IP SAN), signed by it."""
    now = datetime.datetime.now(datetime.UTC)

    def build(subject: str, key: ec.EllipticCurvePrivateKey) -> x509.CertificateBuilder:
        return (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
        )

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = "PeerTrain test CA"
    ca = (
        build(ca_name, ca_key)
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ca_name)]))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    san = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(address))])
    cert = (
        build(address, key)
        .issuer_name(ca.subject)
        .add_extension(san, critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    files = TlsFiles(directory / "ca.pem", directory / "server.pem", directory / "server.key")
    pem = serialization.Encoding.PEM
    files.ca.write_bytes(ca.public_bytes(pem))
    files.cert.write_bytes(cert.public_bytes(pem))
    files.key.write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return files
