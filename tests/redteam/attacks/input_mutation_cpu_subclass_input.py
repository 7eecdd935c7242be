# cudaopt-redteam: category=input_mutation task=linear_relu device=cpu expect=rejected layer=dynamic
"""Slow the reference through the inputs both sides share: after its own (honest) result, the candidate turns
the round's input tensor into a Tensor subclass whose torch-function hook runs every op four times. Its values
stay bit for bit the same, so the input-mutation compare sees nothing, and the reference's F.linear, timed next
on the same tensor object, goes through the hook. The hook's names are decoded from bytes, so the static layer
reads only a hint (a class made with type()). The worker now compares each input's class, layout, storage and
attributes with what the harness made, before every timed call and after every candidate call. Before that, it read
ok, 3.80x (2-core CPU, linear_relu at 512 x 1024 x 1024; the honest addmm alone 1.01x)."""
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
