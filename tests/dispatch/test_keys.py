"""DispatchKey order and metadata; DispatchKeySet algebra."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from customop.dispatch import DispatchKey, DispatchKeySet, below
from customop.dispatch._keys import FULL_BITS, RUNTIME_KEYS
from customop.exceptions import DispatchKeyError

K = DispatchKey


def test_keys_are_in_priority_order() -> None:
    assert [key.name for key in DispatchKey] == [
        "CPU", "CUDA", "PrivateUse1", "PrivateUse2", "PrivateUse3", "Meta",
        "Fake",
        "AutogradCPU", "AutogradCUDA", "AutogradPrivateUse1", "AutogradPrivateUse2",
        "AutogradPrivateUse3", "AutogradMeta", "AutogradOther",
        "Tracer", "Batched", "Python",
        "CompositeExplicitAutograd", "CompositeImplicitAutograd", "Autograd",
    ]  # fmt: skip
    assert [key.value for key in DispatchKey] == list(range(len(DispatchKey)))


@pytest.mark.parametrize(
    ("alias", "expansion"),
    [
        pytest.param(
            K.CompositeExplicitAutograd,
            "CPU CUDA PrivateUse1 PrivateUse2 PrivateUse3 Meta",
            id="cea",
        ),
        pytest.param(
            K.CompositeImplicitAutograd,
            "CPU CUDA PrivateUse1 PrivateUse2 PrivateUse3 Meta Fake AutogradCPU AutogradCUDA "
            "AutogradPrivateUse1 AutogradPrivateUse2 AutogradPrivateUse3 AutogradMeta "
            "AutogradOther",
            id="cia",
        ),
        pytest.param(
            K.Autograd,
            "AutogradCPU AutogradCUDA AutogradPrivateUse1 AutogradPrivateUse2 "
            "AutogradPrivateUse3 AutogradMeta AutogradOther",
            id="autograd",
        ),
    ],
)
def test_alias_keys_carry_their_expansion(alias: DispatchKey, expansion: str) -> None:
    assert alias.is_alias
    assert [key.name for key in alias.expansion] == expansion.split()


def test_runtime_key_expands_to_itself() -> None:
    assert K.Tracer.expansion == DispatchKeySet(K.Tracer)
    assert not K.Tracer.is_alias


@pytest.mark.parametrize("backend", [K.CPU, K.CUDA, K.PrivateUse1, K.Meta], ids=lambda k: k.name)
def test_backend_and_autograd_keys_pair_up(backend: DispatchKey) -> None:
    autograd = backend.autograd_key
    assert autograd is not None and autograd.name == f"Autograd{backend.name}"
    assert autograd.is_autograd and backend.is_backend
    assert autograd.backend_keys == DispatchKeySet(backend)


def test_autograd_other_serves_no_backend() -> None:
    assert K.AutogradOther.backend_keys == DispatchKeySet()
    assert K.Fake.autograd_key is None


def test_from_name_suggests_close_names() -> None:
    assert DispatchKey.from_name("Meta") is K.Meta
    with pytest.raises(DispatchKeyError) as caught:
        DispatchKey.from_name("CPUU")
    assert str(caught.value).startswith(
        "DispatchKey.from_name: dispatch key 'CPUU' is unknown. Kernels, fallbacks and key "
        "sets are keyed by dispatch key, so the name must be one the dispatcher knows. "
        "Did you mean 'CPU'? Known keys: CPU, CUDA,"
    )


def test_set_algebra() -> None:
    cpu = DispatchKeySet(K.CPU, K.AutogradCPU)
    cuda = DispatchKeySet(K.CUDA)
    assert (cpu | cuda) == DispatchKeySet(K.CPU, K.CUDA, K.AutogradCPU)
    assert (cpu & K.CPU) == DispatchKeySet(K.CPU)
    assert (cpu - K.AutogradCPU) == DispatchKeySet(K.CPU)
    assert (cpu ^ DispatchKeySet(K.CPU, K.CUDA)) == DispatchKeySet(K.CUDA, K.AutogradCPU)
    assert ~DispatchKeySet.full() == DispatchKeySet()
    assert len(~cpu) == 15
    assert DispatchKeySet(K.CPU) <= cpu and cpu >= DispatchKeySet(K.CPU)
    assert not cpu <= cuda


def test_alias_in_a_set_means_its_expansion() -> None:
    assert DispatchKeySet(K.Autograd) == K.Autograd.expansion
    assert K.Autograd in DispatchKeySet.full()
    assert K.Autograd not in DispatchKeySet(K.AutogradCPU)
    assert "CPU" not in DispatchKeySet(K.CPU)


def test_highest_and_iteration_order() -> None:
    keys = DispatchKeySet(K.Python, K.CPU, K.Fake)
    assert keys.highest() is K.Python
    assert list(keys) == [K.CPU, K.Fake, K.Python]
    assert list(reversed(keys)) == [K.Python, K.Fake, K.CPU]
    assert repr(keys) == "DispatchKeySet(CPU, Fake, Python)"


def test_highest_of_empty_set_raises() -> None:
    with pytest.raises(DispatchKeyError) as caught:
        DispatchKeySet().highest()
    assert str(caught.value) == (
        "DispatchKeySet.highest: the set is empty. Only a non-empty set has a highest key. "
        "Check the set with bool(keyset) first."
    )


def test_below() -> None:
    assert below(K.Meta) == DispatchKeySet(
        K.CPU, K.CUDA, K.PrivateUse1, K.PrivateUse2, K.PrivateUse3
    )
    assert below(K.CPU) == DispatchKeySet()
    keys = DispatchKeySet(K.CPU, K.Fake, K.AutogradCPU)
    assert keys.below(K.AutogradCPU) == DispatchKeySet(K.CPU, K.Fake)


def test_below_refuses_alias_keys() -> None:
    with pytest.raises(DispatchKeyError) as caught:
        below(K.Autograd)
    assert str(caught.value) == (
        "below: DispatchKey.Autograd is not a runtime dispatch key. Only runtime keys have a "
        "place in the priority order. Pass the key your kernel runs on, such as "
        "DispatchKey.AutogradCPU."
    )


@given(bits=st.integers(0, FULL_BITS), key=st.sampled_from(RUNTIME_KEYS))
def test_keyset_below_keeps_the_lower_keys(bits: int, key: DispatchKey) -> None:
    keys = DispatchKeySet.from_bits(bits)
    lower = keys.below(key)
    assert list(lower) == [k for k in keys if k.value < key.value]
    assert lower == keys & below(key)
    assert keys.below(key) is lower  # one object per answer: boxed kernels ask per call


@pytest.mark.parametrize(
    "key",
    [K.Autograd, K.CompositeImplicitAutograd, "AutogradCPU", K.AutogradCPU.value, None, [K.CPU]],
    ids=["alias", "composite-alias", "name", "value", "none", "unhashable"],
)
def test_keyset_below_refuses_what_is_not_a_runtime_key(key: object) -> None:
    keys = DispatchKeySet(K.CPU, K.AutogradCPU)
    for _ in range(2):  # a refusal is not remembered as an answer
        with pytest.raises(DispatchKeyError) as caught:
            keys.below(key)  # type: ignore[arg-type]
        assert str(caught.value) == (
            f"below: {key!r} is not a runtime dispatch key. Only runtime keys have a place in "
            "the priority order. Pass the key your kernel runs on, such as "
            "DispatchKey.AutogradCPU."
        )
        assert caught.value.__context__ is None


def test_sets_are_immutable_hashable_and_picklable() -> None:
    keys = DispatchKeySet(K.CPU)
    with pytest.raises(AttributeError):
        keys._bits = 3
    assert hash(keys) == hash(DispatchKeySet.from_bits(1))
    assert pickle.loads(pickle.dumps(keys)) == keys
    assert keys.bits == 1 and int(bool(keys)) == 1


@pytest.mark.parametrize("bits", [-1, 1 << 17, "3"], ids=["negative", "too-big", "str"])
def test_from_bits_validates(bits: object) -> None:
    with pytest.raises(DispatchKeyError) as caught:
        DispatchKeySet.from_bits(bits)  # type: ignore[arg-type]
    assert str(caught.value) == (
        f"DispatchKeySet.from_bits: {bits!r} is not a key-set bit pattern. Bit i stands for "
        "the runtime key of value i, and there are 17 runtime keys. Pass an int from 0 to 131071."
    )


def test_constructor_refuses_names() -> None:
    with pytest.raises(TypeError) as caught:
        DispatchKeySet("CPU")  # type: ignore[arg-type]
    assert str(caught.value) == (
        "DispatchKeySet: expected DispatchKey members, got 'CPU'. A key set holds dispatch "
        "keys only. Convert a name with DispatchKey.from_name first."
    )
