"""Words: the vocabulary the heuristic reads requests and tool names with."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

READ_VERBS = frozenset(
    {"get", "list", "find", "search", "summarize", "track", "lookup", "show", "count", "check", "view",
     "fetch", "query", "describe", "read", "calculate", "compute", "request"}
)  # fmt: skip
# Verbs a tool that makes a new record tends to start with (its name or its description).
CREATE_VERBS = frozenset(
    {"create", "add", "register", "record", "log", "upload", "issue", "open", "file", "submit", "generate",
     "request", "book", "schedule", "new", "enroll", "make", "place", "raise", "post", "start"}
)  # fmt: skip
DELETE_VERBS = frozenset({"delete", "remove", "drop", "purge", "erase"})
# Words that never name an answer field or qualify a tool.
STOPWORDS = frozenset(
    {"a", "an", "the", "of", "for", "to", "on", "in", "at", "by", "and", "or", "with", "without", "from",
     "is", "are", "was", "were", "be", "been", "it", "its", "their", "they", "them", "this", "that",
     "these", "those", "my", "me", "i", "we", "our", "you", "your", "please", "what", "which", "who",
     "how", "many", "much", "do", "does", "did", "give", "tell", "show", "let", "know", "there", "any",
     "every", "each", "all", "up", "add", "record", "just", "also", "then", "so", "if", "not", "no",
     "can", "could", "would", "should", "will", "want", "need", "into", "about", "as", "have", "has"}
)  # fmt: skip
_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
QUOTED = re.compile(r"\"([^\"]{1,200})\"|“([^”]{1,200})”|(?<![A-Za-z])'([^']{1,200})'(?![A-Za-z])")


def words_of(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def name_words(name: str) -> list[str]:
    """Words of an identifier in snake or camel case ("listWorkOrders" -> list, work, orders)."""
    return words_of(_CAMEL.sub(" ", name).replace("_", " "))


def singular(word: str) -> str:
    """A plural noun's singular, by spelling ("stories", "addresses", "boxes", "purchases")."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes")) and len(word) > 4:
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        return word[:-1]
    return word


def same_stem(a: str, b: str) -> bool:
    """Two inflections of one word ("approve" ~ "approved", "active" ~ "activate"); short words match
    only exactly."""
    if a == b:
        return True
    shared = len(os.path.commonprefix([a, b]))
    return shared >= 4 and shared >= min(len(a), len(b)) - 2


def verb_named(verb: str, request_words: Iterable[str]) -> bool:
    """Whether the request uses the verb in any inflection ("approve" ~ "approved", "approval")."""
    stem = verb if len(verb) <= 4 else verb[: len(verb) - 1]
    return any(w.startswith(stem) for w in request_words)
