"""Which saved pairing each comparison of benchmarks/cgr_ablations.py reads and writes: the
first (iterative against CGR) keeps its name, the chain-loss one gets its own."""

import argparse

import benchmarks.cgr_ablations as ablations

BUDGET = argparse.Namespace(train_questions=0, epochs=2, max_length=128, lr="1e-4",
                            gradient_clipping="each", reader="minilm")  # fmt: skip


def test_each_pair_is_counted_once_and_saved_under_its_own_name(monkeypatch):
    runs = {
        ablations.tag("obqa", row, 1, BUDGET) for row in ("iterative", "cgr", "no_chain_losses")
    }
    saved, counted = {}, []
    monkeypatch.setattr(
        ablations,
        "load_result",
        lambda name: saved.get(name) or ({"accuracy": 0.5} if name in runs else None),
    )
    monkeypatch.setattr(ablations, "save_result", lambda name, row: saved.__setitem__(name, row))

    def paired_counts(base, a, b):
        counted.append((a, b))
        return {"a_only": 3, "b_only": 5, "p": 0.7, "by_gold": {(True, False): [2, 1, 0]}}

    monkeypatch.setattr(ablations, "paired_counts", paired_counts)
    for a, b, *_ in ablations.PAIRS:
        first = ablations.saved_pairing({}, "obqa", 1, BUDGET, (a, b))
        again = ablations.saved_pairing({}, "obqa", 1, BUDGET, (a, b))
        assert first["b_only"] == again["b_only"] == 5
    cgr = ablations.tag("obqa", "cgr", 1, BUDGET)
    assert sorted(saved) == [
        f"cgr_ablations_paired-{cgr}",
        f"cgr_ablations_paired-{cgr}-vs-no_chain_losses",
    ]
    assert saved[f"cgr_ablations_paired-{cgr}-vs-no_chain_losses"]["a"].endswith(
        "no_chain_losses-q0-e2-l128-lr1e-4-clipeach-s1"
    )
    assert len(counted) == 2  # the second call of each pair reads the saved one
    # a pair with a run not saved yet has no pairing
    assert ablations.saved_pairing({}, "obqa", 2, BUDGET, ("no_chain_losses", "cgr")) is None
