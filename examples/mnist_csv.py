"""MNIST (the IDX ``.gz`` files) as one ``label,p0..p783`` CSV (gzip), ready to upload.

::

    python examples/mnist_csv.py DATA_DIR/mnist mnist-10k.csv.gz          # the 10k test set
    python examples/mnist_csv.py DATA_DIR/mnist mnist-60k.csv.gz --train  # the 60k train set

Only numpy: this is what a user would run before ``peertrain dataset upload``.
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

import numpy as np


def read_idx(path: Path) -> np.ndarray:
    """One IDX file (gzip): ``uint8`` with the shape its header gives."""
    raw = gzip.decompress(path.read_bytes())
    dims = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(dims))
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def write_csv_gz(mnist_dir: Path, out: Path, *, train: bool = False) -> int:
    """Write ``out``; the number of rows."""
    prefix = "train" if train else "t10k"
    images = read_idx(mnist_dir / f"{prefix}-images-idx3-ubyte.gz")
    labels = read_idx(mnist_dir / f"{prefix}-labels-idx1-ubyte.gz")
    table = np.concatenate([labels[:, None], images.reshape(len(labels), -1)], axis=1)
    header = "label," + ",".join(f"p{i}" for i in range(table.shape[1] - 1))
    tmp = out.with_name(out.name + ".part")
    with gzip.open(tmp, "wt", compresslevel=1, newline="") as f:
        np.savetxt(f, table, fmt="%d", delimiter=",", header=header, comments="")
    tmp.replace(out)  # never a half-written file under the final name
    return len(labels)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mnist_dir", type=Path, help="the folder with the *-idx?-ubyte.gz files")
    parser.add_argument("out", type=Path, help="the .csv.gz to write")
    parser.add_argument("--train", action="store_true", help="the 60k train set")
    args = parser.parse_args(argv)
    rows = write_csv_gz(args.mnist_dir, args.out, train=args.train)
    print(f"{args.out}: {rows} rows", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
