"""The prompts the generator tests share: IRCoT's first reasoning step for three questions."""

from cgr.data.records import Paragraph
from cgr.ircot.demos import PromptBuilder, load_demonstrations
from tests.conftest import ROOT


def first_step_prompts(count_tokens) -> tuple[list[str], str]:
    """Three first-step CoT prompts over our demonstrations (one without paragraphs, one with a
    CoT sentence already), and the demonstrations' shared prefix."""
    demos = load_demonstrations(ROOT / "data" / "ircot" / "demos.json")
    builder = PromptBuilder(demos, count_tokens, "cot", token_budget=600)
    tamberg = [Paragraph("Tamberg", "Tamberg is a city. The Sella river flows through Tamberg.")]
    prompts = [
        builder.build("Which river flows through Tamberg?", tamberg),
        builder.build("Who designed the Lindqvist Tower, the tallest building in Tamberg?", []),
        builder.build("Which river flows through Tamberg?", tamberg, "Tamberg is a city."),
    ]
    return prompts, builder.prefix


def first_steps_as_sentences(generator, max_new_tokens: int) -> tuple[list[str], list]:
    """Runs the three first-step prompts and checks each output is one whole sentence the loop
    accepts (text, final punctuation, no newline, a token count within the budget)."""
    from cgr.generation.generator import first_sentence

    prompts, prefix = first_step_prompts(generator.count_tokens)
    outputs = generator.generate(prompts, stop="sentence", prefix=prefix)
    assert len(outputs) == 3
    for out in outputs:
        assert out.text and out.text == first_sentence(out.text)
        assert out.text[-1] in ".!?" and "\n" not in out.text
        assert 0 < out.new_tokens <= max_new_tokens
    return prompts, outputs
