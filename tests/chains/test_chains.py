"""Concepts, the semantic graph and chain search on hand-built AMRs, and the builder end to end."""

import itertools

import pytest

from cgr.chains.concepts import AMRConcepts, amr_concepts, normalize_concept
from cgr.chains.graph import HYPOTHESIS, build_semantic_graph, question_concepts
from cgr.chains.search import ChainSearchConfig, chain_evidence, find_chains


def amr(concepts, edges=()):
    return AMRConcepts(root=None, concepts=set(concepts), edges={(a, ":mod", b) for a, b in edges})


def test_normalisation_and_names():
    assert (
        normalize_concept("Need-01") == "need"
        and normalize_concept("be-located-at-91") == "be located at"
    )
    g = '(d / discover-01 :ARG0 (p / person :name (n / name :op1 "Isaac" :op2 "Newton")) :ARG1 (g / gravity) :polarity -)'
    c = amr_concepts(g, merge_roots=True)
    assert c.concepts == {"discover", "isaac newton", "gravity"}  # person: a stop concept
    assert ("person", ":name", "isaac newton") in c.edges and c.root == "discover"
    assert amr_concepts(g).concepts == {"isaac newton", "gravity"}  # the paper: no root


# --- the paper's graph rules (§2.2), on AMRs written by hand -------------------------------------


def test_an_over_general_node_is_replaced_by_its_attribute_values():
    earth = '(o / orbit-01 :ARG0 (p / planet :name (n / name :op1 "Earth")) :ARG1 (s / star))'
    assert amr_concepts(earth).concepts == {"planet", "earth", "star"}  # `name` -> "earth"
    legs = "(h / have-03 :ARG0 (i / insect) :ARG1 (l / leg :quant 6))"
    assert amr_concepts(legs).concepts == {"insect", "6"}  # the authors: the node gives way
    assert amr_concepts(legs, replace_attributed=False).concepts == {"insect", "leg", "6"}


def test_polarity_and_mode_replace_nothing_and_link_nothing():
    negated = "(e / eat-01 :ARG0 (p / plant) :ARG1 (f / food :polarity -) :mode imperative)"
    assert amr_concepts(negated).concepts == {"plant", "food"}


def test_roots_do_not_link_amrs_unless_merge_roots():
    """Two facts whose only shared concept is their root verb form no chain (the paper's
    "unwanted shortcuts"); with merge_roots they do."""
    hyps = ["(u / use-01 :ARG1 (t / thermometer) :ARG2 (m / measure-01 :ARG1 (t2 / temperature)))",
            "(u / use-01 :ARG1 (t / thermometer) :ARG2 (s / see-01 :ARG1 (p / planet)))"]  # fmt: skip
    facts = {"f_thermo": "(u / use-01 :ARG1 (t / thermometer) :ARG2 (g / glass))",
             "f_baro": "(u / use-01 :ARG1 (b / barometer) :ARG2 (m / measure-01 :ARG1 (p / pressure)))"}  # fmt: skip
    found = {}
    for merge in (False, True):
        h = [amr_concepts(x, merge_roots=merge) for x in hyps]
        q = question_concepts(h)
        assert ("use" in q) is merge  # the hypotheses' shared root is no question node
        f = {k: amr_concepts(v, merge_roots=merge) for k, v in facts.items()}
        found[merge] = [c.facts for c in find_chains(build_semantic_graph(h[0], q, f))[0]]
    # with roots merged, "use" is a question node and the barometer fact "answers" it
    assert found == {False: [], True: [("f_baro",)]}


def test_noun_roots_link_with_merge_noun_roots_and_predicate_roots_never():
    whale = "(m / mammal :domain (w / whale))"  # a copula puts its class noun at the root
    uses = "(u / use-01 :ARG1 (t / thermometer))"
    assert amr_concepts(whale).concepts == {"whale"}
    assert amr_concepts(whale, merge_noun_roots=True).concepts == {"whale", "mammal"}
    assert amr_concepts(uses, merge_noun_roots=True).concepts == {"thermometer"}


def test_chains_rank_by_length_or_by_the_mean_relevance_of_their_facts():
    facts = {"f_direct": amr({"electricity", "copper"}), "f_metal": amr({"conductor", "metal"}),
             "f_copper": amr({"metal", "copper"})}  # fmt: skip
    graph = build_semantic_graph(HYP, Q, facts)
    relevance = {"f_direct": 0.2, "f_metal": 0.9, "f_copper": 0.8}
    by_length, _ = find_chains(graph, relevance)
    by_relevance, _ = find_chains(graph, relevance, ChainSearchConfig(order="relevance"))
    assert [c.facts for c in by_length] == [("f_direct",), ("f_metal", "f_copper")]
    assert [c.facts for c in by_relevance] == [("f_metal", "f_copper"), ("f_direct",)]
    # open_book: a chain through a preferred (open-book) fact comes first, then by relevance
    book = {"f_direct"}
    by_book, _ = find_chains(graph, relevance, ChainSearchConfig(order="open_book"), book)
    assert [c.facts for c in by_book] == [("f_direct",), ("f_metal", "f_copper")]
    both, _ = find_chains(
        graph, relevance, ChainSearchConfig(order="open_book"), book | {"f_copper"}
    )
    assert [c.facts for c in both] == [("f_metal", "f_copper"), ("f_direct",)]  # 0.8 above 0.2
    unread, _ = find_chains(graph, relevance, ChainSearchConfig(order="relevance"), book)
    assert unread == by_relevance  # only `open_book` reads the preferred facts


def test_open_book_order_finds_the_open_book_by_text_not_by_the_source_that_scored_it():
    """A sentence in both the corpus and the open book may come back as a corpus hit; the builder
    knows it as the open book's by its text key."""
    from collections import Counter

    from cgr.chains.builder import ChainConfig, _search_one
    from cgr.chains.search import ChainSearchConfig as Search
    from cgr.reader.examples import ReaderExample
    from cgr.retrieval.base import RetrievedFact

    concepts = {"metals conduct electricity": amr({"electricity", "metal"}),
                "Copper is a metal.": amr({"metal", "copper"}),
                "copper wire carries electricity": amr({"electricity", "copper"}),
                "h_copper": HYP, "h_wood": amr({"conductor", "electricity", "wood"})}  # fmt: skip
    pool = [RetrievedFact("f_wire", "copper wire carries electricity", 0.9),
            RetrievedFact("f_metal", "metals conduct electricity", 0.5),
            RetrievedFact("f_copper", "Copper is a metal.", 0.4)]  # fmt: skip
    ex = ReaderExample(question_id="q", question="?", labels=["A", "B"], choices=["copper", "wood"],
                       hypotheses=["h_copper", "h_wood"], pool=[pool, []], answer_index=0)  # fmt: skip
    relevance = [{f.fact_id: f.score for f in pool}, {}]
    firsts = {}
    for order in ("relevance", "open_book"):
        cfg = ChainConfig(chain_order=order)
        chains, _ = _search_one(ex, concepts, relevance, cfg, Search(order=order), Counter(), [],
                                frozenset({"copper is a metal"}))  # fmt: skip
        firsts[order] = chains[0][0].facts
    assert firsts == {"relevance": ("f_wire",), "open_book": ("f_metal", "f_copper")}


def test_question_nodes_are_shared_by_all_hypotheses_and_their_edges_to_answers_dropped():
    hyps = [amr_concepts(x) for x in (
        "(c / conduct-01 :ARG0 (c2 / copper) :ARG1 (e / electricity) :ARG1-of (g / good-02))",
        "(c / conduct-01 :ARG0 (w / wood) :ARG1 (e / electricity) :ARG1-of (g / good-02))",
    )]  # fmt: skip
    q = question_concepts(hyps)
    assert q == {"electricity", "good"}  # the root "conduct" is no node at all
    g = build_semantic_graph(hyps[0], q, {})
    assert g.answer_nodes == {"copper"}
    assert not any({a, b} & g.answer_nodes and {a, b} & q for a, b in g.graph.edges)


def test_a_path_ends_at_its_first_answer_node():
    """A fact that reaches an answer ends the chain: it is not extended through more facts."""
    facts = {"f_direct": amr({"electricity", "copper", "wire"}), "f_wire": amr({"wire", "copper"})}
    chains, _ = find_chains(build_semantic_graph(HYP, Q, facts))
    assert [c.facts for c in chains] == [("f_direct",)]


def test_stop_concepts_and_bad_graphs_give_nothing():
    assert amr_concepts("(a / and :op1 (t / thing) :op2 (i / it))").concepts == set()
    assert amr_concepts("((( not penman").concepts == set() and amr_concepts(None).concepts == set()


def test_question_and_answer_nodes_and_dropped_edges():
    hyps = [amr({"conductor", "electricity", "copper"}, [("conductor", "electricity"), ("conductor", "copper")]),
            amr({"conductor", "electricity", "wood"}, [("conductor", "wood")])]  # fmt: skip
    q = question_concepts(hyps)
    assert q == {"conductor", "electricity"}
    g = build_semantic_graph(hyps[0], q, {"f1": amr({"copper", "metal"}, [("metal", "copper")])})
    assert g.question_nodes == q and g.answer_nodes == {"copper"}
    assert g.graph.edges["conductor", "electricity"]["facts"] == {HYPOTHESIS}
    assert not g.graph.has_edge(
        "conductor", "copper"
    )  # question-answer edge of the hypothesis dropped
    assert g.graph.nodes["copper"]["facts"] == {"f1"} and g.graph.edges["metal", "copper"][
        "facts"
    ] == {"f1"}


HYP = amr({"conductor", "electricity", "copper"})
Q = {"conductor", "electricity"}
FACTS = {
    "f_metal": amr({"metal", "conductor", "electricity"}),  # question side
    "f_copper": amr({"copper", "metal"}),  # answer side, linked by "metal"
    "f_direct": amr({"copper", "electricity", "wire"}),  # question and answer in one fact
    "f_bridge": amr({"metal", "alloy"}),
    "f_alloy": amr({"alloy", "copper"}),
    "f_island": amr({"ocean", "salt"}),
}


def test_chains_connect_question_to_answer_through_non_hypothesis_nodes():
    chains, complete = find_chains(build_semantic_graph(HYP, Q, FACTS))
    assert complete
    as_tuples = [(c.facts, c.links) for c in chains]
    assert (("f_direct",), ("electricity", "copper")) in as_tuples
    assert (("f_metal", "f_copper"), ("conductor", "metal", "copper")) in as_tuples
    assert (
        ("f_metal", "f_bridge", "f_alloy"),
        ("conductor", "metal", "alloy", "copper"),
    ) in as_tuples
    assert all(len(c.facts) <= 3 and "f_island" not in c.facts for c in chains)
    assert [len(c.facts) for c in chains] == sorted(len(c.facts) for c in chains)  # shortest first


def test_bounds_on_length_and_count():
    g = build_semantic_graph(HYP, Q, FACTS)
    assert all(len(c.facts) <= 2 for c in find_chains(g, cfg=ChainSearchConfig(max_facts=2))[0])
    assert len(find_chains(g, cfg=ChainSearchConfig(max_chains=1))[0]) == 1
    chains, complete = find_chains(g, cfg=ChainSearchConfig(max_expansions=1))
    assert not complete and len(chains) <= 1


def test_result_does_not_depend_on_pool_order():
    results = set()
    for order in itertools.permutations(FACTS):
        chains, _ = find_chains(build_semantic_graph(HYP, Q, {k: FACTS[k] for k in order}))
        results.add(tuple((c.facts, c.links) for c in chains))
    assert len(results) == 1


def test_no_answer_nodes_or_no_concepts_gives_no_chains():
    g = build_semantic_graph(amr({"conductor", "electricity"}), Q, FACTS)
    assert find_chains(g) == ([], True)
    assert find_chains(build_semantic_graph(HYP, Q, {"empty": amr(set())}))[0] == []


def test_chain_evidence_is_the_union_in_retrieval_order():
    chains, _ = find_chains(build_semantic_graph(HYP, Q, FACTS))
    order = ["f_island", "f_copper", "f_alloy", "f_direct", "f_bridge", "f_metal"]
    assert chain_evidence(chains, order) == [
        "f_copper",
        "f_alloy",
        "f_direct",
        "f_bridge",
        "f_metal",
    ]


@pytest.fixture(scope="module")
def sample_examples(tmp_path_factory):
    from cgr.amr.parsers import AMRConfig
    from cgr.chains.builder import ChainBuilder, ChainConfig
    from cgr.evidence.selection import EvidenceConfig, select_evidence
    from cgr.reader.examples import ReaderExample
    from cgr.retrieval.base import RetrievedFact

    texts = ["metal is a good conductor of electricity", "copper is a metal", "the ocean is salty",
             "wood is an electrical insulator"]  # fmt: skip
    pool = [RetrievedFact(f"id{i}", t, 1.0 - i / 10) for i, t in enumerate(texts)]
    choices = ["copper", "wood", "salt"]
    hyps = ["Copper is the best conductor of electricity.", "Wood is the best conductor of electricity.",
            "Salt is the best conductor of electricity."]  # fmt: skip
    ex = ReaderExample("q", "Which material is the best conductor of electricity?", list("ABC"), choices, hyps,
                       answer_index=0, pool=[list(pool) for _ in choices])  # fmt: skip
    cache = str(tmp_path_factory.mktemp("amr") / "amr.sqlite")
    # noun roots link ("copper is a metal": root `metal`), as configs/chains/default.yaml sets
    padded = ChainBuilder(ChainConfig(amr=AMRConfig(cache=cache), merge_noun_roots=True),
                          progress=False)  # fmt: skip
    padded.attach([ex])
    select_evidence([ex], EvidenceConfig(order="retrieval"), 3)
    plain = ReaderExample(**{**ex.__dict__, "pool": [list(pool) for _ in choices], "chains": []})
    select_evidence([plain], EvidenceConfig(order="retrieval"), 3, chain_facts_only=True)
    return ex, plain, padded


def test_builder_finds_the_two_fact_chain_with_the_real_parser(sample_examples):
    ex, _, builder = sample_examples
    copper = [(c.facts, c.links, c.texts) for c in ex.chains[0]]
    assert (("id0", "id1"), ("conductor", "metal", "copper"),
            ("metal is a good conductor of electricity", "copper is a metal")) in copper  # fmt: skip
    assert ex.chains[2] == []  # "salt" never meets the question
    assert builder.counters["hypotheses"] == 3
    assert builder.counters["hypotheses_with_chains"] == sum(bool(c) for c in ex.chains) >= 1


def test_evidence_is_chain_facts_first_then_padding(sample_examples):
    ex, plain, _ = sample_examples
    assert [f.fact_id for f in ex.facts[0]][:2] == ["id0", "id1"] and len(ex.facts[0]) == 3
    assert [len(p) for p in ex.pool] == [4, 4, 4]  # the pool stays as retrieved
    assert len(ex.facts[2]) == 3  # padded from the pool though it has no chain
    assert plain.facts[2] == [] and {f.fact_id for f in plain.facts[0]} <= {"id0", "id1", "id3"}


def test_evidence_comes_from_more_chains_than_are_kept(sample_examples, tmp_path):
    from cgr.amr.parsers import AMRConfig
    from cgr.chains.builder import ChainBuilder, ChainConfig
    from cgr.evidence.selection import EvidenceConfig, select_evidence
    from cgr.retrieval.base import RetrievedFact

    _, plain, _ = sample_examples
    texts = ["copper is a good conductor of electricity", "metal is a good conductor of electricity",
             "copper is a metal"]  # fmt: skip
    pool = [RetrievedFact(f"f{i}", t, 1.0) for i, t in enumerate(texts)]
    ex = type(plain)(
        **{**plain.__dict__, "pool": [list(pool) for _ in plain.choices], "chains": []}
    )
    cfg = ChainConfig(amr=AMRConfig(cache=str(tmp_path / "a.sqlite")), max_chains=1,
                      evidence_chains=50, pad_evidence=False, merge_noun_roots=True)  # fmt: skip
    ChainBuilder(cfg, progress=False).attach([ex])
    select_evidence([ex], EvidenceConfig(order="retrieval"), 10, chain_facts_only=True)
    assert [c.facts for c in ex.chains[0]] == [("f0",)]  # the shortest chain is kept
    assert {f.fact_id for f in ex.facts[0]} == {"f0", "f1", "f2"}  # Ê: the 2-fact chain too
    assert set(ex.chain_facts[0]) == set(texts)  # Ê is kept apart for the selection step


def test_explained_chains_use_only_the_most_relevant_facts_while_e_uses_all(
    sample_examples, tmp_path
):
    from cgr.amr.parsers import AMRConfig
    from cgr.chains.builder import ChainBuilder, ChainConfig
    from cgr.errors import ConfigError
    from cgr.retrieval.base import RetrievedFact

    _, plain, _ = sample_examples
    texts = ["copper is a good conductor of electricity", "metal is a good conductor of electricity",
             "copper is a metal"]  # fmt: skip
    pool = [RetrievedFact(f"f{i}", t, 1.0) for i, t in enumerate(texts)]
    cache = str(tmp_path / "a.sqlite")

    def chains_with(top: int, relevance: dict[str, float] | None):
        ex = type(plain)(
            **{**plain.__dict__, "pool": [list(pool) for _ in plain.choices], "chains": []}
        )
        cfg = ChainConfig(amr=AMRConfig(cache=cache), explain_top_facts=top, merge_noun_roots=True)
        keys = [[relevance] * len(plain.choices)] if relevance else None
        ChainBuilder(cfg, progress=False).attach([ex], keys)
        return [c.facts for c in ex.chains[0]], set(ex.chain_facts[0])

    assert chains_with(0, None) == ([("f0",), ("f1", "f2")], set(texts))
    # the 2-fact chain passes through f1, which is not among the one most relevant fact
    assert chains_with(1, {"f0": 0.9, "f1": 0.1, "f2": 0.5}) == ([("f0",)], set(texts))
    assert chains_with(2, {"f0": 0.1, "f1": 0.9, "f2": 0.8}) == ([("f1", "f2")], set(texts))
    with pytest.raises(ConfigError, match="explain_top_facts"):
        ChainConfig(explain_top_facts=-1)


def test_multi_word_frames_and_question_words_never_link_facts():
    graph = "(b / be-located-at-91 :ARG1 (c / collection :mod (w / what)) :ARG2 (m / multi-sentence))"  # the root is a frame: no link either way
    assert amr_concepts(graph).concepts == {"collection"}


def test_stemmed_concepts_meet_across_word_forms():
    collection = amr_concepts("(c / collection :mod (d / data))", merge_roots=True, stem=True)
    collect = amr_concepts("(c / collect-01 :ARG1 (d / data))", merge_roots=True, stem=True)
    assert collection.concepts == collect.concepts == {"collect", "data"}
    assert ("collect", ":mod", "data") in collection.edges
    assert amr_concepts("(c / collection)", merge_roots=True).concepts == {"collection"}  # off


def test_hub_concepts_do_not_link_facts():
    # "metal" is in 3 of the 6 facts: a share of 0.3 makes it a hub, so the chains through it go
    g = build_semantic_graph(HYP, Q, FACTS)
    all_links = {link for c in find_chains(g)[0] for link in c.links[1:-1]}
    assert "metal" in all_links
    chains, _ = find_chains(g, cfg=ChainSearchConfig(max_link_share=0.3))
    assert chains and all("metal" not in c.links for c in chains)
    assert (("f_direct",), ("electricity", "copper")) in [(c.facts, c.links) for c in chains]


def test_max_link_share_is_checked():
    from cgr.chains.builder import ChainConfig
    from cgr.errors import ConfigError

    for bad in (0.0, 1.5):
        with pytest.raises(ConfigError, match="max_link_share"):
            ChainConfig(max_link_share=bad)


def test_chain_search_in_worker_processes_equals_one_process(tmp_path, monkeypatch):
    """Questions searched in a pool of worker processes get the same chains, Ê and counters as
    in one process (BM25 pools over the quickstart facts: no encoder needed)."""
    from cgr.amr.parsers import AMRConfig
    from cgr.chains import builder
    from cgr.data.hypothesis import HypothesisGenerator
    from cgr.data.loaders import load_multiple_choice
    from cgr.evidence.pools import build_examples
    from cgr.retrieval.factory import RetrievalConfig, build_retriever
    from tests.conftest import ROOT

    quickstart = ROOT / "data" / "quickstart"
    questions = load_multiple_choice(quickstart / "dev.jsonl")[:24]
    retriever = build_retriever(
        RetrievalConfig(method="bm25", corpus=[str(quickstart / "facts.txt")], beam_size=8)
    )
    cache = str(tmp_path / "amr.sqlite")

    def searched(workers: int):
        examples = build_examples(questions, retriever, HypothesisGenerator(), progress=False)
        cfg = builder.ChainConfig(amr=AMRConfig(cache=cache), stem_concepts=True, workers=workers,
                                  explain_top_facts=4, time_budget_s=30.0,
                                  merge_noun_roots=True, chain_order="relevance")  # fmt: skip
        chain_builder = builder.ChainBuilder(cfg, progress=False)
        chain_builder.attach(examples)
        counters = {
            k: v for k, v in chain_builder.counters.items() if k != "searches_cut_by_budget"
        }
        return [(ex.chains, ex.chain_facts) for ex in examples], counters, chain_builder

    monkeypatch.setattr(builder, "MIN_SHARE", 1)  # a worker per few questions: pools for real
    one, one_counts, _ = searched(1)
    many, many_counts, chain_builder = searched(3)
    assert chain_builder.workers == 3 and len(chain_builder.search_seconds) == 24 * 4
    assert sum(bool(c) for chains, _ in one for c in chains) > 10  # chains were found at all
    assert many == one
    assert many_counts == one_counts


def test_default_chains_never_link_through_a_predicate_root(tmp_path):
    """configs/chains/default.yaml on the quickstart's questions (BM25 pools, no encoder): every
    concept a chain passes through, and the question and answer concepts it starts and ends
    at, is no predicate root of the facts it joins (the paper's "unwanted shortcuts")."""
    import penman
    import yaml

    from cgr.amr.parsers import AMRConfig, CachedParser
    from cgr.chains.builder import ChainBuilder, ChainConfig
    from cgr.data.hypothesis import HypothesisGenerator
    from cgr.data.loaders import load_multiple_choice
    from cgr.evidence.pools import build_examples
    from cgr.retrieval.factory import RetrievalConfig, build_retriever
    from tests.conftest import ROOT

    quickstart = ROOT / "data" / "quickstart"
    settings = yaml.safe_load((ROOT / "configs" / "chains" / "default.yaml").read_text())
    settings.pop("enabled")
    amr = AMRConfig(**{**settings.pop("amr"), "cache": str(tmp_path / "amr.sqlite")})
    cfg = ChainConfig(amr=amr, **{**settings, "workers": 1})
    retriever = build_retriever(
        RetrievalConfig(method="bm25", corpus=[str(quickstart / "facts.txt")], beam_size=8)
    )
    questions = load_multiple_choice(quickstart / "dev.jsonl")
    examples = build_examples(questions, retriever, HypothesisGenerator(), progress=False)
    ChainBuilder(cfg, progress=False).attach(examples)
    parser = CachedParser(amr, progress=False)
    chains = [c for ex in examples for per_choice in ex.chains for c in per_choice]
    assert len(chains) > 20  # the rule is exercised
    roots = {}
    for text in {t for c in chains for t in c.texts}:
        graph = penman.decode(parser.parse([text])[0])
        top = graph.instances()[0].target if graph.top else ""
        roots[text] = normalize_concept(top) if "-" in top and top[-1].isdigit() else None
    for chain in chains:
        for i, text in enumerate(chain.texts):
            assert roots[text] not in (chain.links[i], chain.links[i + 1]), (chain, text)


# --- similar links (data.chains.link_similarity, a package switch) -------------------------------


def _unit(*xs):
    import numpy as np

    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_a_fact_reaches_a_hypothesis_node_through_a_similar_concept_only_above_the_threshold():
    from cgr.chains.graph import link_similar

    hyp = amr({"liquid", "enhance"})
    facts = {"f_up": amr({"liquid", "increase"}), "f_salt": amr({"salt", "ocean"})}
    vectors = {"liquid": _unit(0, 1, 0, 0), "enhance": _unit(1, 0, 0, 0),
               "increase": _unit(0.8, 0, 0.6, 0), "salt": _unit(0, 0, 0, 1),
               "ocean": _unit(0, 0.3, 0, 1)}  # fmt: skip

    def chains(threshold):
        graph = build_semantic_graph(hyp, {"liquid"}, facts)
        added = link_similar(graph, vectors, threshold) if threshold else 0
        return [c.facts for c in find_chains(graph)[0]], added

    assert chains(None) == ([], 0)  # the paper: "increase" is not "enhance"
    graph = build_semantic_graph(hyp, {"liquid"}, facts)
    link_similar(graph, vectors, 0.7)
    # the question node the fact states, the answer node it reaches by similarity
    assert find_chains(graph)[0][0].links == ("liquid", "enhance ≈ increase")
    assert chains(0.7) == ([("f_up",)], 1)  # cosine 0.8: the fact reaches the answer node
    assert chains(0.9) == ([], 0)
    # at 0.2 "ocean" joins the question node "liquid" (cosine 0.29), but the salt fact reaches
    # no answer node: a link, no chain
    assert chains(0.2) == ([("f_up",)], 2)


def test_similar_concepts_never_link_one_fact_to_another():
    """Facts still meet by equal concepts only: a similar pair between two facts' own concepts
    makes no 2-fact chain, so the search stays as bounded as the paper's."""
    from cgr.chains.graph import link_similar

    hyp = amr({"heat", "metal"})
    facts = {"f_heat": amr({"heat", "rise"}), "f_metal": amr({"growth", "metal"})}
    vectors = {"heat": _unit(1, 0, 0), "metal": _unit(0, 1, 0), "rise": _unit(0, 0, 1),
               "growth": _unit(0, 0.1, 1)}  # fmt: skip
    graph = build_semantic_graph(hyp, {"heat"}, facts)
    assert link_similar(graph, vectors, 0.9) == 0
    assert find_chains(graph)[0] == []


def test_similar_links_find_the_chain_through_a_synonym_end_to_end(encoder, tmp_path):
    """The embedded parser and the base MiniLM encoder: "illness" reaches the answer
    "disease" (cosine 0.80) with link_similarity 0.5, and nothing without it."""
    from cgr.amr.parsers import AMRConfig
    from cgr.chains.builder import ChainBuilder, ChainConfig
    from cgr.errors import ConfigError
    from cgr.reader.examples import ReaderExample
    from cgr.retrieval.base import RetrievedFact

    texts = ["a vaccine can stop an illness", "iron can rust", "water causes erosion of soil"]
    pool = [RetrievedFact(f"f{i}", t, 1.0) for i, t in enumerate(texts)]
    choices = ["disease", "rust", "erosion"]

    def chains(similarity):
        ex = ReaderExample("q", "What do vaccines help prevent?", list("ABC"), choices,
                           [f"Vaccines help prevent {c}." for c in choices], answer_index=0,
                           pool=[list(pool) for _ in choices])  # fmt: skip
        cfg = ChainConfig(amr=AMRConfig(cache=str(tmp_path / "a.sqlite")),
                          merge_noun_roots=True, link_similarity=similarity)  # fmt: skip
        builder = ChainBuilder(cfg, progress=False, encode=encoder.encode)
        builder.attach([ex])
        found = [[c.facts for c in per_choice] for per_choice in ex.chains]
        return found, builder.counters, ex.chains[0][0].links if ex.chains[0] else None

    found, counters, _ = chains(None)
    assert found == [[], [], []] and "similar_links" not in counters
    found, counters, links = chains(0.5)
    assert found[0] == [("f0",)] and counters["similar_links"] > 0
    # the chain names a node the fact states, else which of its own words reached the node
    assert links == ("vaccine", "disease ≈ illness")  # "vaccine": stated, so named first
    with pytest.raises(ConfigError, match="link_similarity"):
        ChainConfig(link_similarity=0.0)
    with pytest.raises(ConfigError, match="link_similarity"):
        ChainConfig(link_similarity=1.5)
    with pytest.raises(ConfigError, match="needs an encoder"):
        ChainBuilder(ChainConfig(link_similarity=0.5), progress=False)
