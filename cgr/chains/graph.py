"""The semantic graph of one hypothesis (paper §2.2), as a networkx graph.

Nodes are concepts. Question nodes are the concepts shared by all J hypothesis AMRs of the
question; answer nodes are this hypothesis' other concepts. Hypothesis edges are kept except
those between a question and an answer node; every fact-AMR edge is kept. Nodes of the same
concept merge across AMRs, and each node and edge remembers the facts it came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from cgr.chains.concepts import AMRConcepts

HYPOTHESIS = "H"
SIMILAR = " ≈ "  # a link label "node ≈ the fact's concept": reached by similarity (link_similar)


@dataclass
class SemanticGraph:
    graph: nx.Graph
    question_nodes: set[str]
    answer_nodes: set[str]
    hypothesis_nodes: set[str]
    fact_concepts: dict[str, set[str]] = field(default_factory=dict)
    # (fact, hypothesis node) -> the fact's own concept that reached the node by similarity
    similar: dict[tuple[str, str], str] = field(default_factory=dict)

    def node_label(self, fid: str, nodes: set[str]) -> str:
        """The node a chain names where it enters or leaves fact `fid`: one the fact states
        (smallest first), else one it reached by similarity, written "node ≈ its concept"."""
        own = nodes & self.fact_concepts[fid]
        stated = sorted(n for n in own if (fid, n) not in self.similar)
        if stated:
            return stated[0]
        node = min(own)
        return f"{node}{SIMILAR}{self.similar[(fid, node)]}"

    def facts_of(self, node: str) -> set[str]:
        return self.graph.nodes[node]["facts"] if node in self.graph else set()


def question_concepts(hypotheses: list[AMRConcepts]) -> set[str]:
    """Concepts shared by all J hypothesis AMRs of one question."""
    sets = [h.concepts for h in hypotheses if h.concepts]
    return set.intersection(*sets) if sets else set()


def build_semantic_graph(
    hypothesis: AMRConcepts, question_nodes: set[str], facts: dict[str, AMRConcepts]
) -> SemanticGraph:
    graph = nx.Graph()
    q_nodes = hypothesis.concepts & question_nodes
    a_nodes = hypothesis.concepts - question_nodes
    for concept in hypothesis.concepts:
        graph.add_node(concept, facts=set(), role="question" if concept in q_nodes else "answer")
    for a, _, b in hypothesis.edges:
        if a in hypothesis.concepts and b in hypothesis.concepts and a != b:
            if (a in q_nodes) != (b in q_nodes):
                continue  # the edges between question and answer nodes are dropped (Fig. 2)
            graph.add_edge(a, b, facts={HYPOTHESIS})
    fact_concepts: dict[str, set[str]] = {}
    for fid in sorted(facts):
        amr = facts[fid]
        if not amr.concepts:
            continue
        fact_concepts[fid] = set(amr.concepts)
        for concept in amr.concepts:
            if concept not in graph:
                graph.add_node(concept, facts=set(), role="fact")
            graph.nodes[concept]["facts"].add(fid)
        for a, _, b in amr.edges:
            if a in amr.concepts and b in amr.concepts and a != b:
                if graph.has_edge(a, b):
                    graph.edges[a, b]["facts"].add(fid)
                else:
                    graph.add_edge(a, b, facts={fid})
    return SemanticGraph(graph, q_nodes, a_nodes, set(hypothesis.concepts), fact_concepts)


def link_similar(graph: SemanticGraph, vectors: Mapping[str, np.ndarray], threshold: float) -> int:
    """Lets a fact reach a question or answer node through a concept of its own that only means
    the same: a fact concept outside the hypothesis whose vector's cosine with the node's is at
    least `threshold` ("increase" for the hypothesis' "enhance") adds the node to the fact, so a
    chain can start or end there. Facts still link to facts by equal concepts only (the paper),
    so the search stays as bounded as before. `vectors`: unit vectors by concept. Returns the
    links added."""
    nodes = sorted(n for n in graph.question_nodes | graph.answer_nodes if n in vectors)
    if not nodes:
        return 0
    node_matrix = np.stack([vectors[n] for n in nodes])
    added = 0
    for fid in sorted(graph.fact_concepts):
        own = graph.fact_concepts[fid]
        others = sorted(c for c in own - graph.hypothesis_nodes if c in vectors)
        if not others:
            continue
        cosine = np.stack([vectors[c] for c in others]) @ node_matrix.T
        for j, node in enumerate(nodes):
            best = int(cosine[:, j].argmax())
            if cosine[best, j] >= threshold and node not in own:
                own.add(node)
                graph.graph.nodes[node]["facts"].add(fid)
                graph.similar[(fid, node)] = others[best]
                added += 1
    return added
