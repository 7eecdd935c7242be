# cudaopt-redteam: category=input_mutation task=linear_relu device=cuda expect=rejected layer=dynamic
"""The CUDA form of input_mutation_cpu_subclass_input: the round's input tensor, shared with the reference, turned
into a Tensor subclass whose torch-function hook launches every op four times, with its values unchanged. Library
kernels only (its own no_custom_kernel finding is beside the point). The worker compares each input's class,
layout, storage and attributes with what the harness made, before every timed call and after every candidate
call; on the GPU this file is the proof that the comparison runs there too."""
import torch
import torch.nn as nn

_HOOK = bytes([95, 95, 116, 111, 114, 99, 104, 95, 102, 117, 110, 99, 116, 105, 111, 110, 95, 95]).decode()
_CLASS = bytes([95, 95, 99, 108, 97, 115, 115, 95, 95]).decode()
_plain = torch._C.DisableTorchFunctionSubclass  # ops inside see no subclass, and return plain tensors


def _four_times(cls, func, types, args=(), kwargs=None):
    with _plain():
        for _ in range(3):
            func(*args, **(kwargs or {}))
        return func(*args, **(kwargs or {}))


_Slow = type("Buffer", (torch.Tensor,), {_HOOK: classmethod(_four_times)})


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.w = nn.Parameter(torch.empty(out_features, in_features))
        self.b = nn.Parameter(torch.empty(out_features))
        ref = nn.Linear(in_features, out_features)  # the reference's initialisation, same seed, same order
        with torch.no_grad():
            self.w.copy_(ref.weight)
            self.b.copy_(ref.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with _plain():  # its own work skips the hook it leaves behind
            y = torch.addmm(self.b, x, self.w.t()).clamp_min_(0.0)
        object.__setattr__(x, _CLASS, _Slow)
        return y
