"""Which saved pairing each comparison of benchmarks/cgr_ablations.py reads and writes: the
first (iterative against CGR) keeps its name, the chain-loss one gets its own; a same-seed
repeat (`--dropout-seed`) trains the same config plus DropoutSeed and is paired with its row."""

import argparse
import json

import benchmarks.cgr_ablations as ablations

BUDGET = argparse.Namespace(train_questions=0, epochs=2, max_length=128, lr="1e-4",
                            gradient_clipping="each", reader="minilm", dropout_seed=None)  # fmt: skip


def test_each_pair_is_counted_once_and_saved_under_its_own_name(monkeypatch):
    runs = {
        ablations.tag("obqa", row, 1, BUDGET)
        for row in ("iterative", "chains", "cgr", "no_chain_losses", "chain_reading")
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
    chains = ablations.tag("obqa", "chains", 1, BUDGET)
    assert sorted(saved) == sorted(
        [
            f"cgr_ablations_paired-{chains}-vs-iterative",
            f"cgr_ablations_paired-{cgr}",
            f"cgr_ablations_paired-{cgr}-vs-chains",
            f"cgr_ablations_paired-{cgr}-vs-no_chain_losses",
            f"cgr_ablations_paired-{ablations.tag('obqa', 'chain_reading', 1, BUDGET)}-vs-cgr",
        ]
    )
    assert saved[f"cgr_ablations_paired-{cgr}-vs-no_chain_losses"]["a"].endswith(
        "no_chain_losses-q0-e2-l128-lr1e-4-clipeach-s1"
    )
    assert len(counted) == len(ablations.PAIRS)  # the second call of each pair reads the saved one
    # a pair with a run not saved yet has no pairing
    assert ablations.saved_pairing({}, "obqa", 2, BUDGET, ("no_chain_losses", "cgr")) is None


def test_a_repeat_is_its_row_plus_a_dropout_seed_and_is_printed_paired_with_it(
    monkeypatch, tmp_path
):
    base = {"seed_everything": 33, "trainer": {"callbacks": [{"class_path": "x"}]},
            "model": {"init_args": {"lr": 1e-4}},
            "data": {"retrieval": {}, "chains": {}}}  # fmt: skip
    repeat = argparse.Namespace(**{**vars(BUDGET), "dropout_seed": 2})
    plain, again = (ablations.row_config(base, "chains", 1, b) for b in (BUDGET, repeat))
    assert again["trainer"]["callbacks"][:-1] == plain["trainer"]["callbacks"]
    assert again["trainer"]["callbacks"][-1] == {
        "class_path": "cgr.training.callbacks.DropoutSeed",
        "init_args": {"seed": 2},
    }
    assert {k: v for k, v in again.items() if k != "trainer"} == {
        k: v for k, v in plain.items() if k != "trainer"
    }
    first, second = (ablations.tag("obqa", "chains", 1, b) for b in (BUDGET, repeat))
    assert second == f"{first}-d2"

    monkeypatch.setattr(ablations, "RESULTS", tmp_path)
    monkeypatch.setattr(
        ablations, "load_result",
        lambda name: json.loads(f.read_text()) if (f := tmp_path / f"{name}.json").exists() else None,
    )  # fmt: skip
    monkeypatch.setattr(
        ablations, "save_result", lambda name, row: (tmp_path / f"{name}.json").write_text(json.dumps(row))
    )  # fmt: skip
    monkeypatch.setattr(ablations, "paired_counts",
                        lambda base, a, b: {"a_only": 30, "b_only": 20, "p": 0.2, "by_gold": {}})  # fmt: skip
    assert ablations.repeats_of("obqa", "chains", 1, BUDGET) == []
    (tmp_path / f"{first}.json").write_text(json.dumps({"accuracy": 0.568}))
    (tmp_path / f"{second}.json").write_text(json.dumps({"accuracy": 0.548}))
    assert ablations.repeats_of("obqa", "chains", 1, BUDGET) == [2]
    assert ablations.repeats_of("obqa", "chains", 1, repeat) == []  # a repeat has none
    line = ablations.repeat_line(base, "obqa", "chains", 1, BUDGET, 2)
    assert "56.8 and 54.8, -2.0 points" in line
    assert "30 right only in the first run, 20 only in the repeat" in line
    assert json.loads((tmp_path / f"cgr_ablations_paired-{second}.json").read_text())["a"] == first


def test_seeds_needed_follows_mcnemars_normal_approximation():
    # z = 1.960 + 0.842; 2.802**2 * 98 / (1.5% of 500)**2 = 13.7
    assert ablations.seeds_needed(98, 1.5, 500) == 14
    assert ablations.seeds_needed(98, 3.0, 500) == 4  # twice the gap: a quarter of the seeds
    assert ablations.seeds_needed(196, 1.5, 500) == 28  # twice the disagreement: twice the seeds
    assert ablations.seeds_needed(98, 1.5, 500, power=0.5) == 7  # z = 1.960 alone


def test_an_evidence_order_reaches_the_row_config_and_names_the_row_apart():
    base = {"seed_everything": 33, "trainer": {"callbacks": []}, "model": {"init_args": {}},
            "data": {"retrieval": {}, "chains": {}, "evidence": {"order": "question_choice"}}}  # fmt: skip
    authors = argparse.Namespace(**{**vars(BUDGET), "evidence_order": "retriever"})
    plain, other = (ablations.row_config(base, "no_chain_losses", 1, b) for b in (BUDGET, authors))
    assert plain["data"]["evidence"]["order"] == "question_choice"
    assert other["data"]["evidence"]["order"] == "retriever"
    first, second = (ablations.tag("obqa", "no_chain_losses", 1, b) for b in (BUDGET, authors))
    assert first.endswith("-clipeach-s1")  # rows reading the config's order keep their names
    assert second == first.replace("-s1", "-retriever-s1")


def test_the_order_table_pairs_each_row_with_itself_reading_the_retriever_order(
    monkeypatch, capsys
):
    authors = argparse.Namespace(**{**vars(BUDGET), "settings": "authors", "evidence_order": None})
    first = ablations.tag("obqa", "no_chain_losses", 1, authors)
    second = first.replace("-s1", "-retriever-s1")
    saved = {first: {"accuracy": 0.574, "n_gold_read": 300, "n_gold_not_read": 200},
             second: {"accuracy": 0.590}}  # fmt: skip
    monkeypatch.setattr(ablations, "load_result", saved.get)
    monkeypatch.setattr(ablations, "save_result", saved.__setitem__)
    monkeypatch.setattr(ablations, "paired_counts", lambda base, a, b: {
        "a_only": 40, "b_only": 48, "p": 0.46,
        "by_gold": {(True, True): [250, 200, 205], (False, True): [150, 60, 80],
                    (False, False): [100, 27, 10]}})  # fmt: skip
    ablations.print_order_table({}, "obqa", ["no_chain_losses"], [1], authors)
    out = capsys.readouterr().out
    assert "57.4 → 59.0" in out and "+1.6 [" in out and "| 0.46 |" in out
    assert "50.0 → 80.0" in out  # the answer choice read a gold fact: 250 → 400 of 500
    assert saved[f"cgr_ablations_paired-{second}"]["a"] == first


def test_the_settings_table_pairs_each_cgr_row_in_our_settings_with_the_authors(
    monkeypatch, capsys
):
    budget = argparse.Namespace(**{**vars(BUDGET), "epochs": 1, "settings": "ours",
                                   "evidence_order": None})  # fmt: skip
    ours = ablations.tag("obqa", "no_global", 1, budget)
    authors = ours.replace("-clipeach-", "-authors-")
    saved = {ours: {"accuracy": 0.580, "train_acc_by_epoch": [0.5]},
             authors: {"accuracy": 0.532, "train_acc_by_epoch": [0.49]}}  # fmt: skip
    monkeypatch.setattr(ablations, "load_result", saved.get)
    monkeypatch.setattr(ablations, "save_result", saved.__setitem__)
    monkeypatch.setattr(ablations, "paired_counts", lambda base, a, b: {
        "a_only": 60, "b_only": 36, "p": 0.02, "by_gold": {(True, True): [278, 160, 150],
                                                           (False, False): [222, 130, 116]}})  # fmt: skip
    ablations.print_settings_table({}, "obqa", ["reader", "no_global"], [1], budget)
    out = capsys.readouterr().out
    assert "58.0 → 53.2" in out and "-4.8 [" in out and "50.0 → 49.0" in out
    assert len([line for line in out.splitlines() if line.startswith("| ")]) == 2  # the reader
    # row has no retriever settings: header and no_global only
    assert saved[f"cgr_ablations_paired-{authors}-vs-ours"]["a"] == ours


def test_similar_links_reach_the_row_config_and_name_the_row_apart():
    base = {"seed_everything": 33, "trainer": {"callbacks": []}, "model": {"init_args": {}},
            "data": {"retrieval": {}, "chains": {}, "evidence": {}}}  # fmt: skip
    similar = argparse.Namespace(**{**vars(BUDGET), "link_similarity": 0.5})
    plain, other = (ablations.row_config(base, "no_chain_losses", 1, b) for b in (BUDGET, similar))
    assert "link_similarity" not in plain["data"]["chains"]  # the config's (off)
    assert other["data"]["chains"]["link_similarity"] == 0.5
    first, second = (ablations.tag("obqa", "no_chain_losses", 1, b) for b in (BUDGET, similar))
    assert second == first.replace("-s1", "-sim0.5-s1")  # rows without it keep their names
