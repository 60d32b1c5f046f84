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
