"""Profiler feedback (CUDA-L2): Nsight Compute metrics per kernel where ncu can run, the compiler's
resource report (`-Xptxas -v`) always, stored beside the candidate and rendered for prompts."""

from cudaopt.profile.api import profile_candidate  # noqa: F401
from cudaopt.profile.format import format_profile  # noqa: F401
from cudaopt.profile.ncu import NCU_METRICS, find_ncu, parse_ncu_csv, run_ncu  # noqa: F401
from cudaopt.profile.prompt import ProfiledPromptBuilder, db_profile_text  # noqa: F401
from cudaopt.profile.ptxas import (  # noqa: F401
    compile_resources,
    extract_cuda_sources,
    parse_ptxas,
    ptxas_resources,
)
from cudaopt.profile.report import KernelProfile, KernelResources, ProfileReport  # noqa: F401
from cudaopt.profile.store import load_profile, load_profiles, save_profile  # noqa: F401
