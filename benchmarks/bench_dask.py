"""customop on Dask: graph-building overhead, 1 vs 2 workers, bigger than memory.

    python benchmarks/bench_dask.py            # everything (several minutes, ~4.3 GB array)
    python benchmarks/bench_dask.py --quick    # overhead, and a 64 MB pipeline

Not run in CI. Three measurements, in one run:

1. Graph-building cost per task of a pointwise op called on a dask array,
   against ``dask.array.map_blocks`` of the bare kernel with a hand-written
   ``meta=`` (target, DESIGN §8: at most 1.5x).
2. A four-op pipeline (contracted matmul, pointwise scale, whole-row softmax,
   column-sum reduction) over a float32 array of 4.3 GB, on a LocalCluster of
   1 and then 2 worker processes with a 1 GiB memory limit each (the array
   is over 4x a worker's limit): wall time of each.
3. The same pipeline as a chunked numpy loop: its checksum must match.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from typing import Any

# NOTE: Dask's worker processes run BLAS with one thread (distributed sets
# OMP/MKL/OPENBLAS_NUM_THREADS=1 for them); the numpy loop must too, or its
# matmuls sum in another order and the checksums differ in the last bits.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402 -- after the thread settings, which numpy reads on import

import customop  # noqa: E402 -- see the NOTE above

ROWS_PER_CHUNK = 65_536
COLS = 256  # split in two column chunks, so the matmul contracts over two partials
OUT = 64


@customop.custom_op("benchdask::matmul", mutates_args=())
def matmul(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return x @ w


@matmul.register_fake
def _(x: Any, w: Any) -> Any:
    return customop.empty((x.shape[0], w.shape[1]), dtype=x.dtype)


matmul.register_blockwise("ij,jk->ik")


@customop.custom_op("benchdask::scale", mutates_args=(), tags=("pointwise",))
def scale(x: np.ndarray, alpha: float) -> np.ndarray:
    return x * np.float32(alpha)


@scale.register_fake
def _(x: Any, alpha: float) -> Any:
    return customop.empty_like(x)


@customop.custom_op("benchdask::softmax", mutates_args=())
def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)  # type: ignore[no-any-return]


@softmax.register_fake
def _(x: Any) -> Any:
    return customop.empty_like(x)


softmax.register_blockwise("iJ->iJ")


@customop.custom_op("benchdask::colsum", mutates_args=())
def colsum(x: np.ndarray) -> np.ndarray:
    return x.sum(axis=0, dtype=np.float64)


@colsum.register_fake
def _(x: Any) -> Any:
    return customop.empty((x.shape[1],), dtype=customop.tensor.float64)


colsum.register_blockwise("ij->j")


def weights() -> np.ndarray:
    return np.random.default_rng(7).standard_normal((COLS, OUT)).astype(np.float32) / 16


def block(i: int, j: int) -> np.ndarray:
    """Input block (i, j): deterministic, so the numpy loop sees the same data."""
    rng = np.random.default_rng((i, j))
    return rng.random((ROWS_PER_CHUNK, COLS // 2), dtype=np.float32)


def _block_from_info(block_id: tuple[int, int] = (0, 0)) -> np.ndarray:
    return block(*block_id)


def pipeline(x: Any, w: Any) -> Any:
    return colsum(softmax(scale(matmul(x, w), 0.5)))


def dask_input(row_chunks: int) -> Any:
    import dask.array as da

    return da.map_blocks(
        _block_from_info,
        chunks=((ROWS_PER_CHUNK,) * row_chunks, (COLS // 2,) * 2),
        dtype=np.float32,
        meta=np.empty((0, 0), dtype=np.float32),
    )


def pairwise(parts: list[np.ndarray]) -> np.ndarray:
    """Sum adjacent pairs, level by level: the order customop's combine tree uses."""
    while len(parts) > 1:
        merged = [parts[k] + parts[k + 1] for k in range(0, len(parts) - 1, 2)]
        parts = merged + parts[len(parts) - len(parts) % 2 :]
    return parts[0]


def numpy_loop(row_chunks: int) -> np.ndarray:
    """The pipeline chunk by chunk in plain numpy, partial results merged in the same order."""
    w = weights()
    half = COLS // 2
    sums = []
    for i in range(row_chunks):
        y = pairwise([block(i, j) @ w[j * half : (j + 1) * half] for j in range(2)])
        y = y * np.float32(0.5)
        e = np.exp(y - y.max(axis=-1, keepdims=True))
        sums.append((e / e.sum(axis=-1, keepdims=True)).sum(axis=0, dtype=np.float64))
    return pairwise(sums)


def on_cluster(workers: int, row_chunks: int) -> tuple[np.ndarray, float]:
    import dask.array as da
    from distributed import Client, LocalCluster, progress

    with (
        LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            memory_limit="1GiB",
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",
        ) as cluster,
        Client(cluster) as client,
    ):
        x = dask_input(row_chunks)
        w = da.from_array(weights(), chunks=(COLS // 2, OUT))
        result = pipeline(x, w)
        start = time.perf_counter()
        future = client.compute(result)
        progress(future, notebook=False, interval="5s")
        value = future.result()
        elapsed = time.perf_counter() - start
        print()
    return np.asarray(value), elapsed


def build_overhead(chunks: int, repeat: int = 7) -> tuple[float, float]:
    """Best graph-building time per task (µs): customop op vs hand-written map_blocks."""
    import dask.array as da

    x = da.ones((chunks * 10, 10), chunks=(10, 10), dtype=np.float32)
    meta = np.empty((0, 0), dtype=np.float32)
    bare = scale._fn  # the kernel itself, as a hand-written map_blocks would call it

    def by_hand() -> Any:
        return da.map_blocks(bare, x, 0.5, meta=meta, dtype=np.float32)

    def through_customop() -> Any:
        return scale(x, 0.5)

    timings = {}
    for name, fn in (("customop", through_customop), ("map_blocks", by_hand)):
        fn()  # warm caches (imports, call code)
        best = math.inf
        for _ in range(repeat):
            start = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - start)
        timings[name] = best / x.npartitions * 1e6
    return timings["customop"], timings["map_blocks"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a 64 MB pipeline instead of 4.3 GB")
    options = parser.parse_args()
    print("1. graph building, per task (best of 7)")
    print(f"{'chunks':>8} {'customop µs':>12} {'map_blocks µs':>14} {'ratio':>6}")
    for chunks in (100, 1_000, 10_000):
        ours, theirs = build_overhead(chunks)
        print(f"{chunks:>8} {ours:>12.2f} {theirs:>14.2f} {ours / theirs:>6.2f}")

    row_chunks = 2 if options.quick else 64
    size_gb = row_chunks * ROWS_PER_CHUNK * COLS * 4 / 1e9
    print(f"\n2. pipeline over a {size_gb:.2f} GB float32 array ({row_chunks * 2} chunks)")
    start = time.perf_counter()
    expected = numpy_loop(row_chunks)
    loop_time = time.perf_counter() - start
    print(f"chunked numpy loop: {loop_time:8.1f} s  checksum {expected.sum():.12g}")
    for workers in (1, 2):
        value, elapsed = on_cluster(workers, row_chunks)
        same = np.array_equal(value, expected)
        print(
            f"{workers} worker(s), 1 GiB each: {elapsed:8.1f} s  checksum {value.sum():.12g}"
            f"  {'same (bit for bit)' if same else 'DIFFERENT'}"
        )


if __name__ == "__main__":
    main()
