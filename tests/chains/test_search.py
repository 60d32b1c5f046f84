"""The fact-path chain search finds exactly what the paper's node DFS finds: the same chains
with the same links, on random graphs where shared concepts make many node paths per fact path
(the node DFS is kept here, as written before, as the reference)."""

import random

import networkx as nx
import pytest

from cgr.chains.graph import SemanticGraph
from cgr.chains.search import ChainSearchConfig, find_chains, hub_concepts


def node_dfs(graph: SemanticGraph, cfg: ChainSearchConfig) -> dict[tuple, tuple]:
    """The reference: DFS over concept nodes (facts and concepts in sorted order); the first
    node path met for each fact path."""
    found: dict[tuple, tuple] = {}
    outside = {c for f in graph.fact_concepts.values() for c in f} - graph.hypothesis_nodes
    outside -= hub_concepts(graph, cfg.max_link_share)
    answers = sorted(graph.answer_nodes)

    def dfs(node, facts, links):
        for fid in sorted(graph.facts_of(node)):
            if fid in facts:
                continue
            concepts = graph.fact_concepts[fid]
            path = facts + (fid,)
            answer = next((a for a in answers if a in concepts), None)
            if answer is not None:
                found.setdefault(path, links + (answer,))
            elif len(path) < cfg.max_facts:
                for nxt in sorted(concepts & outside):
                    if nxt != node:
                        dfs(nxt, path, links + (nxt,))

    for q in sorted(graph.question_nodes):
        dfs(q, (), (q,))
    return found


def random_graph(rng: random.Random) -> SemanticGraph:
    vocabulary = [f"c{i}" for i in range(rng.randint(4, 14))]
    hypothesis = set(rng.sample(vocabulary, rng.randint(2, 4)))
    question = set(rng.sample(sorted(hypothesis), rng.randint(1, len(hypothesis) - 1)))
    graph = nx.Graph()
    for c in hypothesis:
        graph.add_node(c, facts=set())
    facts = {}
    for i in range(rng.randint(1, 12)):
        fid = f"f{i:02d}"
        facts[fid] = set(rng.sample(vocabulary, rng.randint(1, min(5, len(vocabulary)))))
        for c in facts[fid]:
            if c not in graph:
                graph.add_node(c, facts=set())
            graph.nodes[c]["facts"].add(fid)
    return SemanticGraph(graph, question, hypothesis - question, hypothesis, facts)


@pytest.mark.parametrize("max_facts", [1, 2, 3, 4])
def test_fact_path_search_equals_the_node_dfs(max_facts):
    rng = random.Random(max_facts)
    cfg = ChainSearchConfig(max_facts=max_facts, max_chains=10_000, time_budget_s=60.0)
    compared = chains_seen = 0
    for _ in range(400):
        graph = random_graph(rng)
        chains, complete = find_chains(graph, {}, cfg)
        assert complete
        expected = node_dfs(graph, cfg)
        assert {c.facts: c.links for c in chains} == expected
        compared += 1
        chains_seen += len(chains)
    assert compared == 400 and chains_seen > 100  # the graphs do hold chains


def test_hub_concepts_link_nothing_in_either_search():
    rng = random.Random(7)
    cfg = ChainSearchConfig(max_facts=3, max_chains=10_000, time_budget_s=60.0, max_link_share=0.3)
    for _ in range(200):
        graph = random_graph(rng)
        assert {c.facts: c.links for c in find_chains(graph, {}, cfg)[0]} == node_dfs(graph, cfg)
