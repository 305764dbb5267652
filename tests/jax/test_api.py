"""customop.jax checks JAX's extension API once, on import, and names what is missing."""

from __future__ import annotations

import jax
import pytest

from customop.jax import _api


def test_an_old_jax_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jax, "__version_info__", (0, 4, 30))
    monkeypatch.setattr(jax, "__version__", "0.4.30")
    with pytest.raises(ImportError) as caught:
        _api._load()
    assert str(caught.value) == (
        "customop.jax: JAX 0.4.30 is older than customop.jax supports. customop.jax defines "
        "its primitive with JAX's extension API (jax.extend.core.Primitive and the "
        "jax.interpreters rule tables), which changes between releases; it needs JAX >= 0.5.0 "
        'and was tested with 0.5.0 and 0.10.2. Install a tested JAX: pip install "jax[cpu]=='
        '0.10.2".'
    )


def test_a_jax_without_a_name_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_api, "_NEEDED", (*_api._NEEDED, ("jax.interpreters.ad", "gone")))
    with pytest.raises(ImportError, match=r"lacks jax\.interpreters\.ad\.gone\. customop\.jax"):
        _api._load()
