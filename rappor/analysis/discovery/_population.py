"""Long-tailed populations of realistic strings (hostnames, URLs, words) for discovery tests.

Nothing here is real data: the strings are built from syllables, common word stems,
sub-domains, top-level domains and URL paths drawn with a seeded generator, so a run
is reproducible and the package ships no word list.  About 3% of the strings carry a
non-ASCII character (multi-byte UTF-8), so discovery over bytes is exercised too.
"""

from __future__ import annotations


import numpy as np

from ..._util.validation import RngLike, check_int, check_real, check_rng
from ...exceptions import InvalidParameterError
from ...simulation._populations import Population, _check_population_size

__all__ = ["long_population", "realistic_population", "realistic_strings"]

_ONSETS = ("b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "br", "ch",
           "cl", "cr", "dr", "fl", "gr", "pl", "pr", "sh", "sk", "sl", "sp", "st", "tr", "th", "")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ea", "ee", "oo", "ou", "y")
_CODAS = ("", "", "", "n", "r", "s", "t", "l", "m", "x", "ck", "ng", "st")
_STEMS = ("news", "mail", "shop", "book", "cloud", "game", "photo", "music", "video", "travel", "bank",
          "health", "sport", "food", "home", "tech", "data", "map", "search", "social", "learn", "code", "chat",
          "art", "auto", "city", "live", "market", "media", "net", "store", "web", "world", "star", "blue", "green",
          "red", "sun", "moon", "fast", "smart", "open", "free", "best", "my", "the", "go", "get", "hub", "lab")
_SUBDOMAINS = ("www.", "www.", "www.", "mail.", "m.", "api.", "cdn.", "blog.", "shop.", "news.", "docs.", "app.")
_TLDS = (".com", ".com", ".com", ".com", ".org", ".net", ".io", ".de", ".fr", ".co.uk", ".jp", ".info", ".edu")
_PATHS = ("/", "/login", "/search", "/index.html", "/home", "/news", "/about", "/cart", "/help", "/en",
          "/p/", "/watch", "/video", "/user", "/a", "/?q=")
_ACCENTED = ("é", "ü", "ñ", "ö", "ç", "å", "ø", "日本", "ß")


def _syllable(gen: np.random.Generator) -> str:
    return (_ONSETS[gen.integers(len(_ONSETS))] + _VOWELS[gen.integers(len(_VOWELS))]
            + _CODAS[gen.integers(len(_CODAS))])


def _name(gen: np.random.Generator) -> str:
    parts = []
    for _ in range(int(gen.integers(1, 4))):
        parts.append(_STEMS[gen.integers(len(_STEMS))] if gen.random() < 0.4 else _syllable(gen))
    name = "".join(parts)
    if gen.random() < 0.08:
        name += str(int(gen.integers(0, 100)))
    if gen.random() < 0.03:
        i = int(gen.integers(0, len(name) + 1))
        name = name[:i] + _ACCENTED[gen.integers(len(_ACCENTED))] + name[i:]
    return name


def _one(gen: np.random.Generator) -> str:
    kind = gen.random()
    if kind < 0.45:  # hostname
        sub = _SUBDOMAINS[gen.integers(len(_SUBDOMAINS))] if gen.random() < 0.5 else ""
        return sub + _name(gen) + _TLDS[gen.integers(len(_TLDS))]
    if kind < 0.75:  # URL without scheme
        host = _name(gen) + _TLDS[gen.integers(len(_TLDS))]
        path = _PATHS[gen.integers(len(_PATHS))]
        if path.endswith(("/", "=")) and gen.random() < 0.7:
            path += _name(gen)
        return host + path
    return _name(gen)  # word


def realistic_strings(num_unique: int, *, min_length: int = 5, max_length: int = 30, rng: RngLike = None) -> list[str]:
    """``num_unique`` distinct strings of ``min_length`` to ``max_length`` UTF-8 bytes.

    About 45% hostnames (``www.brightnews.com``), 30% URLs without scheme
    (``stoolab.de/search``) and 25% words, built from syllables and common stems.

    Parameters
    ----------
    num_unique : int
    min_length, max_length : int, default=5 and 30
        Bounds on the UTF-8 length in bytes.
    rng : numpy.random.Generator, int or None

    Returns
    -------
    list of str
        In generation order (not sorted by anything).
    """
    n = check_int(num_unique, "num_unique", "realistic_strings", low=1)
    lo = check_int(min_length, "min_length", "realistic_strings", low=1)
    hi = check_int(max_length, "max_length", "realistic_strings", low=lo)
    if hi < 5:
        raise InvalidParameterError("The 'max_length' parameter of realistic_strings must be >= 5.")
    gen = check_rng(rng)
    out: list[str] = []
    seen: set[str] = set()
    attempts = 0
    while len(out) < n:
        attempts += 1
        if attempts > 50 * n + 1000:
            msg = f"realistic_strings: could not draw {n} distinct strings of {lo}-{hi} bytes."
            raise InvalidParameterError(msg)
        s = _one(gen)
        size = len(s.encode("utf-8"))
        if lo <= size <= hi and s not in seen:
            seen.add(s)
            out.append(s)
    return out


def realistic_population(num_unique: int = 20_000, *, exponent: float = 1.1, min_length: int = 5,
                         max_length: int = 30, rng: RngLike = None) -> Population:
    """A Zipf(``exponent``) law over :func:`realistic_strings`, ranks assigned at random.

    The string of rank ``r`` (1-based) has probability proportional to ``r**-exponent``;
    ranks are a random permutation, so popularity does not depend on length or kind.

    Examples
    --------
    >>> pop = realistic_population(1000, rng=0)
    >>> len(pop), round(float(pop.probabilities.max()), 3)
    (1000, 0.179)
    """
    s = check_real(exponent, "exponent", "realistic_population", low=0.0)
    _check_population_size(check_int(num_unique, "num_unique", "realistic_population", low=1))
    gen = check_rng(rng)
    strings = realistic_strings(num_unique, min_length=min_length, max_length=max_length, rng=gen)
    order = gen.permutation(len(strings))
    ranked = [strings[i] for i in order]
    probs = np.arange(1, len(ranked) + 1, dtype=np.float64) ** -s
    return Population(strings=tuple(ranked), probabilities=probs, name=f"realistic zipf(s={s:g})")


#: Share of each length among the values of :func:`long_population`, 6 to 15 bytes: the
#: lengths of English words of six letters or more (most are 6-10), where the 16 prefix
#: slots of a 30-byte layout leave most clients in slots past the values' ends.
LONG_LENGTHS = {6: 0.17, 7: 0.17, 8: 0.15, 9: 0.13, 10: 0.11, 11: 0.09, 12: 0.07, 13: 0.05, 14: 0.035, 15: 0.025}


def long_population(num_unique: int = 20_000, *, exponent: float = 0.6, rng: RngLike = None) -> Population:
    """A Zipf(``exponent``) law over word- and domain-like strings of 6 to 15 bytes, ranks at random.

    Lengths follow :data:`LONG_LENGTHS` (drawn per string, then filled from
    :func:`realistic_strings` of that length), so the frequent values are as long as
    real words and host names, not the 1-4 bytes of the most frequent English words.
    With 20,000 strings and exponent 0.6 the top 10 hold 0.77% to 0.19% each (the
    6+-letter English words hold 0.73% to 0.24%); with 2,000 and 0.85, 6.8% to 0.96%.

    Examples
    --------
    >>> pop = long_population(2000, exponent=0.85, rng=0)
    >>> round(float(pop.probabilities.max()), 3), min(len(s.encode()) for s in pop.strings)
    (0.068, 6)
    """
    s = check_real(exponent, "exponent", "long_population", low=0.0)
    n = check_int(num_unique, "num_unique", "long_population", low=1)
    _check_population_size(n)
    gen = check_rng(rng)
    lengths = np.array(list(LONG_LENGTHS))
    weights = np.array(list(LONG_LENGTHS.values()))
    wanted = np.bincount(gen.choice(lengths, size=n, p=weights / weights.sum()), minlength=lengths.max() + 1)
    pool = realistic_strings(3 * n + 1000, min_length=int(lengths.min()), max_length=int(lengths.max()), rng=gen)
    by_length: dict[int, list[str]] = {}
    for text in pool:
        by_length.setdefault(len(text.encode("utf-8")), []).append(text)
    strings: list[str] = []
    for length in lengths.tolist():
        have = by_length.get(length, [])
        strings += have[:wanted[length]]
    taken = set(strings)
    strings += [t for t in pool if t not in taken][:n - len(strings)]  # a length short of strings
    order = gen.permutation(len(strings))
    ranked = [strings[i] for i in order]
    probs = np.arange(1, len(ranked) + 1, dtype=np.float64) ** -s
    return Population(strings=tuple(ranked), probabilities=probs, name=f"long zipf(s={s:g})")
