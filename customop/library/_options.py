"""The options of ``@custom_op``, validated by a pydantic model before anything is registered."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from customop.library._spellings import read_mutates_args
from customop.schema import FunctionSchema, MutatesArgs, parse_operator_name

__all__ = ["CustomOpOptions", "check_mutates_against", "make_options"]


class CustomOpOptions(BaseModel):
    """The options of ``@custom_op``, checked before anything is registered."""

    # defer_build: compiled at the first @custom_op, not at `import customop`.
    model_config = ConfigDict(
        frozen=True, extra="forbid", arbitrary_types_allowed=True, defer_build=True
    )

    name: str
    mutates_args: tuple[str, ...] | MutatesArgs
    device_types: tuple[str, ...] | None = None
    schema_text: str | None = None
    tags: tuple[str, ...] = ()

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        parsed = parse_operator_name(name)
        if not parsed.namespace:
            raise ValueError(
                f"name {name!r} must be 'namespace::name' (or 'namespace::name.overload', "
                "as torch's custom_op). The namespace keeps libraries apart. Write e.g. "
                "'mylib::my_op'."
            )
        return name

    @field_validator("mutates_args", mode="before")
    @classmethod
    def _check_mutates(cls, value: object) -> object:
        if isinstance(value, str) and not isinstance(value, MutatesArgs):
            raise ValueError(
                f"mutates_args={value!r} is a string. It names the mutated parameters. "
                "Pass a sequence of names, e.g. [" + repr(value) + "], or MutatesArgs.UNKNOWN."
            )
        return read_mutates_args(value)  # torch code passes {} and sets too

    @field_validator("device_types", mode="before")
    @classmethod
    def _one_device(cls, value: object) -> object:
        return (value,) if isinstance(value, str) else value


def make_options(**values: Any) -> CustomOpOptions:
    """The validated options, or a `ValueError` naming the option and the fix."""
    try:
        return CustomOpOptions(**values)
    except ValidationError as error:
        item = error.errors(include_url=False)[0]
        field = ".".join(str(p) for p in item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        raise ValueError(f"custom_op: option {field!r}: {message}") from None


def check_mutates_against(schema: FunctionSchema, options: CustomOpOptions) -> None:
    """An explicit schema and ``mutates_args`` must say the same (torch checks this too)."""
    if isinstance(options.mutates_args, MutatesArgs):
        return
    written = set(schema.mutated_arguments)
    if written != set(options.mutates_args):
        mutated = "{" + ", ".join(map(repr, sorted(written))) + "}"  # torch's phrase
        raise ValueError(
            f"custom_op: {options.name!r}: mutates_args={sorted(options.mutates_args)!r} but the "
            f"schema writes {sorted(written)!r} (the op mutates {mutated}). The schema's (a!) "
            "annotations are what callers and tracing rely on. Make mutates_args name exactly "
            "the arguments the schema writes."
        )
