"""Chain-guided hops over paragraphs (open multi-hop QA): the question and the paragraphs it
retrieves are parsed into AMR concepts, as facts are on OpenBookQA; a concept that a retrieved
paragraph reaches but the question does not is the chain's frontier (the bridge entity, e.g. the
city a country paragraph names), and the next hop's query is the question with that concept.

A chain here is question -[shared concept]-> paragraph 1 -[frontier concept]-> paragraph 2.
Chains are ranked by their first paragraph's rank for the question, then those whose second
paragraph writes the frontier concept, then the summed scores; the paragraphs read are the
chains' in that order, then the question's own next paragraphs. Chosen on the first 100
HotpotQA and MuSiQue questions of benchmarks/multihop.py against ranking by summed score
(recall@2 0.525 -> 0.575 and 0.382 -> 0.484). The frontier concepts tried per paragraph (4),
those naming another paragraph's title first, were chosen on the same questions: recall@2 with
2 concepts by names first 0.575 / 0.484, titles first 0.625 / 0.509, 4 concepts 0.650 / 0.530
(8: 0.665 / 0.521 at twice the time). No language model runs while retrieving."""

from __future__ import annotations

import re
from collections import Counter

from cgr.amr.parsers import AMRConfig, CachedParser
from cgr.chains.concepts import amr_concepts
from cgr.retrieval.paragraphs import (
    CorpusParagraph,
    DenseParagraphRetriever,
    ParagraphChain,
    paragraphs_of,
)


def concepts_of_paragraph(graph) -> set[str]:
    """A paragraph's concepts as the multi-hop hops were measured with: every root links and
    named nodes become their names (the package's reading, not the QA chains' paper rules)."""
    return amr_concepts(graph, merge_roots=True, replace_attributed=False).concepts


class ChainHopRetriever:
    """`frontier`: frontier concepts tried per first-hop paragraph (each one query)."""

    def __init__(self, corpus: list[CorpusParagraph], encoder: str = "minilm", beam_size: int = 5,
                 frontier: int = 4, amr: AMRConfig | None = None):  # fmt: skip
        self.dense = DenseParagraphRetriever(corpus, encoder)
        self.beam_size, self.frontier = beam_size, frontier
        self.titles = frozenset(bare_title(p.title) for p in corpus)
        self.parser = CachedParser(amr or AMRConfig(), progress=False)

    def _concepts(self, texts: list[str]) -> list[set[str]]:
        return [concepts_of_paragraph(g) for g in self.parser.parse(texts)]

    def retrieve_chains(self, queries: list[str], first=None) -> list[list[ParagraphChain]]:
        """`first`: the questions' dense hits when the caller has them (beam_size or more)."""
        first = [h[: self.beam_size] for h in first or self.dense.search(queries, self.beam_size)]
        unique = list({p: None for hits in first for _, p in hits})
        concepts = dict(zip(unique, self._concepts([p.searchable for p in unique]), strict=True))
        asked = self._concepts(queries)
        plans = []  # (question index, first score, first paragraph, shared concept, frontier)
        for qi, (hits, known) in enumerate(zip(first, asked, strict=True)):
            seen = Counter(c for _, p in hits for c in concepts[p])
            for s1, p1 in hits:
                shared = sorted(concepts[p1] & known, key=lambda c: (seen[c], c))
                for concept in frontier_concepts(p1, concepts[p1] - known, seen, self.titles)[
                    : self.frontier
                ]:
                    plans.append((qi, s1, p1, shared[0] if shared else "", concept))
        second = self.dense.search([f"{queries[qi]} {c}" for qi, *_, c in plans], self.beam_size)
        chains: list[list[ParagraphChain]] = [[] for _ in queries]
        for (qi, s1, p1, shared, concept), hits in zip(plans, second, strict=True):
            for s2, p2 in hits:
                if p2 != p1:
                    grounded = concept in f"{p2.title} {p2.text}".lower()
                    chains[qi].append(
                        ParagraphChain((p1, p2), (shared, concept), s1 + s2, grounded)
                    )
        ranked = []
        for qi, hits in enumerate(first):  # a question with no frontier keeps its first hop
            if not chains[qi]:
                chains[qi] = [ParagraphChain((p,), ("",), s, False) for s, p in hits]
            rank = {p: i for i, (_, p) in enumerate(hits)}
            ranked.append(
                sorted(chains[qi], key=lambda c: (rank[c.paragraphs[0]], not c.grounded, -c.score))
            )
        return ranked

    def retrieve(self, queries: list[str], k: int = 10) -> list[list[CorpusParagraph]]:
        """The chains' paragraphs (the question's best first paragraph, the one its best chain
        leads to, ...), then the question's own next dense paragraphs up to `k`."""
        out = []
        searched = self.dense.search(queries, max(k, self.beam_size))  # once, for both uses
        for chains, hits in zip(self.retrieve_chains(queries, searched), searched, strict=True):
            found = paragraphs_of(chains, k)
            out.append((found + [p for _, p in hits if p not in found])[:k])
        return out


_CAPITALISED = re.compile(r"\b[A-Z][\w'-]*")


def frontier_concepts(
    paragraph: CorpusParagraph,
    candidates: set[str],
    seen: Counter,
    titles: frozenset[str] = frozenset(),
) -> list[str]:
    """A first-hop paragraph's concepts the question lacks, most bridge-like first: those that
    name another paragraph of the corpus (`titles`, as `bare_title` writes them: an entity
    with its own article, as a hyperlink would), then names (written capitalised in the
    paragraph, not its own title), then the concepts fewest of the question's first-hop
    paragraphs share (specific, not topical), then by first mention."""
    text = f"{paragraph.title}. {paragraph.text}"
    own = bare_title(paragraph.title)
    lowered = text.lower()
    names = {m.group(0).lower() for m in _CAPITALISED.finditer(paragraph.text)}

    def is_name(concept: str) -> bool:
        return concept.split()[0] in names and concept != paragraph.title.lower()

    def position(concept: str) -> int:
        found = lowered.find(concept)
        return found if found >= 0 else len(lowered)

    usable = [c for c in candidates if not c.isdigit() and len(c) > 2]
    linked = {c for c in usable if c in titles and c != own}
    return sorted(usable, key=lambda c: (c not in linked, not is_name(c), seen[c], position(c), c))


def bare_title(title: str) -> str:
    """ "Kiss and Tell (1945 film)" -> "kiss and tell": a title as an AMR name concept reads."""
    return re.sub(r"\s*\(.*?\)\s*$", "", title).strip().lower()


class FrontierFinder:
    """For chain-guided IRCoT (`loop.query: chains | both`): the next frontier concept of a
    question's paragraphs so far, latest paragraphs first, one not used by an earlier step.
    `corpus`: the paragraphs retrieved from, whose titles rank the concepts that name them first."""

    def __init__(self, amr: AMRConfig | None = None, corpus: list | None = None):
        self.parser = CachedParser(amr or AMRConfig(), progress=False)
        self.titles = frozenset(bare_title(p.title) for p in corpus or [])

    def next(self, question: str, paragraphs: list, used: set[str]) -> str | None:
        texts = [question, *(f"{p.title}. {p.text}" for p in paragraphs)]
        known, *found = [concepts_of_paragraph(g) for g in self.parser.parse(texts)]
        seen = Counter(c for concepts in found for c in concepts)
        for paragraph, concepts in reversed(list(zip(paragraphs, found, strict=True))):
            for concept in frontier_concepts(paragraph, concepts - known, seen, self.titles):
                if concept not in used:
                    return concept
        return None
