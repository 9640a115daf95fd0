"""PeerMedians: the median of a peer group without one member, as statistics.median gives it, for every member."""

from __future__ import annotations

import random
from statistics import median

from tools.checks.gpu_peers import PeerMedians, peer_median


def test_every_members_peer_median_matches_the_plain_median_of_the_others():
    rng = random.Random(7)
    for size in (1, 2, 3, 4, 9, 50):
        group = [f"n{i:03d}" for i in range(size)]
        values = {n: float(rng.choice([rng.randint(0, 100), 42])) for n in group if rng.random() > 0.2}
        peers = PeerMedians(values, group + ["n000"])  # a member listed twice counts once
        for node in group + ["absent"]:
            others = [values[n] for n in group if n != node and n in values]
            assert peers.without(node) == (median(others) if others else None), (size, node)
            assert peer_median(values, group, node) == peers.without(node)
