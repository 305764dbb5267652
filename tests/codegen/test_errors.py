"""Every problem of a declaration file, with its exact message, file and line."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from customop.codegen import GenOptions, generate, load_declarations
from customop.exceptions import CodegenError
from tests.codegen.test_load import problems

YamlFile = Callable[..., Path]

ADD = "entry 'add(Tensor x) -> Tensor'"
MUL = "entry 'mylib::mul(Tensor x) -> Tensor'"

CASES = [
    (
        "unknown-field",
        """
        - func: add(Tensor x) -> Tensor
          dispach:
            CPU: k:add
        """,
        [
            f"2: {ADD}: unknown field 'dispach'. It is not a native_functions.yaml field, so it "
            "would be lost silently. Did you mean 'dispatch'?"
        ],
    ),
    (
        "unknown-field-no-match",
        "- func: add(Tensor x) -> Tensor\n  frobnicate: 1\n",
        [
            f"2: {ADD}: unknown field 'frobnicate'. It is not a native_functions.yaml field, so "
            "it would be lost silently. Remove it; the fields customop uses are func, variants, "
            "dispatch, tags, python_module."
        ],
    ),
    (
        "bad-schema",
        "- func: add(Tensor x, Tensr y) -> Tensor\n",
        [
            "1: entry 'add(Tensor x, Tensr y) -> Tensor': func is not a valid schema: unknown "
            "type specifier 'Tensr' at column 14. Did you mean 'Tensor'?"
        ],
    ),
    (
        "nameless-schema",
        "- func: (Tensor x) -> Tensor\n",
        [
            "1: entry '(Tensor x) -> Tensor': func '(Tensor x) -> Tensor' has no operator name. "
            "Each entry declares one named operator. Write it as 'name.overload(args) -> returns'."
        ],
    ),
    (
        "bad-key-bad-kernel-bad-tag-bad-variant",
        """
        - func: mylib::mul(Tensor x) -> Tensor
          dispatch:
            CPUU: k:mul
            CUDA: not a path
          tags: [pointwize, core]
          variants: functon
        """,
        [
            f"3: {MUL}: dispatch key 'CPUU' is unknown. A kernel under an unknown key would never "
            "run. Did you mean 'CPU'?",
            f"4: {MUL}: kernel 'not a path' is not a Python path. The registration module "
            "imports each kernel by its path. Write 'pkg.module:function' or "
            "'pkg.module.function'.",
            f"5: {MUL}: tag 'pointwize' is unknown. Tags are checked against the built-in tags "
            "so that a misspelt tag is caught. Did you mean 'pointwise'?",
            f"6: {MUL}: variant 'functon' is unknown. Only 'function' and 'method' exist in "
            "native_functions.yaml. Write 'variants: function' or 'variants: function, method'.",
        ],
    ),
    (
        "key-without-match",
        "- func: add(Tensor x) -> Tensor\n  dispatch:\n    Quux: k:add\n",
        [
            f"3: {ADD}: dispatch key 'Quux' is unknown. A kernel under an unknown key would never "
            "run. customop's keys are CPU, CUDA, PrivateUse1, PrivateUse2, PrivateUse3, Meta, "
            "Fake, AutogradCPU, AutogradCUDA, AutogradPrivateUse1, AutogradPrivateUse2, "
            "AutogradPrivateUse3, AutogradMeta, AutogradOther, Tracer, Batched, Python, "
            "CompositeExplicitAutograd, CompositeImplicitAutograd, Autograd."
        ],
    ),
    (
        "missing-func-and-not-a-mapping-and-func-not-a-string",
        "- variants: function\n- just a string\n- func: 12\n",
        [
            "1: entry #1 (no func): field 'func' is missing. Every entry declares an operator. "
            "Add 'func: mylib::add(Tensor x, Tensor y) -> Tensor'.",
            "2: entry #2 (no func): the entry is the string 'just a string', not a mapping. "
            "Each entry maps field "
            "names to values. Write it as '- func: ...' with further fields indented below.",
            "3: entry #3 (no func): func is 12, not a string. It is the operator's schema. "
            "Write it like 'func: mylib::add(Tensor x, Tensor y) -> Tensor'.",
        ],
    ),
    (
        "wrong-types",
        """
        - func: add(Tensor x) -> Tensor
          python_module: 5
          dispatch:
            CPU: [k, add]
        """,
        [
            f"2: {ADD}: python_module is 5: Input should be a valid string. Write it like "
            "'python_module: nn'.",
            f"4: {ADD}: kernel ['k', 'add'] is not a string. The registration module imports "
            "each kernel by its path. Write 'CPU: pkg.module:function'.",
        ],
    ),
    (
        "duplicate-fields",
        """
        - func: add(Tensor x) -> Tensor
          tags: core
          tags: pointwise
          dispatch:
            CPU: k:a
            CPU: k:b
        """,
        [
            f"3: {ADD}: field 'tags' appears twice (first at line 2). YAML keeps only the last "
            "one, so the first would be lost. Remove one.",
            f"6: {ADD}: dispatch key 'CPU' appears twice (first at line 5). YAML keeps only the "
            "last one, so the first would be lost. Remove one.",
        ],
    ),
    (
        "key-in-two-groups",
        "- func: add(Tensor x) -> Tensor\n  dispatch:\n    CPU: k:a\n    CPU, CUDA: k:b\n",
        [
            f"4: {ADD}: dispatch key 'CPU' has two kernels ('k:a' and 'k:b'). A key runs one "
            "kernel per operator. Remove one."
        ],
    ),
    (
        "duplicate-operator",
        "- func: add(Tensor x) -> Tensor\n- func: aten::add(Tensor y) -> Tensor\n",
        [
            "2: entry 'aten::add(Tensor y) -> Tensor': operator 'aten::add' is declared twice "
            "(first at line 1). A name and overload name one operator. Rename one overload or "
            "drop one entry."
        ],
    ),
    (
        "reserved-and-colliding-names",
        """
        - func: __init__(Tensor x) -> Tensor
        - func: f.from(Tensor x) -> Tensor
        - func: f.from_(Tensor x) -> Tensor
        - func: _int(Tensor x) -> Tensor
        - func: unregister::g(Tensor x) -> Tensor
        """,
        [
            "1: entry '__init__(Tensor x) -> Tensor': operator name '__init__' is an attribute of "
            "every Python object, so ops.aten.__init__ could not reach the operator. Rename it.",
            "3: entry 'f.from_(Tensor x) -> Tensor': 'from_' and 'from' both become the Python "
            "name 'from_' (keywords get a trailing '_'). Rename one of them.",
            "4: entry '_int(Tensor x) -> Tensor': name '_int' is one the typed stub uses for its "
            "own helpers, so the stub could not describe it. Rename it.",
            "5: entry 'unregister::g(Tensor x) -> Tensor': 'unregister' and 'the unregister() "
            "function' both become the Python name 'unregister' (keywords get a trailing '_'). "
            "Rename one of them.",
        ],
    ),
    (
        "not-a-list",
        "func: add(Tensor x) -> Tensor\n",
        [
            "1: file: the file is not a list of entries. A declaration file lists one mapping "
            "per operator. Start each entry with '- func: ...'."
        ],
    ),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_problem_messages(yaml_file: YamlFile, text: str, expected: list[str]) -> None:
    assert problems(yaml_file(text)) == expected


def test_yaml_syntax_error(yaml_file: YamlFile) -> None:
    (line,) = problems(yaml_file("- func: add(Tensor x) -> Tensor\n  dispatch: [CPU\n"))
    # The middle is PyYAML's own words, which differ between its C and Python parsers.
    assert line.startswith("3: the file is not valid YAML: ")
    assert line.endswith(
        "Fix the YAML syntax; each entry is a mapping under '- ', like '- func: ...'."
    )


def test_problems_are_collected_across_the_file_in_line_order(yaml_file: YamlFile) -> None:
    path = yaml_file(
        """
        - func: add(Tensor x) -> Tensor
          dispach: {}
        - func: mul(Tensor x, Tensr y) -> Tensor
        - func: sub(Tensor x) -> Tensor
          tags: [pointwize]
          variants: functon
        """
    )
    assert [line.split(":")[0] for line in problems(path)] == ["2", "3", "5", "6"]


def test_nothing_is_written_when_the_file_has_problems(yaml_file: YamlFile, tmp_path: Path) -> None:
    path = yaml_file("- func: add(Tensor x, Tensr y) -> Tensor\n")
    with pytest.raises(CodegenError):
        generate(path, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"namespace": "my-lib"},
            "GenOptions: namespace: 'my-lib' is not a Python identifier. It becomes a Python "
            "name in the generated code. Use letters, digits and underscores, like 'mylib'.",
        ),
        (
            {"kernels": "pkg..mod"},
            "GenOptions: kernels: 'pkg..mod' is not a module path. The registration module "
            "imports it. Write a dotted module name, like 'mypkg.kernels'.",
        ),
        (
            {"colour": "red"},
            "GenOptions: colour: 'red': Extra inputs are not permitted.",
        ),
    ],
    ids=["namespace", "kernels", "extra"],
)
def test_bad_options(options: dict[str, str], message: str) -> None:
    with pytest.raises(CodegenError) as caught:
        GenOptions(**options)
    assert str(caught.value) == message


def test_module_name_must_be_an_identifier(yaml_file: YamlFile, tmp_path: Path) -> None:
    path = yaml_file("- func: add(Tensor x) -> Tensor\n", name="my-ops.yaml")
    with pytest.raises(CodegenError) as caught:
        generate(path, tmp_path)
    assert str(caught.value) == (
        "customop gen: module name 'my-ops' (from my-ops.yaml) is not a Python identifier. The "
        "generated files are imported by that name. Pass a name, e.g. --name my_ops "
        "(module_name= in GenOptions)."
    )
    assert generate(path, tmp_path, GenOptions(module_name="my_ops")).module.name == "my_ops.py"


def test_not_a_tags_file(yaml_file: YamlFile, tmp_path: Path) -> None:
    tags = yaml_file("pointwise: yes\n", name="tags.yaml")
    with pytest.raises(CodegenError) as caught:
        load_declarations(yaml_file("[]"), GenOptions(tags_file=tags))
    assert str(caught.value) == (
        f"{tags}: not a tags file. Tags are checked against it, so it must list them. Write one "
        "'- tag: name' mapping per tag, as in torch's tags.yaml."
    )


def test_missing_pyyaml_names_the_extra(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['yaml'] = None\n"
        "from customop.codegen import load_declarations\n"
        f"load_declarations({str(tmp_path / 'ops.yaml')!r})\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.stderr.splitlines()[-1] == (
        "ModuleNotFoundError: customop gen: PyYAML is not installed. Reading declaration files "
        "needs it, and it is an optional dependency of customop. Install it: "
        'pip install "customop[codegen]"'
    )
