"""A service's command-line options, declared once as a dataclass whose fields carry their flag.

Each field says its flag's names, help, default and environment variable (``flag()``). From that one
declaration come the lean agent's argparse parser (here: the agent must not import a CLI framework),
gpuctl's typer commands (gpuctl/commands.py) and the argv one process hands another (``to_argv``), so
the surfaces cannot disagree (tests/unit/test_options.py holds them to it).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Flag:
    names: tuple[str, ...]  # the first is the one written in argv
    help: str
    envvar: str | None = None  # read when the flag is not given, on every surface
    metavar: str | None = None
    required: bool = False  # the field's default stands in only where a caller fills it in (gpuctl up)
    hidden: bool = False  # one process's word to another (--ready-fd), not a user's
    gpuctl: dict[str, Any] = dataclasses.field(default_factory=dict)  # typer's checks (min, max, readable)


def flag(*names: str, help: str, default: Any = None, envvar: str | None = None, metavar: str | None = None,
         required: bool = False, hidden: bool = False, **gpuctl: Any) -> Any:  # fmt: skip
    """A dataclass field that is a command-line flag."""
    return dataclasses.field(
        default=default, metadata={"flag": Flag(names, help, envvar, metavar, required, hidden, gpuctl)}
    )


@dataclasses.dataclass(frozen=True)
class Option:
    """One field of an options class: its name, its resolved type and its flag."""

    name: str
    type: Any
    default: Any
    flag: Flag

    @property
    def repeatable(self) -> bool:
        return typing.get_origin(self.scalar) is list

    @property
    def scalar(self) -> Any:
        """The type without ``| None``."""
        args = [a for a in typing.get_args(self.type) if a is not type(None)]
        is_optional = typing.get_origin(self.type) in (typing.Union, types.UnionType)
        return args[0] if is_optional and len(args) == 1 else self.type


def options(cls: type) -> Iterator[Option]:
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        yield Option(f.name, hints[f.name], f.default, f.metadata["flag"])


def parser(cls: type, prog: str, description: str) -> argparse.ArgumentParser:
    """An argparse parser for ``cls``: what a process that may not import typer parses its argv with."""
    p = argparse.ArgumentParser(prog=prog, description=description)
    for o in options(cls):
        f, kind = o.flag, o.scalar
        env = os.environ.get(f.envvar) if f.envvar else None
        kw: dict[str, Any] = {"dest": o.name, "help": argparse.SUPPRESS if f.hidden else f.help}
        if kind is bool:
            p.add_argument(*f.names, action="store_true", **kw)
            continue
        if o.repeatable:
            kind = typing.get_args(kind)[0]
            kw["action"] = "append"
        if typing.get_origin(kind) is typing.Literal:
            kw["choices"], kind = typing.get_args(kind), str
        # argparse converts a string default with ``type``: an environment variable is parsed as the flag is.
        default = env if env is not None else o.default
        p.add_argument(*f.names, type=kind, default=default, metavar=f.metavar,
                       required=f.required and env is None, **kw)  # fmt: skip
    return p


def parse(cls: type[T], argv: list[str] | None, prog: str, description: str) -> T:
    return cls(**vars(parser(cls, prog, description).parse_args(argv)))


def to_argv(opts: Any) -> list[str]:
    """The flags that give another process ``opts``: every value but None and False, so that what the caller
    decided does not depend on the environment the process finds; paths made absolute."""
    argv: list[str] = []
    for o in options(type(opts)):
        value = getattr(opts, o.name)
        for item in value if isinstance(value, list) else [value]:
            if item is None or item is False:
                continue
            argv.append(o.flag.names[0])
            if item is not True:
                argv.append(str(item.absolute()) if isinstance(item, Path) else str(item))
    return argv
