"""What profiling found for one candidate: Nsight Compute metrics per kernel, the compiler's resource
report per kernel, and, for whatever could not be collected, the reason."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class KernelProfile:
    """One kernel as Nsight Compute measured it, averaged over its profiled launches."""

    name: str
    calls: int
    time_us: float | None  # mean duration of one launch
    metrics: dict = field(default_factory=dict)  # short name (see ncu.NCU_METRICS) -> value in base units
    own: bool = False  # defined in the candidate's source (not a library kernel)


@dataclass(frozen=True)
class KernelResources:
    """One kernel (entry function) as ptxas reported it."""

    name: str  # mangled, as ptxas prints it
    display_name: str  # demangled where c++filt is there
    arch: str = ""
    registers: int | None = None
    shared_bytes: int = 0  # static shared memory per block
    constant_bytes: int = 0
    stack_frame_bytes: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    barriers: int = 0


@dataclass(frozen=True)
class ProfileReport:
    task: str
    source_hash: str = ""
    device: str = ""
    ncu_status: str = "skipped"  # ok | missing | not_permitted | failed | skipped
    ncu_reason: str = ""  # why there are no (or partial) ncu metrics
    kernels: tuple[KernelProfile, ...] = ()
    ptxas_status: str = "skipped"  # ok | missing | failed | no_cuda_source | skipped
    ptxas_reason: str = ""
    resources: tuple[KernelResources, ...] = ()
    # Where the profiling time went (not a property of the candidate): ncu_s, ptxas_s (seconds), the driver's
    # phases under ncu (ncu_import_torch_s, ncu_load_candidate_s, ncu_setup_s, ncu_profiled_s) and
    # extension_cached (the extension was already built when ncu started). Reports stored before have none.
    timings: dict = field(default_factory=dict)

    @property
    def has_metrics(self) -> bool:
        return bool(self.kernels) or bool(self.resources)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> ProfileReport:
        d = dict(d)
        d["kernels"] = tuple(KernelProfile(**k) for k in d.get("kernels", ()))
        d["resources"] = tuple(KernelResources(**r) for r in d.get("resources", ()))
        return cls(**d)
