"""Hostile archives: every one refused with its reason, before or while extracting."""

from __future__ import annotations

import io
import stat
import zipfile
from collections.abc import Callable

import pytest

from peertrain.dataset.domain import errors
from peertrain.dataset.domain.limits import Limits

CSV = b"a,label\n1,x\n2,y\n3,x\n4,y\n"


def raw_zip(build: Callable[[zipfile.ZipFile], None]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        build(zf)
    return buffer.getvalue()


def entry(name: str, data: bytes = CSV, **attrs: int) -> Callable[[zipfile.ZipFile], None]:
    def build(zf: zipfile.ZipFile) -> None:
        info = zipfile.ZipInfo(name)
        info.compress_type = zipfile.ZIP_DEFLATED
        for key, value in attrs.items():
            setattr(info, key, value)
        zf.writestr(info, data)

    return build


@pytest.mark.parametrize(
    "name", ["../evil.csv", "ok/../../evil.csv", "/etc/evil.csv", "..\\evil.csv", "C:/evil.csv"]
)
def test_path_escapes_are_refused(prepare: Callable, name: str) -> None:
    with pytest.raises(errors.BadArchiveEntry, match="unsafe path"):
        prepare(raw_zip(entry(name)), name="x.zip")


def test_symlinks_are_refused(prepare: Callable) -> None:
    link = entry("link.csv", b"/etc/passwd", external_attr=(stat.S_IFLNK | 0o777) << 16)
    with pytest.raises(errors.BadArchiveEntry, match="symlink"):
        prepare(raw_zip(link))


def set_encrypted_flag(data: bytes) -> bytes:
    """Set bit 0 (encrypted) of the general purpose flags, as an encrypting tool would."""
    out = bytearray(data)
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = out.find(signature)
        out[at + offset] |= 0x1
    return bytes(out)


def test_encrypted_entries_are_refused(prepare: Callable) -> None:
    with pytest.raises(errors.BadArchiveEntry, match="encrypted"):
        prepare(set_encrypted_flag(raw_zip(entry("secret.csv"))))


def test_nested_archives_are_refused(prepare: Callable, zip_of: Callable) -> None:
    inner = zip_of({"a.csv": CSV})
    with pytest.raises(errors.BadArchiveEntry, match="nested"):
        prepare(zip_of({"inner.zip": inner}))
    with pytest.raises(errors.BadArchiveEntry, match="nested"):
        prepare(zip_of({"disguised.csv": inner}))


def test_a_high_ratio_is_a_bomb(prepare: Callable, zip_of: Callable) -> None:
    bomb = zip_of({"zeros.csv": b"a,label\n" + b"0,0\n" * 5_000_000})
    assert len(bomb) < 200_000
    with pytest.raises(errors.ArchiveBomb, match="ratio"):
        prepare(bomb)


def test_lying_headers_do_not_help_a_bomb(prepare: Callable, zip_of: Callable) -> None:
    data = bytearray(zip_of({"zeros.csv": b"a,label\n" + b"0,0\n" * 2_000_000}))
    # Claim a tiny uncompressed size in both headers: the count is of real bytes.
    local = data.find(b"PK\x03\x04")
    data[local + 22 : local + 26] = (100).to_bytes(4, "little")
    central = data.find(b"PK\x01\x02")
    data[central + 24 : central + 28] = (100).to_bytes(4, "little")
    with pytest.raises((errors.ArchiveBomb, errors.BadArchiveEntry)):
        prepare(bytes(data))


def test_total_expansion_over_the_cap_is_a_bomb(prepare: Callable, zip_of: Callable) -> None:
    import numpy as np

    # the cap is charged read by read: a table of any size shows it (1.2 MB, ratio ~2)
    digits = np.random.default_rng(0).integers(0, 10, 300_000).astype(str)
    text = ("a,label\n" + "\n".join(f"{d},{d}" for d in digits) + "\n").encode()
    data = zip_of({"big.csv": text})
    assert len(text) / len(data) < 100
    with pytest.raises(errors.ArchiveBomb, match="more than"):
        prepare(data, limits=Limits(inflate_cap=len(text) // 2))


def test_a_gzip_bomb_is_refused(prepare: Callable, gzip_of: Callable) -> None:
    with pytest.raises(errors.ArchiveBomb):
        prepare(gzip_of(b"a,label\n" + b"0,1\n" * 5_000_000), name="x.csv.gz")


def test_too_many_entries(prepare: Callable, zip_of: Callable) -> None:
    data = zip_of({f"d/{i}.csv": CSV for i in range(30)})
    with pytest.raises(errors.TooManyEntries):
        prepare(data, limits=Limits(max_entries=20))
    assert prepare(data, limits=Limits(max_entries=30)).rows == 120


def test_other_entries_and_empty_archives(prepare: Callable, zip_of: Callable) -> None:
    with pytest.raises(errors.BadArchiveEntry, match="unsupported entry"):
        prepare(zip_of({"a.csv": CSV, "notes.txt": b"hello"}))
    with pytest.raises(errors.EmptyFile):
        prepare(zip_of({"folder/": b"", ".DS_Store": b"x", "__MACOSX/a.csv": CSV}))
    with pytest.raises(errors.NotCsvOrZip):
        prepare(b"PK\x03\x04" + b"garbage" * 10)
