"""Write a random-weight `model.safetensors` of the real DA3 architecture, as the hub file is laid out.

Runs with the converter environment's python (torch, depth-anything-3, safetensors), never in the project's:

    <converter python> tests/kit/da3_weights.py da3-small OUT.safetensors

Seeded, so the same pins give the same file. Keys carry the hub file's `model.` prefix; tensors that DA3 shares
between heads are written once each (safetensors refuses shared storage). The camera decoder is nudged so that
its random output is a camera: a field of view near 60° and rotations near the identity (a random decoder
gives a field of view near 0), as bench/parity does. Every parameter gets seeded noise first (spread: its own, at
least 0.02), as bench/parity's `fill_every_parameter` does: random initialisation leaves DA3's position embedding
at zero, where the exporter's check of the position-table resize could not see a difference.
"""

from __future__ import annotations

import sys

import torch
from depth_anything_3.cfg import create_object, load_config
from depth_anything_3.registry import MODEL_REGISTRY
from safetensors.torch import save_file


def main(name: str, output: str) -> None:
    torch.manual_seed(12)
    net = create_object(load_config(MODEL_REGISTRY[name])).eval()
    with torch.no_grad():
        for parameter in net.parameters():  # none keeps a constant initial value (the position embedding is 0)
            spread = max(float(parameter.std()) if parameter.numel() > 1 else 0.0, 0.02)
            parameter.add_(torch.randn_like(parameter) * spread)
        net.cam_dec.fc_fov[0].weight.mul_(0.01)
        net.cam_dec.fc_fov[0].bias.fill_(1.05)
        net.cam_dec.fc_qvec.weight.mul_(0.05)
        net.cam_dec.fc_qvec.bias.copy_(torch.tensor([0.0, 0.0, 0.0, 1.0]))
    state = {f"model.{key}": value.detach().clone().contiguous() for key, value in net.state_dict().items()}
    save_file(state, output)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
