"""The Dask backend's registration: lazy, by name, in customop.dispatcher; ops travel by name."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest

import customop
from customop.dask._install import BACKEND, KEY
from customop.dask._ref import OpRef
from customop.dispatch import Dispatcher, DispatchKey
from customop.tensor import adapter_for
from tests.dask import cluster_ops

da = pytest.importorskip("dask.array")


def test_import_customop_imports_no_dask() -> None:
    code = (
        "import customop, sys; "
        "print(sorted(m for m in ('dask', 'distributed') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_default_dispatcher_has_the_backend() -> None:
    assert customop.dispatcher.key_name(KEY) == BACKEND
    assert customop.dispatcher.parse_key("dask") is DispatchKey.PrivateUse3
    keys = cluster_ops.scale.op.handle.dispatch_keyset(da.ones(2), 1.0)
    assert keys.highest() is DispatchKey.PrivateUse3
    table = customop.dispatcher.dump_table("dkcluster::scale")
    line = "dask:                dask_fallback at <customop default> (customop.dask)"
    assert f"{line} [backend fallback]" in table


def test_install_is_undone_by_its_handle(dispatcher: Dispatcher) -> None:
    with pytest.raises(customop.DispatchKeyError, match="backend name 'dask' is already"):
        customop.dask.install(dispatcher)  # already installed by the fixture: nothing changes
    assert dispatcher.key_name(KEY) == BACKEND


def test_remove_restores_the_key() -> None:
    fresh = Dispatcher()
    handle = customop.dask.install(fresh)
    assert fresh.key_name(KEY) == BACKEND
    assert adapter_for(da.ones(2), dispatcher=fresh) is not None
    handle.remove()
    assert fresh.key_name(KEY) == "PrivateUse3"
    assert adapter_for(da.ones(2), dispatcher=fresh) is None


def test_ops_pickle_by_name_and_resolve_in_this_process() -> None:
    ref = pickle.loads(pickle.dumps(OpRef.of(cluster_ops.scale.op.handle)))
    assert (ref.name, ref.module) == ("dkcluster::scale", "tests.dask.cluster_ops")
    np.testing.assert_allclose(ref(np.ones(2), 3.0), np.full(2, 3.0))


def test_missing_op_names_op_and_module() -> None:
    ref = OpRef(None, "dkmissing::op", "customop_no_such_module", "")
    with pytest.raises(customop.UnknownOperatorError) as caught:
        ref(np.ones(2))
    message = str(caught.value)
    assert message.startswith("customop.dask: op 'dkmissing::op' is not defined on this worker")
    assert "Importing it failed: ModuleNotFoundError" in message
    assert "module 'customop_no_such_module'" in message
