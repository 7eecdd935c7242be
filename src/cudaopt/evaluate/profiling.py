"""Where an evaluation's time goes, for developers: with CUDAOPT_PROFILE_DIR set, the parent, the judge
and the worker each write a cProfile of themselves there (`<role>-<pid>.prof`).

On the H200 the correctness stage is most of an evaluation (100 trials, 4-6 s for kernels of a few
hundred microseconds, session 5) and no single guard explains it; this finds out which part does.
`scripts/eval_profile.py` runs one evaluation this way and prints the top functions per process.
"""

from __future__ import annotations

import itertools
import os

ENV = "CUDAOPT_PROFILE_DIR"
_count = itertools.count()


class Profiled:
    """A cProfile of this process from __enter__ on, when the environment asks for one. `dump()` writes
    what was gathered so far and keeps profiling: the parent ends a worker or judge as soon as it has
    its answer, so they write before each message that can be their last."""

    def __init__(self, role: str, folder: str | None = None) -> None:
        folder = os.environ.get(ENV) if folder is None else folder  # the children are handed theirs ("" = none)
        self.path = os.path.join(folder, f"{role}-{os.getpid()}-{next(_count)}.prof") if folder else None
        self.prof = None

    def __enter__(self) -> "Profiled":
        if self.path:
            import cProfile

            prof = cProfile.Profile()
            try:
                prof.enable()
            except ValueError:  # another profiler is active (a pool's other thread): this one goes without
                return self
            self.prof = prof
        return self

    def dump(self) -> None:
        if self.prof is not None:
            self.prof.dump_stats(self.path)  # stops the profiler: start it again
            self.prof.enable()

    def __exit__(self, *exc) -> bool:
        if self.prof is not None:
            self.prof.disable()
            self.prof.dump_stats(self.path)
            self.prof = None
        return False
