"""Project names as people read them: one name per look.

`clean_name` is what is stored and shown: NFKC (full-width letters, ligatures and compatibility
forms become their plain letters), invisible format characters dropped, spaces collapsed and
trimmed. `name_key` is what two names must not share: the clean name case-folded, every dash-like
character read as "-", and each Cyrillic or Greek letter
that looks like a Latin letter or digit replaced by it (a skeleton in the manner of Unicode TS 39).
`Team-B-Private`, `team-b-private ` and `team-b-privatе` (Cyrillic е) all have the key of
`team-b-private`, so a second of them is refused (Project.name_key is unique).

The look-alike table is the Cyrillic and Greek entries of Unicode's confusables.txt whose prototype
is one ASCII letter or digit (as shipped in confusable-homoglyphs 3.3.1's confusables.json), folded
to lower case, plus the two ASCII pairs that table maps (0 -> o, 1 -> l). Written out rather than a
dependency: 70-odd characters, reviewed here, and a key that never changes under an upgrade (a
changed key would let stored names collide).
"""

from __future__ import annotations

import re
import unicodedata

# Lower-case Cyrillic and Greek look-alikes -> the Latin letter or digit they pass for.
LOOK_ALIKES = str.maketrans({
    # Greek
    "α": "a", "β": "b", "γ": "y", "ε": "e", "ζ": "z", "η": "h", "ι": "i", "κ": "k", "μ": "m", "ν": "v",
    "ο": "o", "ρ": "p", "σ": "o", "τ": "t", "υ": "u", "χ": "x", "ϝ": "f", "ϱ": "p", "ϲ": "c", "ϳ": "j",
    "ϻ": "m", "ͺ": "i", "ᴦ": "r",
    # Cyrillic
    "а": "a", "б": "6", "в": "b", "г": "r", "е": "e", "з": "3", "к": "k", "м": "m", "н": "h", "о": "o",
    "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ь": "b", "ѕ": "s", "і": "i", "ј": "j", "ѡ": "w",
    "ѵ": "v", "ү": "y", "һ": "h", "ҽ": "e", "ӏ": "l", "ӡ": "3", "ԁ": "d", "ԍ": "g", "ԛ": "q", "ԝ": "w",
    "ꙅ": "2", "ꙇ": "i",
    # ASCII digits confusables.txt reads as letters
    "0": "o", "1": "l",
})
SPACES = re.compile(r"\s+")


def clean_name(name: str) -> str:
    """The name as stored and shown: NFKC, invisible format characters (zero-width space and
    joiners, soft hyphen, bidi controls) dropped, runs of white space as one space, trimmed."""
    text = "".join(ch for ch in unicodedata.normalize("NFKC", name) if unicodedata.category(ch) != "Cf")
    return SPACES.sub(" ", text).strip()


def name_key(name: str) -> str:
    """What two project names must not share (see the module docstring)."""
    folded = unicodedata.normalize("NFKC", clean_name(name).casefold())
    dashed = "".join("-" if unicodedata.category(ch) == "Pd" else ch for ch in folded)
    return dashed.translate(LOOK_ALIKES)
