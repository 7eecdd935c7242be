"""Diagnose the cache_state check on a GPU: can this process change and read back the persisting-L2 limit
and a stream's access-policy window? (Session 3: an attack that sets both was not flagged on the H200.)"""
import ctypes
import glob
import os

import torch

from cudaopt.evaluate.child import _access_policy_bytes, _persisting_l2_limit

dev = torch.device("cuda")
torch.empty(1, device=dev)
props = torch.cuda.get_device_properties(dev)
print("L2", getattr(props, "L2_cache_size", None), "persisting max", getattr(props, "persisting_l2_cache_max_size", None))
print("driver limit", _persisting_l2_limit(dev), "window", _access_policy_bytes(dev))
rt_paths = sorted(glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "*", "lib", "libcudart.so*")))
print("runtimes beside torch:", rt_paths[:3])
rt = ctypes.CDLL(rt_paths[0]) if rt_paths else ctypes.CDLL("libcudart.so.13")
rc = rt.cudaDeviceSetLimit(0x06, ctypes.c_size_t(8 << 20))
v = ctypes.c_size_t(0)
rc2 = rt.cudaDeviceGetLimit(ctypes.byref(v), 0x06)
print("runtime set rc", rc, "get rc", rc2, "value", v.value, "| driver now", _persisting_l2_limit(dev))
drv = ctypes.CDLL("libcuda.so.1")
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    val = (ctypes.c_ubyte * 64)()
    ctypes.memmove(ctypes.addressof(val) + 8, ctypes.byref(ctypes.c_size_t(1 << 20)), 8)
    ctypes.memmove(ctypes.addressof(val) + 16, ctypes.byref(ctypes.c_float(1.0)), 4)
    ctypes.memmove(ctypes.addressof(val) + 20, ctypes.byref(ctypes.c_int(2)), 4)  # hitProp persisting
    x = torch.empty(1 << 18, device=dev)
    ctypes.memmove(ctypes.addressof(val), ctypes.byref(ctypes.c_void_p(x.data_ptr())), 8)
    rc3 = drv.cuStreamSetAttribute(ctypes.c_void_p(s.cuda_stream), 1, ctypes.byref(val))
    print("side stream window set rc", rc3, "read", _access_policy_bytes(dev))
print("default stream window", _access_policy_bytes(dev))
rt.cudaDeviceSetLimit(0x06, ctypes.c_size_t(0))
print("reset; driver limit", _persisting_l2_limit(dev))
