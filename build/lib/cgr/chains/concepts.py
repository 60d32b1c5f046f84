"""AMR graph -> the concepts the semantic graph is built from, and how they are normalised.

Documented choices (paper §2.2 is silent on most of them; the authors' code differs where noted):
* a concept is lower-cased with its sense suffix removed (`need-01` -> `need`), hyphens become
  spaces; digits are kept (the authors strip them, which merges "6" with every other number);
* nodes (paper §2.2): a node carrying constant attributes is replaced by their values, so
  `(n / name :op1 "Isaac" :op2 "Newton")` becomes "isaac newton" (the `person` above it stays,
  and is a stop concept) and `:quant 6` makes its node "6"; `:polarity -` and `:mode` replace
  nothing (in the authors' code `:polarity -` becomes one empty node that links every negated
  fact);
* roots (paper §2.2: no inter-AMR edge through any AMR's root) are left out of the concepts
  unless `merge_roots` (a package switch) lets them link;
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
    graph: str | penman.Graph | None,
    merge_roots: bool = False,
    stem: bool = False,
    replace_attributed: bool = True,
    merge_noun_roots: bool = False,
) -> AMRConcepts:
    """Concepts of a PENMAN graph; an unparsable or empty graph gives no concepts (no crash).

    The paper's nodes (§2.2): an over-general node that carries constant attributes is replaced
    by them: `(n / name :op1 "Earth")` becomes "earth" (the `planet` above it stays), a
    `(t / temperature-quantity :quant 100)` becomes "100". `:polarity` and `:mode` are grammar,
    not referents, and replace nothing. With `merge_roots=False` (the paper's inter-AMR rule:
    roots, "mostly verbs", would link unrelated sentences) the root's concept is left out of
    `concepts`, so no other AMR can meet it; `True` lets roots link (a package switch).
    `merge_noun_roots` (a package switch) lets a root that is not a predicate frame (no sense
    suffix: `(m / mammal :domain (w / whale))`) link, as copula sentences put their class noun
    there. `replace_attributed=False` (a package switch) is the package's earlier reading: a
    named node becomes its name, other values sit beside their node's concept (`(l / leg
    :quant 6)` gives "leg" and "6"); the authors' code replaces the node, as here.
    """
    g = _decoded(graph)
    if g is None:
        return AMRConcepts()
    if not replace_attributed:
        return _concepts_beside_attributes(g, merge_roots or merge_noun_roots, stem)
    instances = {v: c for v, _, c in g.instances()}
    values: dict[str, list[str]] = {}  # var -> the attribute values that replace its concept
    for source, role, target in g.attributes():
        if source not in instances or role in _NOT_REFERENTS:
            continue
        values.setdefault(source, []).append(str(target).strip('"'))
    concept_of: dict[str, list[str]] = {}
    for var, concept in instances.items():
        if instances[var] == "name" and var in values:  # :op1 "Isaac" :op2 "Newton" -> one name
            concept_of[var] = [" ".join(values[var]).lower()]
        elif var in values:
            concept_of[var] = [normalize_concept(v) for v in values[var]]
        else:
            concept_of[var] = [normalize_concept(concept or "")]
    out = AMRConcepts(root=(concept_of.get(g.top) or [None])[0])
    root_links = merge_roots or (merge_noun_roots and not _SENSE.search(instances.get(g.top) or ""))
    for var, concepts in concept_of.items():
        if root_links or var != g.top:
            out.concepts.update(c for c in concepts if is_content(c))
    for source, role, target in g.edges():
        if source in concept_of and target in concept_of:
            for a in concept_of[source]:
                out.edges.update((a, role, b) for b in concept_of[target])
    return stemmed(out) if stem else out


# attributes that say how a sentence is put (negation, imperative), not what it is about
_NOT_REFERENTS = frozenset({":polarity", ":mode", ":wiki"})


def _decoded(graph: str | penman.Graph | None) -> penman.Graph | None:
    if graph is None:
        return None
    try:
        return penman.decode(graph) if isinstance(graph, str) else graph
    except Exception:
        return None


def _concepts_beside_attributes(g: penman.Graph, merge_roots: bool, stem: bool) -> AMRConcepts:
    """The package's earlier reading (`replace_attributed: false`; the multi-hop paragraph
    hops use it, as measured): a node with a `:name` takes the name's string, other attribute
    values are added beside their node's concept."""
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
