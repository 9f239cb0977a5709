"""Prompt templates and language codes."""

from __future__ import annotations

from pathlib import Path

import pytest

from simul.common.errors import SimulError
from simul.common.languages import get_language
from simul.decoding.backend import LlamaBackend
from simul.decoding.engine import resolve_template
from simul.request.templates import PRESETS, chat_template, get_template

EN, DE, ZH, JA = (get_language(c) for c in ("en", "deu_Latn", "zho_Hans", "ja"))


def test_language_codes() -> None:
    assert get_language("eng_Latn") is EN and get_language("EN") is EN
    assert get_language("cmn_Hans") is ZH and ZH.bleu_tokenizer == "zh" and ZH.unspaced
    assert JA.bleu_tokenizer == "ja-mecab" and DE.bleu_tokenizer == "13a"
    with pytest.raises(SimulError, match="unknown language code 'klingon'"):
        get_language("klingon")


def test_fewshot_prompt_ends_where_the_translation_starts() -> None:
    prompt = PRESETS["fewshot"].render(EN, DE, "The cat")
    assert prompt.text.endswith("English: The cat\nGerman:")
    assert prompt.text.count("English:") == 5  # four example pairs and the source
    assert PRESETS["fewshot"].stop_at_newline
    zh = PRESETS["fewshot"].render(EN, ZH, "x").text
    assert "Chinese: 博物馆周一闭馆。" in zh
    # a pair without examples still gets a usable prompt
    assert PRESETS["fewshot"].render(EN, get_language("ko"), "x").text == "English: x\nKorean:"


def test_paper_templates() -> None:
    tower = PRESETS["tower"].render(EN, DE, "Hello").text
    assert tower.startswith("<start_of_turn>user\nTranslate the English source text to German.")
    assert tower.endswith("English: Hello\nGerman:<end_of_turn>\n<start_of_turn>model\n")
    qwen = PRESETS["qwen3"].render(EN, JA, "Hello").text
    assert qwen.startswith("<|im_start|>system\nTranslate the English source text to Japanese.")
    assert "<|im_start|>user\nEnglish: Hello<|im_end|>" in qwen
    assert qwen.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\nJapanese:")
    assert not PRESETS["tower"].stop_at_newline


CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def test_chat_template_from_the_gguf() -> None:
    template = chat_template(CHATML)
    text = template.render(EN, DE, "Good morning").text
    assert text.startswith("<|im_start|>user\nTranslate the English source text to German.")
    assert "English: Good morning\nGerman:<|im_end|>" in text and text.endswith("<|im_start|>assistant\n")
    with pytest.raises(SimulError, match="cannot be rendered"):
        chat_template("{% for %}")
    with pytest.raises(SimulError, match="drops the user message"):
        chat_template("{{ bos_token }}hello")


def test_template_resolution(tiny_model: Path) -> None:
    backend = LlamaBackend(tiny_model, n_ctx=256, n_threads=1)
    try:
        assert resolve_template("auto", backend, default_model=False).name == "fewshot"  # no chat template
        with pytest.raises(SimulError, match="has no chat template"):
            resolve_template("chat", backend, default_model=False)
        assert resolve_template("tower", backend, default_model=False).name == "tower"
    finally:
        backend.close()
    with pytest.raises(SimulError, match="unknown template 'nope'"):
        get_template("nope")
