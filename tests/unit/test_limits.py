"""Rules files: the defaults, a site's overrides, and the errors an operator gets."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import msgspec
import pytest

from gpuhealth.errors import ConfigError
from gpuhealth.events import HostEvent
from rules import limits
from rules.catalog import load
from rules.engine import apply
from tests.e2e.conftest import gpuctl


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rules.toml"
    path.write_text(text)
    return path


def test_the_defaults_load_and_a_file_changes_only_what_it_names(tmp_path: Path) -> None:
    default = limits.default()
    site = limits.load(write(tmp_path, "[infiniband]\ndown_s = 60\n"))
    assert site.infiniband.down_s == 60
    assert site.infiniband.flaps == default.infiniband.flaps and site.pci == default.pci


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[infiniband]\ndown = 1\n", "unknown key infiniband.'down'"),
        ("[nope]\nx = 1\n", "unknown key 'nope'"),
        ("[pci]\naer_nonfatal = { threshold = 'x', window_s = 1 }\n", "Expected `int`, got `str`"),
        ("[pci\n", "cannot read rules file"),
    ],
)
def test_a_bad_file_is_one_clear_error(tmp_path: Path, text: str, says: str) -> None:
    with pytest.raises(ConfigError) as e:
        limits.load(write(tmp_path, text))
    assert says in str(e.value)


def test_a_site_threshold_changes_what_the_engine_decides(tmp_path: Path) -> None:
    cat = dataclasses.replace(load(), limits=limits.load(write(tmp_path, "[infiniband]\ndown_s = 60\n")))
    down = HostEvent(id="p", time=90 * 10**9, cluster="c", node="n", boot_id="b", source="sysfs",
                     component="accelerator-nvidia-infiniband", kind="ib_port", entity="mlx5_0:1", state="DOWN",
                     ok=False, since=0, message="port DOWN")  # fmt: skip
    assert apply(None, down, cat)[1][0].health == "Unhealthy"  # down 90 s: over the site's 60, under the default
    assert apply(None, down, load())[1][0].health == "Degraded"


def test_gpuctl_rules_check_prints_the_changes_and_fails_on_a_bad_file(tmp_path: Path) -> None:
    good = write(tmp_path, "[infiniband]\ndown_s = 120\n[edac]\ncorrectable = { threshold = 10, window_s = 86400 }\n")
    r = gpuctl("rules", "check", str(good))
    assert r.returncode == 0, r.stderr
    assert "2 changes" in r.stdout and "infiniband.down_s" in r.stdout and "240" in r.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text("[infiniband]\ndown = 1\n")
    r = gpuctl("rules", "check", str(bad))
    assert r.returncode == 64 and "unknown key" in r.stderr and "Traceback" not in r.stderr


def test_the_shipped_defaults_are_the_documented_ones() -> None:
    """The table tests count up to whatever limits.toml says, so a default changed tenfold would pass them;
    these figures are the README's and the field's, written here and not read from the file."""
    expected = {
        "incident": {"window_s": 3600, "update_s": 2},
        "pci": {
            "aer_nonfatal": {"threshold": 1, "window_s": 3600},
            "aer_correctable": {"threshold": 100, "window_s": 3600},
        },
        "infiniband": {"down_s": 240, "flaps": 3, "flap_window_s": 600, "errors": {"threshold": 100, "window_s": 3600}},
        "edac": {"correctable": {"threshold": 1000, "window_s": 86400}},
        "kernel": {
            "hung_task": {"threshold": 1, "window_s": 3600},
            "soft_lockup": {"threshold": 1, "window_s": 3600},
            "oom": {"threshold": 5, "window_s": 3600},
            "nfs": {"threshold": 3, "window_s": 600},
        },
        "nvml": {"ecc_sbe": {"threshold": 100, "window_s": 3600}, "slowdown_minutes": 6, "slowdown_window_s": 600},
    }
    assert msgspec.to_builtins(limits.default()) == expected


def test_checking_a_file_validates_its_values_not_only_its_keys(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        limits.check(write(tmp_path, "[kernel]\noom = { threshold = 'five', window_s = 3600 }\n"))
    assert "Expected `int`, got `str`" in str(e.value)
