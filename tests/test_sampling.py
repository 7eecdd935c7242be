"""Exemplar sampling: the empirical distribution against Equation 1, islands, uniform."""

import math
import random
from collections import Counter

import pytest

from cudaopt.db.sampling import (
    BucketSampler,
    Exemplar,
    IslandSampler,
    UniformSampler,
    bucket_key,
    bucket_probabilities,
    island_members,
    make_sampler,
)

# Four buckets at width 0.5: {0.6, 0.7} -> 1, {1.1, 1.3} -> 2, {2.2} -> 4, {3.0, 3.4} -> 6.
SPEEDUPS = [0.6, 0.7, 1.1, 1.3, 2.2, 3.0, 3.4]
EXEMPLARS = [Exemplar(id=i, source=f"# {s}", speedup=s) for i, s in enumerate(SPEEDUPS)]
WIDTH, TAU = 0.5, 0.5
DRAWS = 20_000
# Chi-square critical values at p = 0.001 (df 3 and 6): a correct sampler fails this less than once in
# a thousand seeds, and the seed is fixed, so the test is deterministic.
CHI2_CRIT_P001 = {3: 16.27, 6: 22.46}


def _expected():
    means = {1: 0.65, 2: 1.2, 4: 2.2, 6: 3.2}
    mu = sum(means.values()) / 4
    w = {k: math.exp((m - mu) / TAU) for k, m in means.items()}
    return {k: v / sum(w.values()) for k, v in w.items()}


def test_bucket_probabilities_are_centred_softmax():
    p = bucket_probabilities([0.65, 1.2, 2.2, 3.2], TAU)
    assert p == pytest.approx(list(_expected().values()))
    # Centring: adding a constant to every mean changes nothing.
    assert bucket_probabilities([10.65, 11.2, 12.2, 13.2], TAU) == pytest.approx(p)
    # Low tau -> argmax, high tau -> uniform.
    assert bucket_probabilities([1.0, 2.0], 0.01)[1] == pytest.approx(1.0)
    assert bucket_probabilities([1.0, 2.0], 1e6) == pytest.approx([0.5, 0.5])


def test_first_bucket_frequencies_match_equation_1_chi_square():
    sampler = BucketSampler(n=1, width=WIDTH, tau=TAU)
    rng = random.Random(1234)
    counts = Counter(bucket_key(sampler.sample(EXEMPLARS, rng)[0].speedup, WIDTH) for _ in range(DRAWS))
    expected = _expected()
    chi2 = sum((counts[k] - DRAWS * p) ** 2 / (DRAWS * p) for k, p in expected.items())
    assert set(counts) == set(expected)
    assert chi2 < CHI2_CRIT_P001[3], (chi2, counts)


def test_two_distinct_buckets_inclusion_matches_sequential_draw_formula():
    sampler = BucketSampler(n=2, width=WIDTH, tau=TAU)
    rng = random.Random(99)
    incl = Counter()
    for _ in range(DRAWS):
        picked = sampler.sample(EXEMPLARS, rng)
        keys = [bucket_key(e.speedup, WIDTH) for e in picked]
        assert len(set(keys)) == 2  # N distinct buckets
        incl.update(keys)
    p = _expected()
    for i, pi in p.items():
        # P(i among the two) = P(i first) + sum_j P(j first) * P(i second | j removed).
        want = pi + sum(pj * pi / (1 - pj) for j, pj in p.items() if j != i)
        # One proportion over 20k draws has sd <= 0.0036; 0.02 is more than five of them.
        assert incl[i] / DRAWS == pytest.approx(want, abs=0.02)


def test_candidate_is_uniform_within_its_bucket():
    ex = [Exemplar(id=i, source="", speedup=1.0 + 0.01 * i) for i in range(4)]  # all in one bucket
    rng = random.Random(5)
    counts = Counter(BucketSampler(n=1, width=0.5).sample(ex, rng)[0].id for _ in range(8000))
    chi2 = sum((c - 2000) ** 2 / 2000 for c in counts.values())
    assert chi2 < CHI2_CRIT_P001[3]


def test_fewer_buckets_than_n_still_fills_the_prompt():
    ex = [Exemplar(id=i, source="", speedup=1.0 + 0.01 * i) for i in range(3)]
    picked = BucketSampler(n=2, width=0.5).sample(ex, random.Random(0))
    assert len(picked) == 2 and len({e.id for e in picked}) == 2
    assert BucketSampler().sample([], random.Random(0)) == []


def test_uniform_sampler_is_uniform():
    rng = random.Random(7)
    counts = Counter(e.id for _ in range(7000) for e in UniformSampler(n=1).sample(EXEMPLARS, rng))
    chi2 = sum((c - 1000) ** 2 / 1000 for c in counts.values())
    assert chi2 < CHI2_CRIT_P001[6]


def test_islands_reset_worse_half_from_a_survivor():
    ex = [
        Exemplar(1, "", 1.0, island=0, round=0), Exemplar(2, "", 3.0, island=1, round=0),
        Exemplar(3, "", 0.5, island=2, round=1), Exemplar(4, "", 2.0, island=3, round=1),
        Exemplar(5, "", 1.5, island=0, round=2),
    ]
    before = island_members(ex, 4, reset_every=2, current_round=1)
    assert [e.id for e in before[0]] == [1] and [e.id for e in before[2]] == [3]
    after = island_members(ex, 4, reset_every=2, current_round=2)
    # Best per island at round 2: 0 -> 1.0, 1 -> 3.0, 2 -> 0.5, 3 -> 2.0. Islands 2 and 0 are culled and
    # re-seeded with the best of island 1 or 3; island 0 then gains candidate 5 (made in round 2).
    assert [e.id for e in after[1]] == [2] and [e.id for e in after[3]] == [4]
    assert after[2][0].id in (2, 4) and len(after[2]) == 1
    assert after[0][0].id in (2, 4) and [e.id for e in after[0]][1:] == [5]
    # A pure function of the data: the same answer when asked again (resume).
    assert island_members(ex, 4, 2, 2) == after


def test_island_sampler_draws_from_its_island_only():
    ex = [Exemplar(i, "", 1.0 + i, island=i % 2, round=0) for i in range(6)]
    s = IslandSampler(n=2, n_islands=2, reset_every=0)
    rng = random.Random(3)
    for _ in range(50):
        assert all(e.island == 1 for e in s.sample(ex, rng, island=1, round=0))
    # An empty island borrows from all candidates.
    assert len(IslandSampler(n=2, n_islands=4, reset_every=0).sample(ex, rng, island=3)) == 2


def test_make_sampler_names():
    assert isinstance(make_sampler("bucket"), BucketSampler)
    assert isinstance(make_sampler("island"), IslandSampler)
    assert isinstance(make_sampler("uniform"), UniformSampler)
    with pytest.raises(ValueError, match="choose one of"):
        make_sampler("best")
