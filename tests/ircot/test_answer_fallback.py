"""When the CoT reader never says "answer is", the loop asks the direct-answer prompt over the
same paragraphs for a short answer (counted), instead of scoring the reader's whole paragraph."""

import pytest

from cgr.data.records import OpenQuestion, Paragraph
from cgr.ircot.demos import PromptBuilder, load_demonstrations
from cgr.ircot.loop import IRCoTRunner, LoopConfig, QuestionState
from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # a real model; `-m "not slow"` skips


def test_no_answer_is_falls_back_to_a_short_direct_answer():
    from cgr.generation.llamacpp import LlamaCppGenerator

    generator = LlamaCppGenerator(max_new_tokens=16, context_tokens=2048)
    demos = load_demonstrations(ROOT / "data" / "ircot" / "demos.json")

    def prompts(reader: str) -> PromptBuilder:
        return PromptBuilder(demos, generator.count_tokens, reader, token_budget=600)

    # 2 tokens: the CoT reader cannot get as far as "answer is"
    cfg = LoopConfig(method="oner", reader_max_new_tokens=2, fallback_max_new_tokens=12)
    runner = IRCoTRunner(None, generator, prompts("cot"), prompts("cot"), cfg, prompts("direct"))
    tamberg = Paragraph("Tamberg", "Tamberg is a city. The Sella river flows through Tamberg.")
    state = QuestionState(
        OpenQuestion("t1", "Which river flows through Tamberg?", ["Sella"]), [tamberg]
    )
    try:
        answers = runner._read([state])
    finally:
        generator.close()
    assert runner.counters["reader_without_answer_is"] == 1
    assert runner.counters["answer_fallback_direct"] == 1
    assert answers[0] and len(answers[0].split()) <= 12 and "\n" not in answers[0]
    assert answers[0] != state.reader_output.strip()  # not the reader's cut-off words
