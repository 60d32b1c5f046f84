"""The CTranslate2 backend on the real packaged SmolLM2: converted once into the cache (no half
model left behind), then the first reasoning step of three questions comes back as sentences the
IRCoT loop accepts, with and without the demonstrations as CTranslate2's static prompt."""

import pytest

from tests.ircot.helpers import first_steps_as_sentences

pytestmark = pytest.mark.slow  # converts and loads a real model; `-m "not slow"` skips


@pytest.fixture(scope="module")
def generator():
    from cgr.generation.ct2 import CTranslate2Generator

    gen = CTranslate2Generator(max_new_tokens=40, batch_size=3)
    yield gen
    gen.close()


def test_conversion_is_cached_whole(generator):
    from cgr.generation.ct2 import CACHE, converted_model

    folder = converted_model("smollm2", None)
    assert (folder / "model.bin").is_file() and (folder / "source" / "config.json").is_file()
    assert not list(CACHE.glob(".converting-*"))  # nothing half-written left beside it
    stamp = (folder / "model.bin").stat().st_mtime
    assert converted_model("smollm2", None) == folder
    assert (folder / "model.bin").stat().st_mtime == stamp  # read from the cache, not redone


def test_first_reasoning_steps_are_sentences_the_loop_accepts(generator):
    prompts, outputs = first_steps_as_sentences(generator, 40)
    plain = generator.generate(prompts, stop="sentence")  # no static prompt: the same greedy text
    assert [o.text for o in plain] == [o.text for o in outputs]
