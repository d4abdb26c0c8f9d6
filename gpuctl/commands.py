"""gpuctl commands made from options classes (gpuhealth/flags.py): the flags a service declares once."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Mapping
from typing import Annotated, Any, TypeVar

import typer

from gpuhealth.flags import Option, options

R = TypeVar("R")


def typer_parameter(o: Option) -> inspect.Parameter:
    f = o.flag
    kw: dict[str, Any] = {"envvar": f.envvar, "help": f.help, "hidden": f.hidden, **f.gpuctl}
    if f.metavar:  # else typer's own (<path>, <str>)
        kw["metavar"] = f.metavar
    info = typer.Option(f.names[0], *f.names[1:], **kw)  # in Annotated, typer reads the first as a name
    default = inspect.Parameter.empty if f.required else o.default
    return inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[o.type, info],
                             default=default)  # fmt: skip


def typer_option(cls: type, name: str) -> Any:
    """The typer.Option of one field of an options class, for a command whose other flags are typer's own:
    ``Annotated[T, typer_option(Class, "field")]`` says the flag's names, help and environment once."""
    (o,) = [o for o in options(cls) if o.name == name]
    return typer_parameter(o).annotation.__metadata__[0]


def taking(*classes: type, skip: Mapping[type, Collection[str]] | None = None,
           ) -> Callable[[Callable[..., R]], Callable[..., R]]:  # fmt: skip
    """A command whose flags are the fields of ``classes`` (but a class's ``skip``, left at their defaults); its
    body is called with one instance of each class."""
    taken = [(cls, [o for o in options(cls) if o.name not in (skip or {}).get(cls, ())]) for cls in classes]
    names = [o.name for _, fields in taken for o in fields]
    if len(set(names)) != len(names):
        raise TypeError(f"a flag declared twice among {classes}: {sorted(n for n in names if names.count(n) > 1)}")

    def wrap(body: Callable[..., R]) -> Callable[..., R]:
        def command(**given: Any) -> R:
            return body(*(cls(**{o.name: given[o.name] for o in fields}) for cls, fields in taken))

        params = [typer_parameter(o) for _, fields in taken for o in fields]
        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]  # what typer reads
        command.__annotations__ = {p.name: p.annotation for p in params}
        command.__name__, command.__doc__ = body.__name__, body.__doc__  # typer's command name and help
        return command

    return wrap
