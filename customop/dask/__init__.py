"""Dask arrays as a customop backend: ops and traced graphs, chunk by chunk, lazily.

Calling any customop op with a ``dask.array.Array`` returns a lazy dask array
with one task per output chunk (see ``docs/dask.md``). This package imports
no dask at import time; ``import customop`` loads it to register the backend
by name, and dask itself loads on the first call with a dask array.
"""

from customop.dask._blockwise import BLOCKWISE
from customop.dask._blockwise import BlockwiseRule
from customop.dask._blockwise import register_blockwise
from customop.dask._install import install
from customop.dask._options import Options
from customop.dask._options import options

__all__ = [
    "BLOCKWISE",
    "BlockwiseRule",
    "Options",
    "install",
    "options",
    "register_blockwise",
]
