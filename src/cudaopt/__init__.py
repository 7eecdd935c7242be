"""cudaopt: write, verify and learn to write CUDA kernels for PyTorch modules.

The main entry points:

    from cudaopt.evaluate import evaluate, EvalOptions
    result = evaluate("ref.py", "cand.py", EvalOptions(device="cuda:0"))
    print(result.status, result.speedup, result.speedup_ci)
"""

__version__ = "0.1.0"
