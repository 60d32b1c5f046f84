"""`cgr longdoc` end to end on our two papers: D3 with the real SmolLM2, the PARAGRAPH baseline
with the real MiniLM encoder and BM25; BASE's chunks never split a paragraph; bad input is one
line and exit 2."""

import json

import pytest

from cgr.cli import main
from tests.longdoc.test_document import PAPERS

# each test decodes (the cache has a test of its own)
BASE = ["longdoc", "--config", "configs/d3_qasper.yaml", "--data", str(PAPERS),
        "--longdoc.lm_cache", ""]  # fmt: skip


def last_line(capsys) -> list[str]:
    return capsys.readouterr().out.strip().splitlines()[-1].split()


@pytest.mark.slow
def test_d3_runs_with_smollm2_and_accounts_for_its_tokens(tmp_path, capsys):
    out = tmp_path / "d3"
    assert main([*BASE, "--limit", "2", "--method", "d3", "--out", str(out)]) == 0
    last = last_line(capsys)
    assert last[0::2] == ["evidence_f1:", "answer_f1:", "tokens_per_question:"]
    assert float(last[5]) > 100  # the outline alone is more than 100 tokens
    records = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert [r["id"] for r in records] == ["birds-q1", "birds-q2"]
    for r in records:
        assert r["usage"]["sections_calls"] == 1 and r["usage"]["answer_calls"] == 1
        assert r["calls"] == r["evidence_calls"] + 1
        assert r["lm_outputs"][0]["stage"] == "sections"
        assert set(r["sections"]) <= {"Introduction", "Data > Recording Sites", "Data > Annotation",
                                      "Model", "Results", "Conclusion"}  # fmt: skip
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["questions"] == 2 and metrics["settings"]["longdoc"]["method"] == "d3"


@pytest.mark.slow
@pytest.mark.parametrize("retriever", ["dense", "bm25"])
def test_paragraph_baseline_finds_the_evidence_of_plain_questions(tmp_path, capsys, retriever):
    out = tmp_path / retriever
    args = [*BASE, "--method", "paragraph", "--longdoc.retriever", retriever, "--longdoc.top_k", "1",
            "--longdoc.answer", "false", "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    assert float(last_line(capsys)[5]) == 0.0  # no LM read anything
    records = {
        r["id"]: r for r in map(json.loads, (out / "predictions.jsonl").read_text().splitlines())
    }
    for qid in ("birds-q1", "bread-q1", "bread-q2"):
        assert records[qid]["evidence_f1"] == 1.0, records[qid]


@pytest.mark.slow
def test_mapreduce_reads_chunks_calls_from_the_generation_cache(tmp_path, capsys):
    cache = ["--longdoc.lm_cache", str(tmp_path / "lm.sqlite"), "--longdoc.chunk_tokens", "200",
             "--limit", "2"]  # fmt: skip

    def run(method: str, name: str) -> list[dict]:
        assert main([*BASE, *cache, "--method", method, "--out", str(tmp_path / name)]) == 0
        lines = (tmp_path / name / "predictions.jsonl").read_text().splitlines()
        return [json.loads(line) for line in lines]

    chunk = run("chunk", "chunk")
    assert all(r["usage"]["chunk_calls"] > 1 and "cache_hits" not in r["usage"] for r in chunk)
    reduce = run("mapreduce", "mapreduce")
    for c, m in zip(chunk, reduce, strict=True):
        # the first stage is CHUNK's calls, read back with their tokens and first seconds
        assert m["usage"]["cache_hits"] >= c["usage"]["chunk_calls"]
        for key in ("chunk_calls", "chunk_prompt_tokens", "chunk_generated_tokens"):
            assert m["usage"][key] == c["usage"][key]
        first = [o for o in m["lm_outputs"] if o["stage"] == "chunk"]
        assert first == [o for o in c["lm_outputs"] if o["stage"] == "chunk"]
        assert m["seconds"] >= m["usage"]["cache_seconds"] > 0
    again = run("chunk", "again")  # a re-run decodes nothing and accounts the same
    for c, a in zip(chunk, again, strict=True):
        assert a["usage"]["cache_hits"] == c["calls"]
        assert (a["paragraphs"], a["prediction"], a["tokens"]) == (c["paragraphs"], c["prediction"], c["tokens"])  # fmt: skip
        assert abs(a["usage"]["cache_seconds"] - c["seconds"]) < 0.5 * c["seconds"]
    other = ["--generator.max_new_tokens", "40"]  # another generator setting: nothing shared
    assert main([*BASE, *cache, *other, "--method", "chunk", "--out", str(tmp_path / "o")]) == 0
    records = (tmp_path / "o" / "predictions.jsonl").read_text().splitlines()
    assert all("cache_hits" not in json.loads(line)["usage"] for line in records)


@pytest.mark.slow
def test_chunks_hold_whole_paragraphs_within_the_budget():
    from cgr.generation.counting import CountingLM
    from cgr.generation.generator import Generator
    from cgr.longdoc.document import load_qasper
    from cgr.longdoc.methods import LongDocConfig, LongDocQA
    from cgr.longdoc.prompts import PARAGRAPHS_INSTRUCTION, numbered
    from cgr.longdoc.summaries import Summarizer, SummaryConfig

    lm = CountingLM(Generator("smollm2"), "smollm2")
    qa = LongDocQA(LongDocConfig(method="chunk", chunk_tokens=120), lm, Summarizer(SummaryConfig()))
    q = load_qasper(PAPERS)[0]
    paragraphs = list(enumerate(q.document.paragraphs))
    chunks = qa.chunks(q.question, paragraphs)
    assert len(chunks) > 1
    assert [p for c in chunks for p in c] == paragraphs  # in order, none split or lost
    for c in chunks:
        prompt = PARAGRAPHS_INSTRUCTION.format(paragraphs=numbered(c), question=q.question)
        assert lm.count(prompt) <= 120 + 2 * len(c)  # each "[i] text" line counted with its newline


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    out = ["--out", str(tmp_path / "o")]
    assert main([*BASE, "--method", "d4", *out]) == 2
    assert "longdoc.method must be one of" in capsys.readouterr().err
    assert main([*BASE, "--longdoc.chunk_tokens", "10", *out]) == 2
    assert "longdoc.chunk_tokens" in capsys.readouterr().err
    assert main([*BASE, "--longdoc.list_stop", "sentence", *out]) == 2
    assert "longdoc.list_stop" in capsys.readouterr().err
    assert (
        main([*BASE, "--longdoc.select", "likelihood", "--generator.backend", "llamacpp", *out])
        == 2
    )
    assert "needs generator.backend transformers" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    section = {"section_name": "S", "paragraphs": ["Some text."]}
    bad.write_text(
        json.dumps({"p1": {"title": "T", "full_text": [section], "qas": [{"answers": []}]}})
    )
    assert main(["longdoc", "--config", "configs/d3_qasper.yaml", "--data", str(bad), *out]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "['p1'].qas[0].question" in err
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert main([*BASE, "--out", str(blocked / "sub")]) == 2
    assert "--out" in capsys.readouterr().err


@pytest.mark.slow
def test_option_scores_equal_a_full_forward_of_each_option():
    import torch

    from cgr.generation.counting import CountingLM
    from cgr.generation.generator import Generator

    lm = CountingLM(Generator("smollm2"), "smollm2")
    instruction = "Sections:\n* Section: Introduction Birds.\n* Section: Model A network.\n\nQuestion: What model?"
    options = ["Introduction", "Model", "Data > Recording Sites"]
    fast = lm.option_scores(instruction, options, "sections")
    tokenizer, model = lm.generator.tokenizer, lm.generator.model
    prompt = tokenizer(lm.prompt(instruction), add_special_tokens=False).input_ids
    for option, score in zip(options, fast, strict=True):
        tokens = tokenizer(option, add_special_tokens=False).input_ids
        with torch.no_grad():
            logprobs = (
                model(input_ids=torch.tensor([prompt + tokens])).logits[0].float().log_softmax(-1)
            )
        full = sum(float(logprobs[len(prompt) + i - 1, t]) for i, t in enumerate(tokens)) / len(
            tokens
        )
        assert abs(full - score) < 1e-3


@pytest.mark.slow
def test_d3_with_scored_sections_keeps_the_best_ones(tmp_path, capsys):
    out = tmp_path / "scored"
    args = [*BASE, "--limit", "2", "--method", "d3_dense", "--longdoc.select", "likelihood",
            "--longdoc.select_sections", "2", "--longdoc.answer", "false", "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    records = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    for r in records:
        assert len(r["sections"]) == 2 and len(r["lm_outputs"][0]["scores"]) == 6
        assert r["paragraphs"]
    # the content-free scores are computed once for the paper, by the first question
    assert [r["usage"].get("sections_prior_calls", 0) for r in records] == [1, 0]
    assert [r["calls"] for r in records] == [2, 1]
    raw = tmp_path / "raw"
    args[args.index(str(out))] = str(raw)
    assert main([*args, "--longdoc.select_calibration", "none"]) == 0
    uncalibrated = [
        json.loads(line) for line in (raw / "predictions.jsonl").read_text().splitlines()
    ]
    assert [r["calls"] for r in uncalibrated] == [1, 1]
    # calibration subtracts the same per-paper prior from both questions' scores
    shift = [
        [
            a - b
            for a, b in zip(r["lm_outputs"][0]["scores"], u["lm_outputs"][0]["scores"], strict=True)
        ]
        for r, u in zip(records, uncalibrated, strict=True)
    ]
    assert shift[0] == pytest.approx(shift[1], abs=1e-4) and any(abs(x) > 1e-3 for x in shift[0])
