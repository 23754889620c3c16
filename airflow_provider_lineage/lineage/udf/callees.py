"""What the UDF body analysis knows of callees it does not read: hashes, pure builtins and modules, methods of
known effect, introspection and dynamic code, immutable objects."""
from __future__ import annotations

import ast
import builtins
import datetime
import decimal
import enum
import functools
import inspect
import re
import sys
import types
from typing import Any

#: Module names whose callables hash their input (``hashlib.sha256``, ``hmac.new``, ``zlib.crc32``).
HASH_MODULES = frozenset({"_hashlib", "hashlib", "_md5", "_sha1", "_sha2", "_sha256", "_sha512", "_sha3",
                          "_blake2", "hmac"})
#: Checksums in modules that also hold non-hashing functions.
CHECKSUMS = frozenset({("zlib", "crc32"), ("zlib", "adler32"), ("binascii", "crc32"), ("binascii", "crc_hqx")})
#: Builtins that run or look up code by name: a UDF using them on its data is not analysed.
DYNAMIC = frozenset({"eval", "exec", "compile", "getattr", "setattr", "delattr", "globals", "locals", "vars",
                     "__import__"})
#: Builtins that never store one argument into another (no mutation widening for them).
PURE_BUILTINS = frozenset({
    "len", "str", "int", "float", "bool", "abs", "min", "max", "round", "sorted", "list", "tuple", "set",
    "frozenset", "dict", "isinstance", "issubclass", "repr", "format", "ord", "chr", "sum", "any", "all",
    "enumerate", "zip", "range", "map", "filter", "reversed", "divmod", "pow", "hex", "oct", "bin", "bytes",
    "type", "iter", "next", "callable", "id", "hash",
})
#: Builtins that call a function argument with the data (``map(parts.append, xs)``, ``sorted(xs, key=f)``).
CALLING_BUILTINS = frozenset({"map", "filter", "sorted", "min", "max", "iter", "next"})
#: Methods whose effect is known: they store their arguments into the receiver, never the receiver into an
#: argument (any other method not in :data:`NON_MUTATING` may do both: ``df.to_csv(buf)``).
RECEIVER_ONLY = frozenset({
    "append", "extend", "add", "update", "insert", "setdefault", "appendleft", "extendleft", "put", "put_nowait",
    "push", "__setitem__", "write", "writelines", "discard", "remove", "pop", "popleft", "clear", "sort", "reverse",
    "union", "intersection", "difference", "symmetric_difference", "issubset", "issuperset", "copy", "keys",
    "values", "items",
})
#: Modules whose functions keep no state between calls: data handed to them does not come back from a later call.
PURE_MODULES = frozenset({
    "re", "math", "cmath", "json", "datetime", "time", "string", "unicodedata", "decimal", "fractions", "base64",
    "binascii", "urllib", "textwrap", "posixpath", "ntpath", "os", "operator", "itertools", "statistics", "html",
    "uuid", "hashlib", "hmac", "zlib", "calendar", "ipaddress", "numbers", "struct", "copy", "numpy", "pandas",
    "_json", "_datetime", "_decimal", "_operator", "_strptime", "_string", "_sre", "_struct", "_pydecimal",
    "builtins",
})
#: Attributes that reach frames, globals or the namespace of an object: a body using them is not analysed.
INTROSPECTION_ATTRS = frozenset({
    "f_locals", "f_globals", "f_builtins", "f_back", "tb_frame", "gi_frame", "cr_frame", "ag_frame",
    "__globals__", "__closure__", "__dict__", "__builtins__", "_getframe", "currentframe", "_current_frames",
    "getargvalues", "get_referrers", "get_referents",
})
#: Methods of str/bytes/numbers/pandas objects that never store an argument into the receiver; any other
#: method called with data arguments (``out.append(a)``, ``d.update(b)``) may, so the receiver gets them.
NON_MUTATING = frozenset({
    "replace", "split", "rsplit", "strip", "lstrip", "rstrip", "lower", "upper", "title", "capitalize", "casefold",
    "format", "join", "startswith", "endswith", "encode", "decode", "find", "rfind", "index", "count", "zfill",
    "ljust", "rjust", "center", "partition", "rpartition", "removeprefix", "removesuffix", "translate", "get",
    "apply", "map", "astype", "fillna", "where", "mask", "clip", "round", "isin", "between", "combine",
    "mul", "div", "truediv", "floordiv", "mod", "pow", "eq", "ne", "lt", "le", "gt", "ge",
    "cat", "contains", "match", "fullmatch", "search", "subn", "findall", "hexdigest", "digest",
})



@functools.lru_cache(maxsize=1)
def _introspection() -> dict[int, str]:
    """id -> name of the callables that read frames or namespaces (or run code): never analysed through."""
    import gc
    import traceback

    found: dict[int, str] = {}
    for mod, names in ((inspect, ("currentframe", "stack", "trace", "getouterframes", "getinnerframes",
                                  "getargvalues", "getframeinfo", "getmembers", "getmembers_static")),
                       (sys, ("_getframe", "_current_frames", "settrace", "setprofile", "_getframemodulename")),
                       (traceback, ("walk_stack", "extract_stack", "walk_tb", "print_stack", "format_stack")),
                       (gc, ("get_referrers", "get_referents", "get_objects")),
                       (builtins, ("eval", "exec", "compile", "globals", "locals", "vars", "__import__",
                                   "breakpoint"))):
        for n in names:
            obj = getattr(mod, n, None)
            if obj is not None:
                found[id(obj)] = f"{mod.__name__}.{n}" if mod is not builtins else n
    return found


def _forbidden(obj: Any) -> str | None:
    """Why calling/reading ``obj`` makes a body unanalysable, or ``None``."""
    name = _introspection().get(id(obj))
    if name is None:
        return None
    if name in ("eval", "exec", "compile", "globals", "locals", "vars", "__import__", "breakpoint"):
        return f"dynamic code: {name}() in the body"
    return f"frame introspection: {name}() in the body"



def _is_hash(obj: Any) -> bool:
    mod = getattr(obj, "__module__", None) or ""
    name = getattr(obj, "__name__", "") or ""
    # not the builtin ``hash``: ``hash(42) == 42`` (an int, and a tuple of ints, hash to a value that gives them back)
    return mod in HASH_MODULES or (mod, name) in CHECKSUMS


def hash_label(obj: Any) -> str:
    """``sha256`` for ``hashlib.sha256``, ``hmac.new``, ``hashlib.new`` ..."""
    mod = getattr(obj, "__module__", None) or ""
    name = (getattr(obj, "__name__", "") or "hash").removeprefix("openssl_").strip("_")
    if mod in ("hmac",) or name in ("new", "hash_new", "digest"):
        return f"{mod.strip('_')}.{name}" if mod else name
    return name


def _is_pandas_frame_ctor(obj: Any) -> bool:
    return isinstance(obj, type) and obj.__name__ == "DataFrame" and (obj.__module__ or "").startswith("pandas")


def _defaults_ok(fn: Any) -> bool:
    """Defaults are driver-side constants (no column data); a mutable one (``acc=[]``) is state kept between calls,
    which the pass (one frame per call) does not model: such a function is an unknown callee."""
    defaults = [*(getattr(fn, "__defaults__", None) or ()), *(getattr(fn, "__kwdefaults__", None) or {}).values()]
    return all(_immutable(d) for d in defaults)


def _pure_module(obj: Any) -> bool:
    mod = getattr(obj, "__module__", None) or getattr(getattr(obj, "__self__", None), "__module__", None)
    if not isinstance(mod, str):
        return isinstance(obj, types.BuiltinFunctionType) and getattr(obj, "__self__", None) is None
    return mod.split(".")[0] in PURE_MODULES


_IMMUTABLE = (str, bytes, int, float, complex, bool, tuple, frozenset, range, type(None), re.Pattern,
              types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, functools.partial)


def _immutable(obj: Any) -> bool:
    """Objects that cannot hold data a callee stored (modules, functions, constants, compiled patterns)."""
    return isinstance(obj, _IMMUTABLE) or (isinstance(obj, type) and obj.__module__ == "builtins") or isinstance(
        obj, enum.Enum | datetime.date | datetime.time | datetime.timedelta | decimal.Decimal)


def _root_name(e: ast.expr) -> str:
    while isinstance(e, ast.Attribute | ast.Subscript | ast.Starred):
        e = e.value
    return e.id if isinstance(e, ast.Name) else ""


def _inplace(e: ast.Call) -> bool:
    """``inplace=`` anything but a literal false (pandas: the receiver is modified, the call returns ``None``)."""
    for k in e.keywords:
        if k.arg == "inplace":
            return not (isinstance(k.value, ast.Constant) and not k.value.value)
    return False


def _rooted(a: ast.expr) -> bool:
    """An argument expression that names a variable's object (``buf``, ``self.items``, ``d["k"]``)."""
    while isinstance(a, ast.Attribute | ast.Subscript | ast.Starred):
        a = a.value
    return isinstance(a, ast.Name)


