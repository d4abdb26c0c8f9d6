"""The fake NVML against the real nvidia-ml-py: same names, same values, same shapes."""

from __future__ import annotations

import inspect

import pynvml
import pytest

from producers import nvml_names
from producers.fake_nvml import FakeNvml


def public_names() -> list[str]:
    return [n for n in dir(nvml_names) if n.startswith(("NVML", "nvml", "c_nvml"))]


def test_every_constant_and_error_class_exists_in_nvidia_ml_py_with_the_same_value() -> None:
    for name in public_names():
        assert hasattr(pynvml, name), f"{name} is not in nvidia-ml-py"
        ours, theirs = getattr(nvml_names, name), getattr(pynvml, name)
        if isinstance(ours, int):
            assert ours == theirs, name
        elif isinstance(ours, type) and issubclass(ours, Exception):
            assert issubclass(theirs, pynvml.NVMLError) or theirs is pynvml.NVMLError, name
            if ours is not nvml_names.NVMLError:
                code = next(c for c, cls in nvml_names.NVMLError._valClassMapping.items() if cls is ours)
                assert type(pynvml.NVMLError(code)) is theirs, name


def test_every_function_the_fake_offers_exists_with_the_same_arity() -> None:
    methods = [n for n, _ in inspect.getmembers(FakeNvml, inspect.isfunction) if n.startswith("nvml")]
    assert len(methods) > 40
    for name in methods:
        assert hasattr(pynvml, name), f"{name} is not in nvidia-ml-py"
        ours = inspect.signature(getattr(FakeNvml, name)).parameters
        theirs = inspect.signature(getattr(pynvml, name)).parameters
        assert len(ours) - 1 == len(theirs), f"{name}: {list(ours)[1:]} vs {list(theirs)}"


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        ("event data", pynvml.c_nvmlEventData_t),
        ("memory", pynvml.c_nvmlMemory_t),
        ("utilization", pynvml.c_nvmlUtilization_t),
        ("process", pynvml.c_nvmlProcessInfo_t),
        ("pci", pynvml.nvmlPciInfo_t),
        ("field value", pynvml.c_nvmlFieldValue_t),
        ("fabric", pynvml.c_nvmlGpuFabricInfo_t),
    ],
)
def test_struct_fields_match(ours: str, theirs: type) -> None:
    nvml = FakeNvml(gpus=1)
    nvml.nvmlInit()
    h = nvml.nvmlDeviceGetHandleByIndex(0)
    nvml.gpus[0].processes = [(4242, 1 << 30)]
    nvml.inject_xid(0, 79)
    event_set = nvml.nvmlEventSetCreate()
    nvml.nvmlDeviceRegisterEvents(h, nvml.nvmlEventTypeXidCriticalError, event_set)
    fabric = nvml.c_nvmlGpuFabricInfo_t()
    nvml.nvmlDeviceGetGpuFabricInfo(h, fabric)
    sample = {
        "event data": nvml.nvmlEventSetWait_v2(event_set, 100),
        "memory": nvml.nvmlDeviceGetMemoryInfo(h),
        "utilization": nvml.nvmlDeviceGetUtilizationRates(h),
        "process": nvml.nvmlDeviceGetComputeRunningProcesses(h)[0],
        "pci": nvml.nvmlDeviceGetPciInfo(h),
        "field value": nvml.nvmlDeviceGetFieldValues(h, [nvml.NVML_FI_DEV_MEMORY_TEMP])[0],
        "fabric": fabric,
    }[ours]
    for field_name, _ in theirs._fields_:
        assert hasattr(sample, field_name), f"{ours}: no {field_name}"


def test_errors_behave_like_pynvml() -> None:
    err = nvml_names.NVMLError(nvml_names.NVML_ERROR_NOT_SUPPORTED)
    assert type(err) is nvml_names.NVMLError_NotSupported and err.value == 3
    assert str(err) == str(pynvml.NVMLError(3))
    nvml = FakeNvml(gpus=1)
    with pytest.raises(nvml.NVMLError_Uninitialized):
        nvml.nvmlDeviceGetCount()
