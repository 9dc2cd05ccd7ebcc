"""Device identifiers a user can choose. `coreml` is Apple's runtime (never `mps`, PyTorch's name); `openvino` is
Intel's, offered only by the server environment built with the OpenVINO runtime (`imageforge setup --runtime`)."""

from enum import StrEnum


class Device(StrEnum):
    AUTO = "auto"
    CPU = "cpu"
    CUDA = "cuda"
    DIRECTML = "directml"
    COREML = "coreml"
    OPENVINO = "openvino"

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    Device.AUTO: "Automatic",
    Device.CPU: "CPU",
    Device.CUDA: "NVIDIA CUDA",
    Device.DIRECTML: "DirectML",
    Device.COREML: "Apple CoreML",
    Device.OPENVINO: "Intel OpenVINO",
}
