"""The embedded AMR parser: AMR-style PENMAN graphs from spaCy's dependency parse.

It needs no parse model, so it is the parser most users meet first. It is a deterministic
mapping, not a trained parser: lemma concepts, predicates with a `-01` sense, subjects and objects
as `:ARG0`/`:ARG1`/`:ARG2`, modifiers as `:mod`, prepositions as AMR roles (`:location`, `:time`,
`:source`...), named entities as `(p / person :name (n / name :op1 "Isaac" :op2 "Newton"))`,
negation as `:polarity -`, numbers as `:quant`, coordination as `and`/`or` nodes, and copulas
turned into `:domain` ("a whale is a mammal" -> `(m / mammal :domain (w / whale))`).
Its Smatch F1 on the Little Prince AMR bank is measured by `cgr amr smatch` (see README).
"""

from __future__ import annotations

import logging
import re
from collections import Counter

import penman

from cgr.nlp import spacy_pipeline

logging.getLogger("penman").setLevel(logging.ERROR)  # layout notes on re-entrant pronouns

_SKIP_DEPS = {
    "det",
    "punct",
    "aux",
    "auxpass",
    "cc",
    "case",
    "mark",
    "expl",
    "dep",
    "predet",
    "prt",
    "meta",
}
_ENTITY_CONCEPTS = {
    "PERSON": "person", "GPE": "country", "LOC": "location", "ORG": "organization",
    "NORP": "nationality", "FAC": "facility", "EVENT": "event", "WORK_OF_ART": "work-of-art",
    "PRODUCT": "product", "LANGUAGE": "language",
}  # fmt: skip
_PREPOSITION_ROLES = {
    "in": ":location", "inside": ":location", "at": ":location", "on": ":location", "near": ":location",
    "under": ":location", "above": ":location", "below": ":location", "into": ":destination",
    "to": ":destination", "toward": ":direction", "towards": ":direction", "from": ":source",
    "during": ":time", "before": ":time", "after": ":time", "until": ":time", "since": ":time",
    "with": ":instrument", "without": ":instrument", "for": ":purpose", "about": ":topic",
    "of": ":poss", "by": ":manner", "through": ":path", "across": ":path", "like": ":mod",
    "than": ":compared-to", "because": ":cause", "as": ":mod", "between": ":location",
}  # fmt: skip
_MARK_ROLES = {"when": ":time", "while": ":time", "after": ":time", "before": ":time", "if": ":condition",
               "because": ":cause", "since": ":cause", "so": ":purpose", "although": ":concession"}  # fmt: skip
_PRONOUNS = {"me": "i", "my": "i", "mine": "i", "him": "he", "his": "he", "her": "she", "us": "we",
             "our": "we", "them": "they", "their": "they", "its": "it", "your": "you", "myself": "i"}  # fmt: skip
_NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty".split())}  # fmt: skip
_MOD_DETERMINERS = {
    "this",
    "that",
    "these",
    "those",
    "any",
    "every",
    "all",
    "each",
    "other",
    "another",
    "some",
}
_DEGREE = {"very", "too", "so", "more", "most", "less", "least", "quite", "extremely", "rather"}
_MODALS = {"can": "possible-01", "could": "possible-01", "may": "possible-01", "might": "possible-01",
           "must": "obligate-01", "should": "recommend-01"}  # fmt: skip
_PERSONAL = {"i", "you", "he", "she", "we", "they"}
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
_SAFE = re.compile(r"[^a-z0-9\-]+")


class _Builder:
    """Builds the triples of one sentence's graph from its dependency tree."""

    def __init__(self) -> None:
        self.triples: list[tuple[str, str, str]] = []
        self.counts: Counter[str] = Counter()
        self.pronouns: dict[str, str] = {}

    def new_var(self, concept: str) -> str:
        letter = next((c for c in concept if c.isalpha()), "x")
        self.counts[letter] += 1
        n = self.counts[letter]
        return letter if n == 1 else f"{letter}{n}"

    def node(self, concept: str) -> str:
        if concept in _PERSONAL:  # one variable per person in a sentence ("I ... my friend")
            if concept not in self.pronouns:
                self.pronouns[concept] = self.new_var(concept)
                self.triples.append((self.pronouns[concept], ":instance", concept))
            return self.pronouns[concept]
        var = self.new_var(concept)
        self.triples.append((var, ":instance", concept))
        return var

    @staticmethod
    def concept(tok) -> str:
        lower = tok.lower_
        if tok.pos_ == "PRON":
            return _PRONOUNS.get(lower, lower)
        lemma = (
            _SAFE.sub("-", tok.lemma_.lower()).strip("-")
            or _SAFE.sub("-", lower).strip("-")
            or "thing"
        )
        if tok.pos_ in {"VERB"} or (
            tok.pos_ == "AUX" and tok.dep_ == "ROOT" and tok.lemma_ != "be"
        ):
            return f"{lemma}-01"
        return lemma

    def build(self, tok, skip: set[int]) -> str:
        """The variable of `tok`'s subgraph (an `and` node if it heads a coordination)."""
        conjuncts = [c for c in tok.children if c.dep_ == "conj" and c.i not in skip]
        if conjuncts:
            word = next((c.lower_ for c in tok.children if c.dep_ == "cc"), "and")
            coord = self.node("or" if word in {"or", "nor"} else "and")
            for n, t in enumerate([tok, *conjuncts], start=1):
                self.triples.append(
                    (coord, f":op{n}", self._build_one(t, skip | {c.i for c in conjuncts}))
                )
            return coord
        return self._build_one(tok, skip)

    def _entity(self, tok):
        ent = next((e for e in tok.doc.ents if e.start <= tok.i < e.end), None)
        if ent is not None and ent.root == tok and ent.label_ in _ENTITY_CONCEPTS:
            return ent
        return None

    def _build_one(self, tok, skip: set[int]) -> str:
        head = tok
        children = [c for c in tok.children if c.i not in skip]
        domain = None
        if tok.lemma_ == "be" and tok.dep_ in {"ROOT", "ccomp", "advcl", "relcl", "conj"}:
            complement = next((c for c in children if c.dep_ in {"attr", "acomp"}), None)
            subject = next((c for c in children if c.dep_ in {"nsubj", "nsubjpass"}), None)
            if (
                complement is not None
            ):  # copula: the complement is the concept, the subject its domain
                head, domain = complement, subject
                children = [c for c in children if c not in (complement, subject)] + [
                    c for c in complement.children if c.i not in skip
                ]
        entity = self._entity(head)
        if entity is not None:
            var = self.node(_ENTITY_CONCEPTS[entity.label_])
            name = self.node("name")
            self.triples.append((var, ":name", name))
            for n, t in enumerate(entity, start=1):
                self.triples.append((name, f":op{n}", '"' + t.text.replace('"', "") + '"'))
            entity_tokens = {t.i for t in entity}
            children = [c for c in children if c.i not in entity_tokens]
        elif tok.lemma_ == "be" and head is tok:
            var = self.node("be-located-at-91")
        else:
            var = self.node(self.concept(head))
        if domain is not None:
            self.triples.append((var, ":domain", self.build(domain, skip)))
        modal = next((c for c in tok.children if c.dep_ == "aux" and c.lower_ in _MODALS), None)
        if modal is not None:
            wrapper = self.node(_MODALS[modal.lower_])
            self.triples.append((wrapper, ":ARG1", var))
        for child in children:
            self._attach(var, head, child, skip)
        return wrapper if modal is not None else var

    def _attach(self, var: str, head, child, skip: set[int]) -> None:
        dep = child.dep_
        if dep == "neg":
            self.triples.append((var, ":polarity", "-"))
            return
        if dep == "nummod" or (child.like_num and dep in {"amod", "quantmod"}):
            value = str(_NUMBER_WORDS.get(child.lower_, child.text.replace(",", "")))
            if not _NUMBER.match(value):  # "1:45", "3-4": a string constant, quoted for PENMAN
                value = '"' + value.replace('"', "") + '"'
            self.triples.append((var, ":quant", value))
            return
        if dep == "det" and child.lower_ == "no":
            self.triples.append((var, ":polarity", "-"))
            return
        if dep == "det" and child.lower_ in _MOD_DETERMINERS:
            self.triples.append((var, ":mod", self.node(child.lower_)))
            return
        if dep == "advmod" and child.lower_ in _DEGREE:
            self.triples.append((var, ":degree", self.node(child.lemma_.lower())))
            return
        if dep in {"aux"} and child.lower_ in _MODALS:
            return  # handled by the clause wrapper in _build_one
        if dep in _SKIP_DEPS or dep == "conj" or child.is_punct:
            return
        if dep in {"prep", "agent"}:
            objects = [c for c in child.children if c.dep_ in {"pobj", "pcomp"}]
            if not objects:
                return
            role = (
                ":ARG0"
                if dep == "agent"
                else _PREPOSITION_ROLES.get(child.lower_, f":prep-{child.lower_}")
            )
            if head.lemma_ == "be" and role == ":location":
                role = ":ARG2"
            for obj in objects:
                self.triples.append((var, role, self.build(obj, skip)))
            return
        role = {
            "nsubj": ":ARG0", "nsubjpass": ":ARG1", "csubj": ":ARG0", "dobj": ":ARG1", "obj": ":ARG1",
            "attr": ":ARG1", "acomp": ":ARG1", "dative": ":ARG2", "iobj": ":ARG2", "xcomp": ":ARG1",
            "ccomp": ":ARG1", "oprd": ":ARG2", "poss": ":poss", "npadvmod": ":mod", "advmod": ":manner",
        }.get(dep, ":mod")  # fmt: skip
        if dep == "nsubj" and head.lemma_ == "be":
            role = ":ARG1"
        if dep == "relcl":
            rel = next(
                (c for c in child.children if c.tag_ in {"WDT", "WP"} or c.lower_ == "that"), None
            )
            role = (
                ":ARG1-of"
                if rel is not None and rel.dep_ in {"dobj", "pobj", "nsubjpass"}
                else ":ARG0-of"
            )
            self.triples.append(
                (var, role, self.build(child, skip | ({rel.i} if rel is not None else set())))
            )
            return
        if dep == "acl" and child.tag_ in {"VBN", "VBG"}:
            role = ":ARG1-of" if child.tag_ == "VBN" else ":ARG0-of"
            self.triples.append((var, role, self.build(child, skip)))
            return
        if dep == "advcl":
            mark = next((c.lower_ for c in child.children if c.dep_ == "mark"), "")
            role = _MARK_ROLES.get(mark, ":mod")
        self.triples.append((var, role, self.build(child, skip)))


def sentence_graph(sent) -> penman.Graph | None:
    """One spaCy sentence -> a PENMAN graph (None when there is no content word)."""
    root = sent.root
    if root.is_punct or not any(t.is_alpha or t.like_num for t in sent):
        return None
    builder = _Builder()
    top = builder.build(root, set())
    imperative = (
        root.tag_ == "VB"
        and root.i == sent.start
        and not any(c.dep_ in {"nsubj", "nsubjpass", "aux", "expl"} for c in root.children)
    )
    if imperative:  # "Draw me a sheep!" -> :mode imperative, :ARG0 you
        builder.triples.append((top, ":mode", "imperative"))
        if not any(s == top and r == ":ARG0" for s, r, _ in builder.triples):
            builder.triples.append((top, ":ARG0", builder.node("you")))
    return penman.Graph(builder.triples, top=top)


class EmbeddedParser:
    """Backend `embedded`: spaCy en_core_web_sm + the mapping above; no parse model needed."""

    name = "embedded-v1"

    def __init__(self, batch_size: int = 256):
        self.batch_size = batch_size

    @property
    def nlp(self):
        """spaCy on the first parse: a parse the cache answers whole loads nothing (1.2 s)."""
        return spacy_pipeline()

    def parse(self, sentences: list[str]) -> list[str | None]:
        out: list[str | None] = []
        for text, doc in zip(
            sentences, self.nlp.pipe(sentences, batch_size=self.batch_size), strict=True
        ):
            try:
                sents = list(doc.sents)
                graphs = [g for g in (sentence_graph(s) for s in sents) if g is not None]
                if not graphs:
                    out.append(None)
                    continue
                graph = graphs[0] if len(graphs) == 1 else _multi_sentence(graphs)
                graph.metadata["snt"] = text
                out.append(penman.encode(graph, indent=6))
            except Exception:  # a sentence the mapping cannot handle never kills the batch
                out.append(None)
        return out


def _multi_sentence(graphs: list[penman.Graph]) -> penman.Graph:
    """Several sentences in one line become AMR's `multi-sentence` with renamed variables."""
    triples = [("m0", ":instance", "multi-sentence")]
    for n, g in enumerate(graphs, start=1):
        rename = {v: f"{v}s{n}" for v in g.variables()}
        for s, r, t in g.triples:
            triples.append((rename[s], r, rename.get(t, t)))
        triples.append(("m0", f":snt{n}", rename[g.top]))
    return penman.Graph(triples, top="m0")
