"""CGR's training step reads frozen fact vectors from the embedding cache and packs its loss
inputs as index tensors: its loss must equal the straightforward computation (every fact encoded
again, tensors filled element by element, one query-encoder call per term) on a fixed batch."""

import numpy as np
import pytest
import torch

from cgr.chains.search import Chain
from cgr.data.corpus import Corpus
from cgr.reader.examples import ReaderExample
from cgr.retrieval.base import RetrievedFact
from cgr.retrieval.encoders import TextEncoder
from cgr.retrieval.fact_vectors import FactVectors
from cgr.training.cgr_module import CGRModule, _key
from cgr.training.chain_inputs import ChainInputs, ChainRows
from cgr.training.losses import chain_log_prob

pytestmark = pytest.mark.slow  # loads MiniLM three times

FACTS = [
    "copper is a metal",
    "metals conduct electricity",
    "a wire carries electricity",
    "wood is an insulator",
    "insulators do not conduct electricity",
    "a bear hibernates in winter",
    "winter is cold",
    "fur keeps an animal warm",
]
GOLD_OUTSIDE_CORPUS = "an electrical conductor lets electricity flow"  # encoded, not looked up


def chain(*texts: str) -> Chain:
    return Chain(tuple(f"f{FACTS.index(t)}" for t in texts), ("q",) * (len(texts) + 1), texts)


def batch() -> list[ReaderExample]:
    pool = [RetrievedFact(f"f{i}", t, 1.0 - i / 10) for i, t in enumerate(FACTS)]
    chains_q1 = [
        [chain("copper is a metal", "metals conduct electricity"), chain("a wire carries electricity")],
        [chain("wood is an insulator", "insulators do not conduct electricity")],
    ]  # fmt: skip
    chains_q2 = [[chain("fur keeps an animal warm")], []]
    chains_q3 = [[], []]  # no chain: padding rows
    return [
        ReaderExample("q1", "Which conducts electricity?", ["A", "B"], ["copper", "wood"],
                      ["Copper conducts electricity.", "Wood conducts electricity."], [pool[:5]] * 2, 0,
                      chains_q1, [GOLD_OUTSIDE_CORPUS, "copper is a metal"],
                      [[t for c in cs for t in c.texts] for cs in chains_q1], [pool[:5]] * 2),
        ReaderExample("q2", "What keeps a bear warm?", ["A", "B"], ["fur", "claws"],
                      ["Fur keeps a bear warm.", "Claws keep a bear warm."], [pool[5:]] * 2, 0,
                      chains_q2, ["fur keeps an animal warm"],
                      [[t for c in cs for t in c.texts] for cs in chains_q2], [pool[5:]] * 2),
        ReaderExample("q3", "Which is cold?", ["A", "B"], ["winter", "summer"],
                      ["Winter is cold.", "Summer is cold."], [pool[6:7]] * 2, 1, chains_q3, [],
                      [[], []], [pool[6:7]] * 2),
    ]  # fmt: skip


def reference_loss(module: CGRModule, examples: list[ReaderExample]) -> torch.Tensor:
    """The step as first written: facts encoded by the frozen encoder, tensors filled one
    element at a time, the query encoder called once per term."""
    hp = module.hparams
    logits = module(examples)
    labels = torch.tensor([ex.answer_index for ex in examples])
    rewards = (logits.argmax(-1) == labels).float()
    total = module.reader_loss(logits, labels)
    inputs = ChainInputs.from_batch(examples, hp.max_chain_facts, hp.chains_per_hypothesis, "33:0")
    unique = sorted(set(inputs.fact_texts))  # every fact encoded again by the frozen encoder
    vectors = dict(zip(unique, torch.from_numpy(module.evidence.encode(unique)), strict=True))
    T, d = hp.max_chain_facts, module.evidence.dim

    def rows_lp(hyps, rows, reverse):
        ordered = [list(reversed(r)) if reverse else list(r) for r in rows]
        queries = torch.zeros(len(rows), T, d)
        mask = torch.zeros(len(rows), T, dtype=torch.bool)
        candidates = torch.zeros(len(rows), T, d)
        for i, (h, c) in enumerate(zip(hyps, ordered, strict=True)):
            query = h
            for t, fact in enumerate(c):
                queries[i, t] = module.encode_queries([query])[0]
                candidates[i, t] = vectors[fact]
                mask[i, t] = True
                query = f"{query} {module.sep} {fact}"
        targets = torch.arange(len(rows))
        return chain_log_prob(queries, candidates, mask, targets, mask, hp.similarity_scale)

    lp = rows_lp(inputs.hypotheses, inputs.gold, False)
    total = total + module.supervised_loss(lp, torch.tensor([bool(g) for g in inputs.gold]))
    row_hyps = [inputs.hypotheses[q] for q in inputs.row_question]
    fwd = rows_lp(row_hyps, inputs.rows, False)
    bwd = rows_lp(row_hyps, inputs.rows, True)
    weights, n_hyp = torch.tensor(inputs.row_weights), float(inputs.questions_with_chains)
    total = total + module.mle_loss(fwd, bwd, weights, n_hyp)
    row_rewards = rewards[torch.tensor(inputs.row_question)]
    total = total + module.rl_loss(fwd, bwd, weights, row_rewards, rewards.mean(), n_hyp)
    per = T * 20
    facts = torch.zeros(len(examples) * per, d)
    keys = torch.zeros(len(examples) * per, dtype=torch.long)
    valid = torch.zeros(len(examples) * per, dtype=torch.bool)
    for i, texts in enumerate(inputs.evidence):
        for j, t in enumerate(texts[:per]):
            facts[i * per + j], keys[i * per + j], valid[i * per + j] = vectors[t], _key(t), True
    membership = torch.zeros(len(examples), len(keys), dtype=torch.bool)
    for i, texts in enumerate(inputs.evidence):
        if texts:
            membership[i] = torch.isin(keys, torch.tensor([_key(t) for t in texts[:per]])) & valid
    hyps = module.encode_queries(inputs.hypotheses)
    return total + module.global_loss(hyps, facts, membership, hp.similarity_scale, valid)


@pytest.fixture(scope="module")
def module():
    torch.manual_seed(0)
    module = CGRModule(max_length=64, disable_dropout=True, chains_per_hypothesis=2)
    corpus = Corpus(FACTS)
    cached = TextEncoder("minilm").encode(corpus.texts)  # as the embedding cache holds them
    module._facts = FactVectors(module.evidence.encode, module.evidence.dim, [(corpus, cached)])
    return module


def test_step_loss_equals_the_element_by_element_computation(module):
    examples = batch()
    with torch.no_grad():
        fast = module.training_step(examples, 0)
        slow = reference_loss(module, examples)
    assert torch.isfinite(fast)
    assert fast.item() == pytest.approx(slow.item(), rel=1e-5, abs=1e-5)
    # only the gold fact outside the corpus went through the encoder; the rest came from the cache
    assert module._facts.encoded_texts == 1


def test_cached_fact_vectors_equal_encoding_them_again(module):
    texts = [FACTS[3], GOLD_OUTSIDE_CORPUS, FACTS[0], FACTS[3]]
    looked_up = module._facts(texts)
    encoded = module.evidence.encode(texts)
    np.testing.assert_allclose(looked_up, encoded, atol=1e-5)


def test_chain_rows_index_each_step_and_pad_with_minus_one():
    index = {"a": 0, "b": 1, "c": 2}
    rows = ChainRows.build(["h1", "h2"], [["a", "b"], []], index, 3, "[SEP]")
    assert rows.query_texts == ["h1", "h1 [SEP] a"]
    assert rows.positions.tolist() == [[0, 0], [0, 1]]
    assert rows.facts.tolist() == [[0, 1, -1], [-1, -1, -1]]
    back = ChainRows.build(["h1"], [["a", "b", "c"]], index, 3, "[SEP]", reverse=True)
    assert back.query_texts == ["h1", "h1 [SEP] c", "h1 [SEP] c [SEP] b"]
    assert back.facts.tolist() == [[2, 1, 0]]
