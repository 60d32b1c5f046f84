from cgr.chains.builder import ChainConfig
from cgr.data.records import text_key
from cgr.evidence.pipeline import EvidencePipeline
from cgr.evidence.selection import EvidenceConfig
from cgr.retrieval.factory import RetrievalConfig


def test_chains_read_their_own_book_and_the_evidence_reads_the_open_book(tmp_path):
    """`data.chains.book` (ARC: WorldTree's tablestore) is what `chain_order: open_book` ranks
    by; without it the open book is; `open_book_first` always reads the open book."""
    (tmp_path / "book.txt").write_text("Metals conduct electricity.\n")
    (tmp_path / "tablestore.txt").write_text("Copper is a kind of metal.\n")
    retrieval = RetrievalConfig(method="dense", open_book=str(tmp_path / "book.txt"))
    evidence = EvidenceConfig(open_book_first=1)
    book = {text_key("Metals conduct electricity.")}
    tablestore = {text_key("Copper is a kind of metal.")}

    pipe = EvidencePipeline(retrieval, ChainConfig(chain_order="open_book"), evidence)
    assert pipe._chain_book_keys() == book == pipe._open_book_keys()
    chains = ChainConfig(chain_order="open_book", book=[str(tmp_path / "tablestore.txt")])
    pipe = EvidencePipeline(retrieval, chains, evidence)
    assert (pipe._chain_book_keys(), pipe._open_book_keys()) == (tablestore, book)
    # other orders read no book; without an open book and a chains book there is none
    pipe = EvidencePipeline(retrieval, ChainConfig(chain_order="relevance", book=chains.book))
    assert pipe._chain_book_keys() == frozenset() == pipe._open_book_keys()
    no_book = RetrievalConfig(method="dense", open_book=None)
    assert (
        EvidencePipeline(no_book, ChainConfig(chain_order="open_book"))._chain_book_keys()
        == frozenset()
    )


def test_similar_links_are_searched_with_the_pipelines_base_encoder(tmp_path):
    """`data.chains.link_similarity` in a checkpoint's settings reaches the chain search of
    training, eval and explain alike: the pipeline hands its base encoder to the builder."""
    from cgr.amr.parsers import AMRConfig
    from cgr.reader.examples import ReaderExample
    from cgr.retrieval.base import RetrievedFact

    texts = ["a vaccine can stop an illness", "iron can rust"]
    pool = [RetrievedFact(f"f{i}", t, 1.0) for i, t in enumerate(texts)]
    choices = ["disease", "rust"]
    found = {}
    for similarity in (None, 0.5):
        ex = ReaderExample("q", "What do vaccines help prevent?", ["A", "B"], choices,
                           [f"Vaccines help prevent {c}." for c in choices], answer_index=0,
                           pool=[list(pool) for _ in choices])  # fmt: skip
        chains = ChainConfig(amr=AMRConfig(cache=str(tmp_path / "a.sqlite")),
                             merge_noun_roots=True, link_similarity=similarity)  # fmt: skip
        pipe = EvidencePipeline(RetrievalConfig(method="dense"), chains,
                                EvidenceConfig(order="retrieval"), progress=False)  # fmt: skip
        pipe.select([ex])
        found[similarity] = [c.facts for c in ex.chains[0]]
    assert found == {None: [], 0.5: [("f0",)]}


def test_a_chain_ranker_ranks_the_chains_and_nothing_else(tmp_path):
    """`data.chains.rank_encoder` ranks a choice's chains by its own cosine to "question
    choice" (here the base MiniLM against retrieval scores that put the unrelated fact first);
    the facts read keep the evidence order."""
    from cgr.amr.parsers import AMRConfig
    from cgr.reader.examples import ReaderExample
    from cgr.retrieval.base import RetrievedFact

    pool = [RetrievedFact("f0", "a thermometer measures the temperature of water", 1.0),
            RetrievedFact("f1", "a thermometer can break when the temperature is high", 2.0)]  # fmt: skip
    choices = ["thermometer", "ruler"]
    first, read = {}, {}
    for ranker in (None, "minilm"):
        ex = ReaderExample("q", "Which tool measures the temperature of water?", ["A", "B"],
                           choices, [f"A {c} measures the temperature of water." for c in choices],
                           answer_index=0, pool=[list(pool) for _ in choices])  # fmt: skip
        chains = ChainConfig(amr=AMRConfig(cache=str(tmp_path / "a.sqlite")),
                             merge_noun_roots=True, chain_order="relevance", rank_encoder=ranker)  # fmt: skip
        pipe = EvidencePipeline(RetrievalConfig(method="dense"), chains,
                                EvidenceConfig(order="retrieval"), progress=False)  # fmt: skip
        pipe.select([ex])
        first[ranker] = ex.chains[0][0].facts
        read[ranker] = [f.fact_id for f in ex.facts[0]]
    assert first == {None: ("f1",), "minilm": ("f0",)}
    assert read[None] == read["minilm"]
