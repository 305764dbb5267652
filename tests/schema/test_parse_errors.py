"""The catalogue of malformed schemas: each one's exact `SchemaParseError` message.

A message reads ``<api>: <what is wrong> at column N. <why>. <how to fix>``,
then the offending line and a caret under column N. These are the texts users
see, so a change to any of them should be deliberate: update the case here.
"""

from __future__ import annotations

import re

import pytest

from customop.exceptions import SchemaError, SchemaParseError
from customop.schema import parse_operator_name, parse_schema, parse_schema_or_name


def case(case_id: str, text: str, message: str) -> object:
    return pytest.param(text, message, id=case_id)


SCHEMA_CASES = [
    case(
        "missing-arrow",
        "mylib::f(Tensor x) Tensor",
        "parse_schema: missing '->' between the arguments and the return type at column 19. A "
        "schema is 'name(args) -> returns'. Insert '->' before 'Tensor'.\n"
        "    mylib::f(Tensor x) Tensor\n"
        "                       ^",
    ),
    case(
        "missing-arrow-and-returns",
        "mylib::f(Tensor x)",
        "parse_schema: missing '->' and the return type after the argument list at column 18. "
        "Every schema says what the op returns. Add '-> Tensor', or '-> ()' when the op "
        "returns nothing.\n"
        "    mylib::f(Tensor x)\n"
        "                      ^",
    ),
    case(
        "missing-return-type",
        "mylib::f(Tensor x) ->",
        "parse_schema: missing return type after '->' at column 21. Write the return type, "
        "like '-> Tensor', or '-> ()' when the op returns nothing.\n"
        "    mylib::f(Tensor x) ->\n"
        "                         ^",
    ),
    case(
        "arrow-typo",
        "mylib::f(Tensor x) => Tensor",
        "parse_schema: expected '->' after the argument list but found '=>' at column 19. "
        "Write '->' instead of '=>'.\n"
        "    mylib::f(Tensor x) => Tensor\n"
        "                       ^",
    ),
    case(
        "colon-instead-of-arrow",
        "mylib::f(Tensor x): Tensor",
        "parse_schema: expected '->' after the argument list but found ':' at column 18. "
        "Write '->' instead of ':'.\n"
        "    mylib::f(Tensor x): Tensor\n"
        "                      ^",
    ),
    case(
        "double",
        "mylib::f(Tensor x, double alpha) -> Tensor",
        "parse_schema: unknown type specifier 'double' at column 19. In a schema, 'float' is "
        "already "
        "double precision (a C++ double). Use `float`.\n"
        "    mylib::f(Tensor x, double alpha) -> Tensor\n"
        "                       ^",
    ),
    case(
        "int64_t",
        "mylib::f(Tensor x, int64_t n) -> Tensor",
        "parse_schema: unknown type specifier 'int64_t' at column 19. In a schema, 'int' is "
        "already "
        "64-bit (a C++ int64_t). Use `SymInt` or `int` (SymInt for a size that may be symbolic).\n"
        "    mylib::f(Tensor x, int64_t n) -> Tensor\n"
        "                       ^",
    ),
    case(
        "long",
        "mylib::f(long n) -> Tensor",
        "parse_schema: unknown type specifier 'long' at column 9. Schema integers are 'int', "
        "always "
        "64-bit. Write 'int'.\n"
        "    mylib::f(long n) -> Tensor\n"
        "             ^",
    ),
    case(
        "string",
        "mylib::f(Tensor x, string mode) -> Tensor",
        "parse_schema: unknown type specifier 'string' at column 19. Schema strings are 'str'. "
        "Write "
        "'str'.\n"
        "    mylib::f(Tensor x, string mode) -> Tensor\n"
        "                       ^",
    ),
    case(
        "misspelled-type",
        "mylib::f(Tensr x) -> Tensor",
        "parse_schema: unknown type specifier 'Tensr' at column 9. Did you mean 'Tensor'?\n"
        "    mylib::f(Tensr x) -> Tensor\n"
        "             ^",
    ),
    case(
        "misspelled-return-type",
        "mylib::f(Tensor x) -> Tnsor",
        "parse_schema: unknown type specifier 'Tnsor' at column 22. Did you mean 'Tensor'?\n"
        "    mylib::f(Tensor x) -> Tnsor\n"
        "                          ^",
    ),
    case(
        "misspelled-lowercase-type",
        "mylib::f(Tensor x, flaot alpha) -> Tensor",
        "parse_schema: unknown type specifier 'flaot' at column 19. Did you mean 'float'?\n"
        "    mylib::f(Tensor x, flaot alpha) -> Tensor\n"
        "                       ^",
    ),
    case(
        "type-case",
        "mylib::f(tensor x) -> Tensor",
        "parse_schema: unknown type specifier 'tensor' at column 9. Type names are case-sensitive. "
        "Write 'Tensor'.\n"
        "    mylib::f(tensor x) -> Tensor\n"
        "             ^",
    ),
    case(
        "type-case-upper",
        "mylib::f(Tensor x, Int n) -> Tensor",
        "parse_schema: unknown type specifier 'Int' at column 19. Type names are case-sensitive. "
        "Write "
        "'int'.\n"
        "    mylib::f(Tensor x, Int n) -> Tensor\n"
        "                       ^",
    ),
    case(
        "dtype",
        "mylib::f(Tensor x, dtype d) -> Tensor",
        "parse_schema: unknown type specifier 'dtype' at column 19. A dtype is a 'ScalarType' in a "
        "schema. Write 'ScalarType'.\n"
        "    mylib::f(Tensor x, dtype d) -> Tensor\n"
        "                       ^",
    ),
    case(
        "python-list",
        "mylib::f(List[int] sizes) -> Tensor",
        "parse_schema: unknown type specifier 'List' at column 9. A list of T is written 'T[]', "
        "like "
        "'int[]'.\n"
        "    mylib::f(List[int] sizes) -> Tensor\n"
        "             ^",
    ),
    case(
        "python-optional",
        "mylib::f(Optional[Tensor] x) -> Tensor",
        "parse_schema: unknown type specifier 'Optional' at column 9. An optional T is written "
        "'T?', "
        "like 'Tensor?'.\n"
        "    mylib::f(Optional[Tensor] x) -> Tensor\n"
        "             ^",
    ),
    case(
        "module-prefix",
        "mylib::f(torch.Tensor x) -> Tensor",
        "parse_schema: unknown type specifier 'torch.Tensor' at column 9. Schema types have no "
        "module "
        "prefix. Write 'Tensor'.\n"
        "    mylib::f(torch.Tensor x) -> Tensor\n"
        "             ^",
    ),
    case(
        "unknown-type",
        "mylib::f(Foo x) -> Tensor",
        "parse_schema: unknown type specifier 'Foo' at column 9. Schema types are Tensor, int, "
        "SymInt, "
        "float, bool, str, Scalar, ScalarType, Device, ... and T?, T[], (A, B), Dict(K, V); "
        "see docs/schemas.md.\n"
        "    mylib::f(Foo x) -> Tensor\n"
        "             ^",
    ),
    case(
        "list-type-brackets-first",
        "mylib::f([Tensor] xs) -> Tensor",
        "parse_schema: expected a type but found '[' at column 9. A list of T is written "
        "'T[]', like 'int[]'.\n"
        "    mylib::f([Tensor] xs) -> Tensor\n"
        "             ^",
    ),
    case(
        "alias-unclosed",
        "mylib::f(Tensor(a! x) -> Tensor",
        "parse_schema: expected ')' to close the alias annotation but found 'x' at column 19. "
        "Alias annotations look like (a), (a!), (a|b) or (a -> *).\n"
        "    mylib::f(Tensor(a! x) -> Tensor\n"
        "                       ^",
    ),
    case(
        "alias-empty",
        "mylib::f(Tensor() x) -> Tensor",
        "parse_schema: empty alias annotation '()' at column 15. An alias annotation names an "
        "alias set, like Tensor(a) or Tensor(a!). Name the set, or remove the '()'.\n"
        "    mylib::f(Tensor() x) -> Tensor\n"
        "                   ^",
    ),
    case(
        "alias-double-bang",
        "mylib::f(Tensor(a!!) x) -> Tensor(a!)",
        "parse_schema: '!' written twice in an alias annotation at column 18. One '!' marks "
        "the value as written to, like Tensor(a!). Remove the second '!'.\n"
        "    mylib::f(Tensor(a!!) x) -> Tensor(a!)\n"
        "                      ^",
    ),
    case(
        "alias-missing-set",
        "mylib::f(Tensor(a|) x) -> Tensor",
        "parse_schema: expected an alias set name but found ')' at column 18. Alias "
        "annotations look like (a), (a!), (a|b) or (a -> *).\n"
        "    mylib::f(Tensor(a|) x) -> Tensor\n"
        "                      ^",
    ),
    case(
        "star-twice",
        "mylib::f(Tensor x, *, int a, *, int b) -> Tensor",
        "parse_schema: '*' appears twice at column 29. Every argument after the first '*' is "
        "already keyword-only. Remove this '*' (or pass strict=False to read it as torch "
        "does).\n"
        "    mylib::f(Tensor x, *, int a, *, int b) -> Tensor\n"
        "                                 ^",
    ),
    case(
        "varargs-not-last",
        "mylib::f(Tensor x, ..., int y) -> Tensor",
        "parse_schema: an argument follows '...' at column 24. '...' stands for any further "
        "arguments, so it must come last. Move '...' to the end of the argument list.\n"
        "    mylib::f(Tensor x, ..., int y) -> Tensor\n"
        "                            ^",
    ),
    case(
        "varrets-not-last",
        "mylib::f(Tensor x) -> (..., Tensor)",
        "parse_schema: a return follows '...' at column 28. '...' stands for any further "
        "returns, so it must come last. Move '...' to the end of the return list.\n"
        "    mylib::f(Tensor x) -> (..., Tensor)\n"
        "                                ^",
    ),
    case(
        "duplicate-argument",
        "mylib::f(Tensor x, int x) -> Tensor",
        "parse_schema: argument name 'x' appears twice at column 23. Calls bind arguments by "
        "name, so names must be unique. Rename one of them (or pass strict=False to read it "
        "as torch does).\n"
        "    mylib::f(Tensor x, int x) -> Tensor\n"
        "                           ^",
    ),
    case(
        "default-tensor-number",
        "mylib::f(Tensor x=1) -> Tensor",
        "parse_schema: default '1' of argument 'x' does not fit its type 'Tensor' at column "
        "18. 'Tensor' has no literal values; only an optional type can default to None. Drop "
        "the default, or write 'Tensor? x=None'.\n"
        "    mylib::f(Tensor x=1) -> Tensor\n"
        "                      ^",
    ),
    case(
        "default-tensor-none",
        "mylib::f(Tensor x=None) -> Tensor",
        "parse_schema: default 'None' of argument 'x' does not fit its type 'Tensor' at "
        "column 18. Only an optional type can default to None. Write 'Tensor? x=None'.\n"
        "    mylib::f(Tensor x=None) -> Tensor\n"
        "                      ^",
    ),
    case(
        "default-int-float",
        "mylib::f(Tensor x, int n=1.5) -> Tensor",
        "parse_schema: default '1.5' of argument 'n' does not fit its type 'int' at column "
        "25. 'int' values are whole numbers like 0 or -1. Change the default or the type.\n"
        "    mylib::f(Tensor x, int n=1.5) -> Tensor\n"
        "                             ^",
    ),
    case(
        "default-bool-int",
        "mylib::f(Tensor x, bool flag=1) -> Tensor",
        "parse_schema: default '1' of argument 'flag' does not fit its type 'bool' at column "
        "29. 'bool' values are True or False. Change the default or the type.\n"
        "    mylib::f(Tensor x, bool flag=1) -> Tensor\n"
        "                                 ^",
    ),
    case(
        "default-int-list-none",
        "mylib::f(Tensor x, int[] x=None) -> Tensor",
        "parse_schema: default 'None' of argument 'x' does not fit its type 'int[]' at column "
        "27. Only an optional type can default to None. Write 'int[]? x=None'.\n"
        "    mylib::f(Tensor x, int[] x=None) -> Tensor\n"
        "                               ^",
    ),
    case(
        "default-symint-list-none",
        "mylib::f(Tensor x, SymInt[] dims=None) -> Tensor",
        "parse_schema: default 'None' of argument 'dims' does not fit its type 'SymInt[]' at "
        "column 33. Only an optional type can default to None. Write 'SymInt[]? dims=None'.\n"
        "    mylib::f(Tensor x, SymInt[] dims=None) -> Tensor\n"
        "                                     ^",
    ),
    case(
        "default-list-element",
        "mylib::f(Tensor x, int[] dims=[0, 1.5]) -> Tensor",
        "parse_schema: element '1.5' of the default of argument 'dims' does not fit the "
        "element type 'int' at column 34. 'int' values are whole numbers like 0 or -1. Change "
        "the element or the type.\n"
        "    mylib::f(Tensor x, int[] dims=[0, 1.5]) -> Tensor\n"
        "                                      ^",
    ),
    case(
        "default-tensor-list-element",
        "mylib::f(Tensor[] xs=[1]) -> Tensor",
        "parse_schema: element '1' of the default of argument 'xs' does not fit the element "
        "type 'Tensor' at column 22. 'Tensor' has no literal values. Write an empty list [], "
        "or drop the default.\n"
        "    mylib::f(Tensor[] xs=[1]) -> Tensor\n"
        "                          ^",
    ),
    case(
        "default-str-number",
        "mylib::f(Tensor x, str mode=1) -> Tensor",
        "parse_schema: default '1' of argument 'mode' does not fit its type 'str' at column "
        "28. 'str' values are quoted strings like \"mean\". Change the default or the type.\n"
        "    mylib::f(Tensor x, str mode=1) -> Tensor\n"
        "                                ^",
    ),
    case(
        "default-unquoted-string",
        "mylib::f(Tensor x, str mode=mean) -> Tensor",
        "parse_schema: unknown default value 'mean' at column 28. The names a default can be "
        "are True, False, None, dtype names (long, float32, ...), strided, Mean and "
        'contiguous_format. Quote a string, like "mean".\n'
        "    mylib::f(Tensor x, str mode=mean) -> Tensor\n"
        "                                ^",
    ),
    case(
        "default-lowercase-true",
        "mylib::f(Tensor x, bool flag=true) -> Tensor",
        "parse_schema: unknown default value 'true' at column 29. Did you mean 'True'?\n"
        "    mylib::f(Tensor x, bool flag=true) -> Tensor\n"
        "                                 ^",
    ),
    case(
        "default-missing",
        "mylib::f(Tensor x, int n=) -> Tensor",
        "parse_schema: expected a default value (a number, string, True, False, None or "
        "[...]) but found ')' at column 25. Write a default after '=', or drop the '='.\n"
        "    mylib::f(Tensor x, int n=) -> Tensor\n"
        "                             ^",
    ),
    case(
        "default-bad-hex",
        "mylib::f(Tensor x, int n=0x1G) -> Tensor",
        "parse_schema: invalid number '0x1G' at column 25. Numbers are written like 1, -2, "
        "0x1F, 0.5, 1e-05, inf or 2j (no '_').\n"
        "    mylib::f(Tensor x, int n=0x1G) -> Tensor\n"
        "                             ^",
    ),
    case(
        "default-minus-word",
        "mylib::f(Tensor x, int n=-one) -> Tensor",
        "parse_schema: expected a number after '-' but found 'one' at column 26. Only numbers "
        "can be negative, like -1 or -inf.\n"
        "    mylib::f(Tensor x, int n=-one) -> Tensor\n"
        "                              ^",
    ),
    case(
        "string-bad-escape",
        'mylib::f(Tensor x, str s="a\\q") -> Tensor',
        "parse_schema: unknown escape '\\q' in a string default at column 27. Strings know the "
        "C escapes \\n, \\t, \\r, \\\\, \\\", \\' and octal like \\101. "
        "Write \\\\ for a backslash.\n"
        '    mylib::f(Tensor x, str s="a\\q") -> Tensor\n'
        "                               ^",
    ),
    case(
        "string-unclosed",
        'mylib::f(Tensor x, str s="mean) -> Tensor',
        "parse_schema: unclosed string default at column 25. A string ends with the quote it "
        'starts with, on the same line. Add the closing ".\n'
        '    mylib::f(Tensor x, str s="mean) -> Tensor\n'
        "                             ^",
    ),
    case(
        "string-octal-out-of-range",
        'mylib::f(Tensor x, str s="\\777") -> Tensor',
        "parse_schema: octal escape '\\777' in a string default is out of range at column 26. "
        "An octal escape is one byte, \\000 to \\377.\n"
        '    mylib::f(Tensor x, str s="\\777") -> Tensor\n'
        "                              ^",
    ),
    case(
        "string-octal-not-utf8",
        'mylib::f(Tensor x, str s="\\377") -> Tensor',
        "parse_schema: the octal escapes of a string default are not UTF-8 at column 25. "
        "Octal escapes stand for the UTF-8 bytes of a character, like \\303\\251 for 'é'. Write "
        "the character itself, or all of its bytes.\n"
        '    mylib::f(Tensor x, str s="\\377") -> Tensor\n'
        "                             ^",
    ),
    case(
        "arguments-unclosed",
        "mylib::f(Tensor x -> Tensor",
        "parse_schema: missing ')' at the end of the argument list at column 18. Add ')' "
        "before '->'.\n"
        "    mylib::f(Tensor x -> Tensor\n"
        "                      ^",
    ),
    case(
        "arguments-unclosed-at-end",
        "mylib::f(Tensor x, int n",
        "parse_schema: missing ')' at the end of the argument list at column 24. Add ')' at "
        "the end.\n"
        "    mylib::f(Tensor x, int n\n"
        "                            ^",
    ),
    case(
        "arguments-no-comma",
        "mylib::f(Tensor x int n) -> Tensor",
        "parse_schema: expected ',' or ')' after argument 'x' but found 'int' at column 18. "
        "Separate arguments with ',' and close the list with ')'.\n"
        "    mylib::f(Tensor x int n) -> Tensor\n"
        "                      ^",
    ),
    case(
        "arguments-trailing-comma",
        "mylib::f(Tensor x,) -> Tensor",
        "parse_schema: trailing ',' in the argument list at column 17. Remove the ',' before "
        "')'.\n"
        "    mylib::f(Tensor x,) -> Tensor\n"
        "                     ^",
    ),
    case(
        "returns-unclosed",
        "mylib::f(Tensor x) -> (Tensor a, Tensor b",
        "parse_schema: missing ')' at the end of the return list at column 41. Add ')' at the "
        "end.\n"
        "    mylib::f(Tensor x) -> (Tensor a, Tensor b\n"
        "                                             ^",
    ),
    case(
        "returns-extra-paren",
        "mylib::f(Tensor x) -> Tensor)",
        "parse_schema: unexpected ')' after the returns at column 28. It closes nothing. "
        "Remove it.\n"
        "    mylib::f(Tensor x) -> Tensor)\n"
        "                                ^",
    ),
    case(
        "returns-without-parens",
        "mylib::f(Tensor x) -> Tensor, Tensor",
        "parse_schema: unexpected ',' after the return type at column 28. Several returns go "
        "in parentheses, like '-> (Tensor, Tensor)'.\n"
        "    mylib::f(Tensor x) -> Tensor, Tensor\n"
        "                                ^",
    ),
    case(
        "returns-trailing-junk",
        "mylib::f(Tensor x) -> Tensor out extra",
        "parse_schema: unexpected 'extra' after the returns at column 33. A schema ends with "
        "its returns: '-> Type' or '-> Type name'. Remove the extra text.\n"
        "    mylib::f(Tensor x) -> Tensor out extra\n"
        "                                     ^",
    ),
    case(
        "list-type-unclosed",
        "mylib::f(int[ x) -> Tensor",
        "parse_schema: expected a size or ']' in the list type but found 'x' at column 14. "
        "List types are written T[] or T[N] with N >= 0, like int[2].\n"
        "    mylib::f(int[ x) -> Tensor\n"
        "                  ^",
    ),
    case(
        "list-type-negative-size",
        "mylib::f(int[-1] x) -> Tensor",
        "parse_schema: expected a size or ']' in the list type but found '-' at column 13. "
        "List types are written T[] or T[N] with N >= 0, like int[2].\n"
        "    mylib::f(int[-1] x) -> Tensor\n"
        "                 ^",
    ),
    case(
        "tuple-type-unclosed",
        "mylib::f((Tensor, int x) -> Tensor",
        "parse_schema: expected ',' or ')' in the tuple type but found 'x' at column 22. "
        "Write (A, B), like (Tensor, int).\n"
        "    mylib::f((Tensor, int x) -> Tensor\n"
        "                          ^",
    ),
    case(
        "list-default-unclosed",
        "mylib::f(int[] x=[0, 1) -> Tensor",
        "parse_schema: expected ',' or ']' in the list default but found ')' at column 22. "
        "List defaults look like [0, 1].\n"
        "    mylib::f(int[] x=[0, 1) -> Tensor\n"
        "                          ^",
    ),
    case(
        "list-default-empty-element",
        "mylib::f(int[] x=[0,,1]) -> Tensor",
        "parse_schema: expected a list element (a number, string, True, False or None) but "
        "found ',' at column 20. List defaults look like [0, 1].\n"
        "    mylib::f(int[] x=[0,,1]) -> Tensor\n"
        "                        ^",
    ),
    case(
        "overload-default",
        "mylib::f.default(Tensor x) -> Tensor",
        "parse_schema: illegal overload name 'default' at column 9. 'default' names the "
        "overload-less op (ns::name) and cannot be an overload name. Write 'mylib::f' for the "
        "default overload.\n"
        "    mylib::f.default(Tensor x) -> Tensor\n"
        "             ^",
    ),
    case(
        "overload-dunder",
        "mylib::f.__call__(Tensor x) -> Tensor",
        "parse_schema: illegal overload name '__call__' at column 9. Overload names starting "
        "with '__' are reserved for Python attributes. Choose a name that does not start with "
        "'__'.\n"
        "    mylib::f.__call__(Tensor x) -> Tensor\n"
        "             ^",
    ),
    case(
        "overload-missing",
        "mylib::f.(Tensor x) -> Tensor",
        "parse_schema: expected an overload name after 'mylib::f.' but found '(' at column 9. "
        "Write 'ns::name.overload', or drop the '.'.\n"
        "    mylib::f.(Tensor x) -> Tensor\n"
        "             ^",
    ),
    case(
        "name-missing-after-namespace",
        "mylib::(Tensor x) -> Tensor",
        "parse_schema: expected an operator name after 'mylib::' but found '(' at column 7. "
        "Write 'mylib::my_op'.\n"
        "    mylib::(Tensor x) -> Tensor\n"
        "           ^",
    ),
    case(
        "namespace-missing",
        "::f(Tensor x) -> Tensor",
        "parse_schema: missing namespace before '::' at column 0. Operator names look like "
        "'mylib::my_op'.\n"
        "    ::f(Tensor x) -> Tensor\n"
        "    ^",
    ),
    case(
        "name-starts-with-digit",
        "mylib::1op(Tensor x) -> Tensor",
        "parse_schema: expected an operator name after 'mylib::' but found '1op' at column 7. "
        "Names start with a letter or '_'. Write 'mylib::my_op'.\n"
        "    mylib::1op(Tensor x) -> Tensor\n"
        "           ^",
    ),
    case(
        "name-two-overloads",
        "mylib::f.a.b(Tensor x) -> Tensor",
        "parse_schema: expected '(' after the operator name 'mylib::f.a' but found '.' at "
        "column 10. A schema is 'ns::name.overload(args) -> returns'.\n"
        "    mylib::f.a.b(Tensor x) -> Tensor\n"
        "              ^",
    ),
    case(
        "name-two-namespaces",
        "a::b::f(Tensor x) -> Tensor",
        "parse_schema: expected '(' after the operator name 'a::b' but found '::' at column "
        "4. A schema is 'ns::name.overload(args) -> returns'.\n"
        "    a::b::f(Tensor x) -> Tensor\n"
        "        ^",
    ),
    case(
        "empty-text",
        "",
        "parse_schema: empty schema text at column 0. Write a schema like "
        "'mylib::my_op(Tensor x) -> Tensor'.\n"
        "    \n"
        "    ^",
    ),
    case(
        "blank-text",
        "   ",
        "parse_schema: empty schema text at column 3. Write a schema like "
        "'mylib::my_op(Tensor x) -> Tensor'.\n"
        "       \n"
        "       ^",
    ),
    case(
        "argument-name-missing",
        "mylib::f(Tensor) -> Tensor",
        "parse_schema: expected an argument name after 'Tensor' but found ')' at column 15. "
        "Each argument is written 'Type name', like 'Tensor x'.\n"
        "    mylib::f(Tensor) -> Tensor\n"
        "                   ^",
    ),
    case(
        "argument-name-python-style",
        "mylib::f(x: Tensor) -> Tensor",
        "parse_schema: expected an argument name after 'x' but found ':' at column 10. The "
        "type comes first: write 'Tensor x', not 'x: Tensor'.\n"
        "    mylib::f(x: Tensor) -> Tensor\n"
        "              ^",
    ),
    case(
        "argument-name-digit",
        "mylib::f(Tensor 1x) -> Tensor",
        "parse_schema: expected an argument name after 'Tensor' but found '1x' at column 16. "
        "Names start with a letter or '_'. Each argument is written 'Type name', like 'Tensor "
        "x'.\n"
        "    mylib::f(Tensor 1x) -> Tensor\n"
        "                    ^",
    ),
    case(
        "bare-operator-name",
        "mylib::f.out",
        "parse_schema: 'mylib::f.out' is an operator name, not a schema at column 12. A "
        "schema also lists the arguments and returns. Add '(args) -> returns', or call "
        "parse_operator_name for a bare name.\n"
        "    mylib::f.out\n"
        "                ^",
    ),
    case(
        "union-one-member",
        "mylib::f(Union(int) x) -> Tensor",
        "parse_schema: Union(int) has only one member type at column 9. A Union chooses "
        "between two or more types. Write 'int' itself, or add members, like Union(int, str).\n"
        "    mylib::f(Union(int) x) -> Tensor\n"
        "             ^",
    ),
    case(
        "union-without-parens",
        "mylib::f(Union x) -> Tensor",
        "parse_schema: unknown type specifier 'Union' at column 9. A union is written 'Union(A, "
        "B)', "
        "like 'Union(int, str)'.\n"
        "    mylib::f(Union x) -> Tensor\n"
        "             ^",
    ),
    case(
        "dict-one-type",
        "mylib::f(Dict(str) x) -> Tensor",
        "parse_schema: expected ',' and the value type of the Dict but found ')' at column "
        "17. A Dict names its key and value types, like Dict(str, Tensor).\n"
        "    mylib::f(Dict(str) x) -> Tensor\n"
        "                     ^",
    ),
    case(
        "future-without-parens",
        "mylib::f(Future x) -> Tensor",
        "parse_schema: expected '(' after 'Future' but found 'x' at column 16. Write "
        "Future(T), like Future(Tensor).\n"
        "    mylib::f(Future x) -> Tensor\n"
        "                    ^",
    ),
    case(
        "class-without-dot",
        "mylib::f(__torch__ x) -> Tensor",
        "parse_schema: expected '.' in a __torch__ class name but found 'x' at column 19. "
        "Write __torch__.torch.classes.ns.Name.\n"
        "    mylib::f(__torch__ x) -> Tensor\n"
        "                       ^",
    ),
    case(
        "multi-line",
        "mylib::f(Tensor x,\n         double y) -> Tensor",
        "parse_schema: unknown type specifier 'double' at line 2, column 9. In a schema, 'float' "
        "is "
        "already double precision (a C++ double). Use `float`.\n"
        "             double y) -> Tensor\n"
        "             ^",
    ),
    case(
        "comment-hides-rest",
        "mylib::f(Tensor x # the input) -> Tensor",
        "parse_schema: missing ')' at the end of the argument list at column 40. Add ')' at "
        "the end. ('#' starts a comment, which runs to the end of the line.)\n"
        "    mylib::f(Tensor x # the input) -> Tensor\n"
        "                                            ^",
    ),
]

NAME_CASES = [
    case(
        "name-with-schema",
        "mylib::f(Tensor x) -> Tensor",
        "parse_operator_name: expected the end of the operator name but found '(' at column "
        "8. An operator name is 'ns::name' or 'ns::name.overload'; parse a whole schema with "
        "parse_schema.\n"
        "    mylib::f(Tensor x) -> Tensor\n"
        "            ^",
    ),
    case(
        "name-empty",
        "",
        "parse_operator_name: empty operator name at column 0. Write a name like "
        "'mylib::my_op' or 'mylib::my_op.out'.\n"
        "    \n"
        "    ^",
    ),
    case(
        "name-overload-default",
        "mylib::f.default",
        "parse_operator_name: illegal overload name 'default' at column 9. 'default' names "
        "the overload-less op (ns::name) and cannot be an overload name. Write 'mylib::f' for "
        "the default overload.\n"
        "    mylib::f.default\n"
        "             ^",
    ),
    case(
        "name-namespace-missing",
        "::f",
        "parse_operator_name: missing namespace before '::' at column 0. Operator names look "
        "like 'mylib::my_op'.\n"
        "    ::f\n"
        "    ^",
    ),
]


@pytest.mark.parametrize(("text", "message"), SCHEMA_CASES)
def test_parse_schema_message(text: str, message: str) -> None:
    with pytest.raises(SchemaParseError) as excinfo:
        parse_schema(text)
    assert str(excinfo.value) == message


@pytest.mark.parametrize(("text", "message"), NAME_CASES)
def test_parse_operator_name_message(text: str, message: str) -> None:
    with pytest.raises(SchemaParseError) as excinfo:
        parse_operator_name(text)
    assert str(excinfo.value) == message


def test_the_catalogue_is_large() -> None:
    assert len(SCHEMA_CASES) + len(NAME_CASES) >= 45


@pytest.mark.parametrize(("text", "message"), SCHEMA_CASES)
def test_column_and_caret_agree(text: str, message: str) -> None:
    """``.column`` is the offset the message names and the caret points at."""
    with pytest.raises(SchemaParseError) as excinfo:
        parse_schema(text)
    error = excinfo.value
    assert error.text == text
    line_start = text.rfind("\n", 0, error.column) + 1
    found = re.search(r" at (?:line \d+, )?column (\d+)\.", message)
    assert found is not None
    assert int(found.group(1)) == error.column - line_start
    quoted, caret = message.split("\n")[-2:]
    assert caret.index("^") - 4 == error.column - line_start
    assert quoted[4:] == text[line_start:].split("\n", maxsplit=1)[0]


@pytest.mark.parametrize(
    ("text", "token"),
    [
        ("mylib::f(Tensor x, double y) -> Tensor", "double y"),
        ("mylib::f(Tensor x, Tensor x) -> Tensor", "x) ->"),
        ("mylib::f(int[] dims=[0, 1.5]) -> Tensor", "1.5]"),
        ('mylib::f(str s="a\\qb") -> Tensor', "\\qb"),
        ("mylib::f(Tensor x) Tensor", "Tensor"),
        ("mylib::f(Tensor x, *, int a, *, int b) -> Tensor", "*, int b"),
        ("mylib::f(Tensor x,\n  double y) -> Tensor", "double y"),
    ],
)
def test_column_points_at_the_offending_token(text: str, token: str) -> None:
    with pytest.raises(SchemaParseError) as excinfo:
        parse_schema(text)
    assert text[excinfo.value.column :].startswith(token)


def test_parse_error_is_a_schema_error_and_a_value_error() -> None:
    with pytest.raises(SchemaParseError) as excinfo:
        parse_schema("mylib::f(Tensr x) -> Tensor")
    assert isinstance(excinfo.value, SchemaError)
    assert isinstance(excinfo.value, ValueError)
    assert issubclass(SchemaParseError, SchemaError)
    assert issubclass(SchemaError, ValueError)
    with pytest.raises(ValueError, match="Did you mean 'Tensor'"):
        parse_schema_or_name("mylib::f(Tensr x) -> Tensor")


def test_parse_schema_or_name_names_itself() -> None:
    with pytest.raises(SchemaParseError) as excinfo:
        parse_schema_or_name("mylib::f(Tensor x) -> Tnsor")
    assert str(excinfo.value) == (
        "parse_schema_or_name: unknown type specifier 'Tnsor' at column 22. Did you mean "
        "'Tensor'?\n"
        "    mylib::f(Tensor x) -> Tnsor\n"
        "                          ^"
    )


def test_non_text_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"parse_schema: expected schema text \(a str\), got 1\."):
        parse_schema(1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"parse_operator_name: expected a str, got None\."):
        parse_operator_name(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"parse_schema_or_name: expected schema text"):
        parse_schema_or_name(b"mylib::f")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        "mylib::f(Tensor x, int x) -> Tensor",
        "mylib::f(Tensor x, *, int a, *, int b) -> Tensor",
    ],
    ids=["duplicate-argument", "star-twice"],
)
def test_strict_false_reads_what_torch_accepts(text: str) -> None:
    # torch accepts both; customop's model forbids them, so only strict=False reads them.
    with pytest.raises(SchemaParseError):
        parse_schema(text)
    schema = parse_schema(text, strict=False)
    assert str(schema) == text.replace("int a, *, int b", "int a, int b")


# What torch 2.13 accepts in odd spellings, and prints as below; customop agrees exactly.
ACCEPTED_LIKE_TORCH = [
    ("mylib::f(Tensor  x)->Tensor", "mylib::f(Tensor x) -> Tensor"),
    ("mylib :: f . out (Tensor x) -> Tensor", "mylib::f.out(Tensor x) -> Tensor"),
    ("mylib::f(Tensor ?x, Tensor []y) -> Tensor", "mylib::f(Tensor? x, Tensor[] y) -> Tensor"),
    ("mylib::f(Tensor x) -> Tensor # a comment", "mylib::f(Tensor x) -> Tensor"),
    (
        "mylib::f(int x=- 1, int y=01, float z=.5, float w=5.) -> ()",
        "mylib::f(int x=-1, int y=1, float z=0.5, float w=5.) -> ()",
    ),
    ("mylib::f(*) -> ()", "mylib::f() -> ()"),
    ("mylib::f(Tensor x, *) -> Tensor", "mylib::f(Tensor x) -> Tensor"),
    (
        'mylib::f(str s=\'mean\', str t="a\\"b\\n") -> ()',
        'mylib::f(str s="mean", str t="a\\"b\\n") -> ()',
    ),
    (
        "mylib::f(int[2] stride=1, bool[2] mask=True, float[2] scale=1.5) -> ()",
        "mylib::f(int[2] stride=1, bool[2] mask=[True, True], float[2] scale=[1.5, 1.5]) -> ()",
    ),
    ("mylib::f(Tensor x) -> (Tensor y, Tensor y)", "mylib::f(Tensor x) -> (Tensor y, Tensor y)"),
    ("mylib::f(Tensor x) -> Tensor junk", "mylib::f(Tensor x) -> Tensor junk"),
    (
        "mylib::f(ScalarType d=long, MemoryFormat m=contiguous_format, int r=Mean) -> None",
        "mylib::f(ScalarType d=4, MemoryFormat m=0, int r=1) -> NoneType",
    ),
    ("mylib::f(float? x=1, float y=1) -> ()", "mylib::f(float? x=1, float y=1.) -> ()"),
    (
        "mylib::f(t x, tVal y, Dict(str, t) d, Future(t) f, Union(int, str) u) -> t",
        "mylib::f(t x, tVal y, Dict(str, t) d, Future(t) f, Union(int, str) u) -> t",
    ),
]


@pytest.mark.parametrize(("text", "printed"), ACCEPTED_LIKE_TORCH)
def test_odd_spellings_torch_accepts_parse(text: str, printed: str) -> None:
    assert str(parse_schema(text)) == printed


# customop's own extensions, which torch rejects or prints as text it cannot read back.
@pytest.mark.parametrize(
    ("text", "printed"),
    [
        ("mylib::f(float x=inf, float y=-inf, float z=nan) -> ()", None),
        ("mylib::f(Scalar a=0.+2.5j, complex b=-1.-2.j) -> ()", None),
        ('mylib::f(str s="\\101\\303\\251") -> ()', 'mylib::f(str s="A\\303\\251") -> ()'),
        ('mylib::f(str s="é") -> ()', 'mylib::f(str s="\\303\\251") -> ()'),
        ("mylib::f(Tensor[] xs=[]) -> ()", None),
        ("(Tensor x) -> Tensor", None),
        ("mylib::f(Tensor! x, Tensor!? y) -> ()", None),
    ],
)
def test_extensions_round_trip(text: str, printed: str | None) -> None:
    schema = parse_schema(text)
    assert str(schema) == (printed or text)
    assert parse_schema(str(schema)) == schema


def test_octal_escapes_are_utf8_bytes() -> None:
    schema = parse_schema('mylib::f(str s="\\303\\251") -> ()')
    default = schema.arguments[0].default
    assert default is not None
    assert default.value == "é"
