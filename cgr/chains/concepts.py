"""AMR graph -> the concepts the semantic graph is built from, and how they are normalised.

Documented choices (paper §2.2 is silent on most of them; the authors' code differs where noted):
* a concept is lower-cased with its sense suffix removed (`need-01` -> `need`), hyphens become
  spaces; digits are kept (the authors strip them, which merges "6" with every other number);
* a node with a `:name` takes the name's string as its concept ("isaac newton" instead of
  `person`), the `name` node itself is dropped;
* attribute values become concept nodes (`:quant 6` -> "6"), except `:polarity -` (in the
  authors' code it becomes one empty node that links every negated fact);
* stop concepts (`and`, `or`, `thing`, pronouns, light verbs, AMR frames such as
  `be-located-at-91`, question and function words such as `what`, `when`, `other`) never link
  facts: they carry no content shared between sentences;
* with `stem` (data.chains.stem_concepts, on in configs/chains) every word of a concept is reduced to its
  Snowball stem, so "collection" meets "collect" and "requirement" meets "require": on OBQA dev
  the gold fact lands in Ê more often and wrong answers find chains less often (README).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import penman
import snowballstemmer

STOP_CONCEPTS = frozenset(
    "and or thing something someone person name multi sentence be located at have be do get make "
    "it they this that these those i you he she we one - + amr unknown empty graph possible "
    "contrast cause include instead also very most more less kind type example "
    "what when where which who why how then so of some all any each both other another only "
    "certain through order there now just even such same many much can will would may might "
    "must should 1".split()
) | {  # multi-word AMR frames, as normalize_concept spells them
    "be located at",
    "multi sentence",
    "amr unknown",
    "empty graph",
    "have org role",
    "rate entity",
    "have rel role",
    "have degree",
}
_STEMMER = snowballstemmer.stemmer("english")
_SENSE = re.compile(r"-\d+$")


def normalize_concept(concept: str) -> str:
    text = _SENSE.sub("", concept.strip().strip('"').lower())
    return text.replace("-", " ").strip()


def is_content(concept: str) -> bool:
    return (
        bool(concept) and concept not in STOP_CONCEPTS and (len(concept) > 1 or concept.isdigit())
    )


@dataclass
class AMRConcepts:
    """The content of one sentence's AMR: normalised concepts and the edges between them."""

    root: str | None = None
    concepts: set[str] = field(default_factory=set)
    edges: set[tuple[str, str, str]] = field(default_factory=set)  # (concept, role, concept)


def stem_concept(concept: str) -> str:
    return " ".join(_STEMMER.stemWords(concept.split()))


def stemmed(amr: AMRConcepts) -> AMRConcepts:
    """The same AMR with every concept stemmed (edges follow)."""
    return AMRConcepts(
        stem_concept(amr.root) if amr.root else None,
        {stem_concept(c) for c in amr.concepts},
        {(stem_concept(a), role, stem_concept(b)) for a, role, b in amr.edges},
    )


def amr_concepts(
    graph: str | penman.Graph | None, merge_roots: bool = True, stem: bool = False
) -> AMRConcepts:
    """Concepts of a PENMAN graph; an unparsable or empty graph gives no concepts (no crash).

    With `merge_roots=False` (the paper's rule) the root concept is kept out of `concepts`, so it
    cannot be merged with other AMRs; our default merges roots because the embedded parser puts
    copula complements at the root ("a whale is a mammal" -> root `mammal`).
    """
    if graph is None:
        return AMRConcepts()
    try:
        g = penman.decode(graph) if isinstance(graph, str) else graph
    except Exception:
        return AMRConcepts()
    names: dict[str, str] = {}
    instances = {v: c for v, _, c in g.instances()}
    for source, role, target in g.edges():
        if role == ":name":
            ops = sorted(
                (r, t) for s, r, t in g.attributes() if s == target and r.startswith(":op")
            )
            names[source] = " ".join(str(t).strip('"') for _, t in ops).lower()
    concept_of: dict[str, str] = {}
    for var, concept in instances.items():
        if concept == "name" and any(t == var for _, r, t in g.edges() if r == ":name"):
            continue
        concept_of[var] = names.get(var) or normalize_concept(concept or "")
    out = AMRConcepts(root=concept_of.get(g.top))
    for var, concept in concept_of.items():
        if is_content(concept) and (merge_roots or var != g.top):
            out.concepts.add(concept)
    for source, role, target in g.attributes():
        if role in {":polarity", ":instance"} or role.startswith(":op") or role == ":wiki":
            continue
        value = normalize_concept(str(target))
        if is_content(value) and source in concept_of:
            out.concepts.add(value)
            out.edges.add((concept_of[source], role, value))
    for source, role, target in g.edges():
        if source in concept_of and target in concept_of and role != ":name":
            out.edges.add((concept_of[source], role, concept_of[target]))
    return stemmed(out) if stem else out
