"""The pydantic model of one YAML entry, as written, with a check per field.

Validators raise `ValueError` with the message the user reads; pydantic
collects one error per field (one per dispatch key, one per tag), so a file's
problems are all found in one pass. What a check needs beyond the entry (the
default namespace, the kernel module, the valid tags) comes in the
validation context, an `EntryContext`.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    ValidationInfo,
    model_validator,
)

from customop.codegen._model import CppKernel, KernelPath, Variant, is_name
from customop.codegen._tables import (
    CUSTOMOP_KEYS,
    TORCH_ONLY_FIELDS,
    TORCH_ONLY_KEYS,
)
from customop.exceptions import SchemaError
from customop.schema import FunctionSchema, clip_repr, parse_schema

__all__ = ["Entry", "EntryContext", "did_you_mean", "split_keys"]

_VARIANTS: tuple[Variant, ...] = ("function", "method")


@dataclass(frozen=True)
class EntryContext:
    """What validating an entry needs from outside it."""

    namespace: str
    kernels: str | None
    tags: frozenset[str]
    tags_source: str


def did_you_mean(word: str, choices: tuple[str, ...] | frozenset[str]) -> str | None:
    """``Did you mean 'x'?`` for the closest choice, or None."""
    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    close = close or [c for c in sorted(choices) if c.lower() == word.lower()]
    return f"Did you mean {clip_repr(close[0])}?" if close else None


def _context(info: ValidationInfo) -> EntryContext:
    context = info.context
    if not isinstance(context, EntryContext):
        raise TypeError("Entry.model_validate needs context=EntryContext(...)")
    return context


def _parse_func(value: Any, info: ValidationInfo) -> Any:
    if not isinstance(value, str):
        raise ValueError(
            f"func is {clip_repr(value)}, not a string. It is the operator's schema. "
            "Write it like 'func: mylib::add(Tensor x, Tensor y) -> Tensor'."
        )
    # A func without 'ns::' takes the default namespace: parse it with the prefix
    # added (one parse, no copy of the schema), but report errors in the text as written.
    has_namespace = "::" in value.split("(", 1)[0]
    try:
        schema = parse_schema(value if has_namespace else f"{_context(info).namespace}::{value}")
    except SchemaError:
        try:
            schema = parse_schema(value)  # parses only when it has no name at all
        except SchemaError as error:
            reason = str(error).splitlines()[0].removeprefix("parse_schema: ")
            raise ValueError(f"func is not a valid schema: {reason}") from None
    if schema.name is None:
        raise ValueError(
            f"func {clip_repr(value)} has no operator name. Each entry declares one named "
            "operator. "
            "Write it as 'name.overload(args) -> returns'."
        )
    return schema


def _split_variants(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    variants = tuple(part.strip() for part in value.split(","))
    for variant in variants:
        if variant not in _VARIANTS:
            raise ValueError(
                f"variant {clip_repr(variant)} is unknown. Only 'function' and 'method' exist in "
                "native_functions.yaml. Write 'variants: function' or 'variants: function, method'."
            )
    return variants


def split_keys(text: str) -> tuple[str, ...]:
    """``"CPU, CUDA"`` -> ``("CPU", "CUDA")``: one kernel, several keys, as in PyTorch."""
    return tuple(key.strip() for key in text.split(","))


def _check_keys(text: str) -> str:
    for key in split_keys(text):
        if key not in CUSTOMOP_KEYS and key not in TORCH_ONLY_KEYS:
            fix = did_you_mean(key, (*CUSTOMOP_KEYS, *TORCH_ONLY_KEYS)) or (
                f"customop's keys are {', '.join(CUSTOMOP_KEYS)}."
            )
            raise ValueError(
                f"dispatch key {clip_repr(key)} is unknown. A kernel under an unknown key would "
                "never "
                f"run. {fix}"
            )
    return text


def _kernel(value: Any, info: ValidationInfo) -> Any:
    if not isinstance(value, str):
        raise ValueError(
            f"kernel {clip_repr(value)} is not a string. The registration module imports each "
            "kernel "
            "by its path. Write 'CPU: pkg.module:function'."
        )
    if value.startswith(CppKernel.prefix):
        return CppKernel.parse(value)
    return KernelPath.parse(value, _context(info).kernels)


def _tag_list(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


def _known_tag(tag: str, info: ValidationInfo) -> str:
    context = _context(info)
    if tag not in context.tags:
        fix = did_you_mean(tag, context.tags) or "Add it to the tags file, or remove it."
        raise ValueError(
            f"tag {clip_repr(tag)} is unknown. Tags are checked against {context.tags_source} "
            "so that "
            f"a misspelt tag is caught. {fix}"
        )
    return tag


def _identifier(value: str | None) -> str | None:
    if value is not None and not is_name(value):
        raise ValueError(
            f"python_module {clip_repr(value)} is not an identifier. It names a Python submodule, "
            "like torch.nn. Write 'python_module: nn'."
        )
    return value


KeyGroup = Annotated[str, AfterValidator(_check_keys)]
Kernel = Annotated[KernelPath | CppKernel | None, BeforeValidator(_kernel)]


class Entry(BaseModel):
    """One entry as written: the used fields checked, PyTorch-only fields dropped.

    Any field that is neither used nor PyTorch-only is an error (``extra="forbid"``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    func: Annotated[FunctionSchema, BeforeValidator(_parse_func)]
    variants: Annotated[tuple[Variant, ...], BeforeValidator(_split_variants)] = ("function",)
    dispatch: dict[KeyGroup, Kernel] = {}
    tags: Annotated[
        tuple[Annotated[str, AfterValidator(_known_tag)], ...], BeforeValidator(_tag_list)
    ] = ()
    python_module: Annotated[str | None, AfterValidator(_identifier)] = None

    @model_validator(mode="before")
    @classmethod
    def _drop_torch_only(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data  # pydantic reports that the entry is not a mapping
        return {key: value for key, value in data.items() if key not in TORCH_ONLY_FIELDS}
