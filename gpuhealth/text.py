"""Text for people: a count with its noun, and a message cut to fit without cutting a word in half."""

from __future__ import annotations


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """ "1 state", "3 states" ("1 boot", "2 boots"; irregular nouns give their plural)."""
    return f"{n} {noun if n == 1 else nouns or noun + 's'}"


def clip(text: str, width: int) -> str:
    """``text`` on one line in at most ``width`` characters: cut at the last space that fits, marked with …"""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    space = cut.rfind(" ")
    if space > width // 2:  # a word cut only when one word takes most of the room
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"
