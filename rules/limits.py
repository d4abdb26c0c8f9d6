"""Thresholds and windows of the component rules: ``limits.toml`` in the package, and a
site's file on top of it (only keys the defaults have; anything else is an error)."""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec

from gpuhealth.errors import ConfigError


class Window(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    threshold: int
    window_s: int


class PciLimits(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    aer_nonfatal: Window
    aer_correctable: Window


class InfinibandLimits(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    down_s: int
    flaps: int
    flap_window_s: int
    errors: Window

    @property
    def flapping(self) -> Window:
        return Window(threshold=self.flaps, window_s=self.flap_window_s)


class EdacLimits(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    correctable: Window


class KernelLimits(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    hung_task: Window
    soft_lockup: Window
    oom: Window
    nfs: Window


class NvmlLimits(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    ecc_sbe: Window
    slowdown_minutes: int
    slowdown_window_s: int

    @property
    def slowdown(self) -> Window:
        """Minutes with a slowdown in the window (the poller restates an ongoing one once a minute)."""
        return Window(threshold=self.slowdown_minutes, window_s=self.slowdown_window_s)


class IncidentLimits(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    window_s: int
    update_s: float


class Limits(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    incident: IncidentLimits
    pci: PciLimits
    infiniband: InfinibandLimits
    edac: EdacLimits
    kernel: KernelLimits
    nvml: NvmlLimits


def _merge(base: dict[str, Any], over: dict[str, Any], where: str = "") -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if key not in base:
            raise ConfigError(f"rules file: unknown key {where}{key!r} (known: {', '.join(base)})")
        out[key] = _merge(base[key], value, f"{where}{key}.") if isinstance(base[key], dict) else value
    return out


def defaults_toml() -> dict[str, Any]:
    return tomllib.loads(resources.files("rules").joinpath("limits.toml").read_text())


def parse(site: dict[str, Any] | None = None) -> Limits:
    try:
        return msgspec.convert(_merge(defaults_toml(), site or {}), Limits)
    except msgspec.ValidationError as e:
        raise ConfigError(f"rules file: {e}") from None


def _flat(d: dict[str, Any], where: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        out.update(_flat(v, f"{where}{k}.") if isinstance(v, dict) else {f"{where}{k}": v})
    return out


def check(path: Path) -> list[tuple[str, Any, Any]]:
    """Validate a rules file; (key, default, the file's value) for every key it changes."""
    load(path)
    defaults = _flat(defaults_toml())
    site = _flat(tomllib.loads(path.read_text()))
    return [(k, defaults[k], v) for k, v in sorted(site.items()) if defaults[k] != v]


def load(path: Path | None = None) -> Limits:
    if path is None:
        return default()
    try:
        site = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"cannot read rules file {path}: {e}") from None
    return parse(site)


@cache
def default() -> Limits:
    return parse()
