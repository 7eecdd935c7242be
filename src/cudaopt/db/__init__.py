"""Exemplar database (storage) and exemplar sampling (which candidates a prompt shows)."""

from cudaopt.db.sampling import (  # noqa: F401
    BucketSampler,
    Exemplar,
    IslandSampler,
    UniformSampler,
    bucket_probabilities,
    island_members,
    make_sampler,
)
from cudaopt.db.store import CandidateRecord, ExemplarDB, RunInfo, database_url, source_hash  # noqa: F401
