"""UDF bodies of the UDF lineage scenarios (one module: helpers here are "the same module").

Imported by ``udf_app.py`` (run through the launcher) and by ``tests/lineage/udf/test_scenarios.py``
(the soundness property checks call these functions on the input rows).
"""
import functools
import hashlib
import hmac
import math
from typing import Iterator  # noqa: UP035 - pandas_udf reads these hints at run time

import pandas as pd

ROWS = [
    (i, f"user{i}@{'x' if i % 2 else 'y'}.org", ["DE", "FR", "US", "DE"][i % 4], 15 + 3 * i, round(10.5 * i, 1),
     f" Name{i} ", f"a{i}b{i * 7}")
    for i in range(12)
]
SCHEMA = "id long, email string, country string, age int, score double, name string, code string"


# -- plain Python UDFs -------------------------------------------------------------------------
def upper_first(a, b):  # b never read
    return a.upper()


def pick(a, b):  # a returned unchanged
    return a


def band(score, country):  # score only decides the branch
    return "high" if score > 50 else "low"


def mask_email(email, country):  # hashed in one branch, raw in the other; country only in the condition
    if country == "DE":
        return hashlib.sha256(email.encode()).hexdigest()
    return email


def hash_email(email, country):  # always hashed
    return hashlib.sha256(email.encode("utf-8")).hexdigest()


def sign_email(email, age):
    return hmac.new(b"secret", email.encode(), hashlib.sha256).hexdigest()


def _clean(s):
    return s.strip().lower()


def _first(x, y):
    return x


def normalize(name, country):  # through a helper of the same module
    return _clean(name)


def via_helper(a, b):  # a helper that drops its second argument
    return _first(a, b)


def make_prefixer(prefix):
    def fold(s):
        return s.casefold()

    def prefixed(v, w):  # a closure calling a closure
        return prefix + fold(v)

    return prefixed


def scale(factor, x, y):  # used through functools.partial(scale, 10)
    return x * factor


scaled = functools.partial(scale, 10)


def star(*args):  # *args: the first and third argument flow
    return args[0] + args[2]


def with_default(a, b, c=3):  # a default parameter
    return a * c


def inner_mark(email):
    return email.split("@")[0]


def outer_join(local, country):  # nested: outer(inner(email), country)
    return local + "/" + country


def is_adult(age, name):  # in a Filter
    return age >= 18


def double_it(score, age):  # inside sum(...)
    return score * 2.0


def to_struct(a, b, c):  # returns a struct
    return (a, b)


def digits(code, age):  # loop + condition over the characters
    out = ""
    for ch in code:
        if ch.isdigit():
            out += ch
    return out


def collect(a, b):  # mutation of a local list
    parts = []
    parts.append(a)
    return ",".join(parts)


def concat_udf(s):  # called on concat(name, country)
    return s.upper()


lower_lambda = lambda s, t: s.lower()


def dynamic(a, b):  # eval on an argument: not analysed
    return eval(repr(a))


def kwargs_pick(a, b, **extra):
    return b


def price_band(score, note):  # called with Spark's named arguments, in another order
    return "high" if score > 50 else "low"


def hash_update(email, country):  # the hash object form: h.update(x) keeps the masking
    h = hashlib.sha256()
    h.update(email.encode())
    return h.hexdigest()


def to_pair(email, country, name):  # a struct built field by field
    return {"x": email.upper(), "y": country}


# -- never less safe than a black box (issue 46): each of these was once reported "argument unused" -------
_STASH = None


def alias_add(name, email):  # a local alias of a bound method
    parts = [name]
    add = parts.append
    add(email)
    return ",".join(parts)


def _read_stash():
    return _STASH


def stash_then_read(email, country):  # a global written in the UDF and read by a helper
    global _STASH
    _STASH = email
    return _read_stash()


def _fmt(x):
    return x


def _fmt_redacted(x):  # the app rebinds _fmt to this after the UDF was built: the executors keep _fmt
    return "redacted"


def via_fmt(email, country):  # a helper redefined after the UDF was built
    return _fmt(email)


def peek_frame(email, country):  # frame introspection: not analysed
    import inspect

    frame = inspect.currentframe()
    return frame.f_locals["email"]


# -- pandas UDFs (annotations make pandas_udf infer the eval type) ---------------------------------
def pd_twice(a: pd.Series, b: pd.Series) -> pd.Series:
    return a * 2


def pd_iter(it: Iterator[tuple[pd.Series, pd.Series]]) -> Iterator[pd.Series]:
    for a, b in it:
        yield a + 1


def pd_mean(v: pd.Series, w: pd.Series) -> float:
    return v.mean()


def grouped_total(pdf: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"country": pdf["country"], "total": pdf["score"] * 2})


def map_frames(it: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    for pdf in it:
        yield pdf[["id", "email"]]


# -- for the builtin fallback -------------------------------------------------------------------------
floor = math.floor


def pd_fill_inplace(score: pd.Series, age: pd.Series) -> pd.Series:  # in-place mutation (issue 46)
    s = score.where(score > 40)
    s.fillna(age, inplace=True)
    return s
