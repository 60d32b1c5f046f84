"""The llama.cpp backend on the real packaged SmolLM2 GGUF: the first reasoning step of three
questions comes back as one sentence each that the IRCoT loop accepts; the engine listens on
loopback only and closes."""

import pytest

from cgr.data.records import Paragraph
from cgr.errors import ConfigError
from cgr.ircot.demos import PromptBuilder, load_demonstrations
from cgr.ircot.generator import first_sentence
from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # real model loading; `-m "not slow"` skips


@pytest.fixture(scope="module")
def generator():
    from cgr.ircot.llamacpp import LlamaCppGenerator

    gen = LlamaCppGenerator(max_new_tokens=40, context_tokens=2048)
    yield gen
    gen.close()


def test_first_reasoning_steps_are_sentences_the_loop_accepts(generator):
    demos = load_demonstrations(ROOT / "data" / "ircot" / "demos.json")
    builder = PromptBuilder(demos, generator.count_tokens, "cot", token_budget=600)
    tamberg = [Paragraph("Tamberg", "Tamberg is a city. The Sella river flows through Tamberg.")]
    prompts = [
        builder.build("Which river flows through Tamberg?", tamberg),
        builder.build("Who designed the Lindqvist Tower, the tallest building in Tamberg?", []),
        builder.build("In which country is the city that the Sella river flows through?", tamberg),
    ]
    outputs = generator.generate(prompts, stop="sentence", prefix=builder.prefix)
    assert len(outputs) == 3
    for out in outputs:
        assert out.text and out.text == first_sentence(out.text)  # one whole sentence
        assert out.text[-1] in ".!?" and "\n" not in out.text
        assert 0 < out.new_tokens <= 40
    again = generator.generate(prompts[:1], stop="sentence")
    assert again[0].text == outputs[0].text  # greedy: the same prompt gives the same sentence


def test_engine_listens_on_loopback_only_and_closes(generator):
    from cgr.ircot.llamacpp import LlamaCppGenerator

    assert generator.listening_address.startswith("http://127.0.0.1:")
    other = LlamaCppGenerator(max_new_tokens=4, context_tokens=512)
    other.close()
    with pytest.raises(RuntimeError, match="closed"):
        other.generate(["Hello"])


def test_a_model_without_a_gguf_file_is_a_config_error(tmp_path):
    from cgr.ircot.llamacpp import LlamaCppGenerator

    with pytest.raises(ConfigError, match="GGUF"):
        LlamaCppGenerator(str(tmp_path))
