"""Prompt templates as named presets.

A template turns (source language, target language, source prefix) into a prompt whose completion is the
translation. The source text is kept apart from the template text so that it is tokenized without parsing
special tokens: a source that happens to contain ``<end_of_turn>`` cannot break out of the prompt.

Presets:

* ``fewshot``: a completion prompt for base models with a few example pairs written for simul (not taken from
  any test set); decoding stops at the end of the line. The default for the embedded gemma-3-270m.
* ``plain``: the same completion format without examples.
* ``tower``: the Tower+ 2B prompt of the SSBD paper (Table 5).
* ``qwen3``: the Qwen3 4B prompt of the SSBD paper (Table 5), with thinking switched off.
* ``chat``: the chat template stored in the GGUF (``tokenizer.chat_template``), for instruct models, with the
  paper's instruction as the user turn.

Long-form decoding (simul.decoding.longform) puts the last committed sentence pairs of a talk before the
source as *context*: completion templates write them as earlier lines of the same format, chat templates as
earlier user/assistant turns (the history a chat model expects). With no context the prompt is unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import jinja2
import jinja2.sandbox

from simul.common.errors import SimulError, UsageError
from simul.common.languages import Language

# What a prompt is rendered with in the source's place where it is recorded rather than decoded (run.json's
# config.model.prompt, simul.decoding.engine.Engine.describe), and where readers of that record split it.
SOURCE_SLOT = "{source}"

INSTRUCTION = (
    "Translate the {src} source text to {tgt}. "
    "Return only the translation, without any additional explanations or commentary."
)


@dataclass(frozen=True)
class Prompt:
    """A rendered prompt: template text before and after the source, which is tokenized on its own."""

    before: str
    source: str
    after: str

    @property
    def text(self) -> str:
        return self.before + self.source + self.after


@dataclass(frozen=True)
class Template:
    name: str
    description: str
    # Stop decoding at the first newline (completion prompts whose answer is one line).
    stop_at_newline: bool
    before: str
    after: str
    # One earlier (source, translation) pair as it is written at ``{context}`` in ``before``; ``{s}`` and
    # ``{t}`` are the pair's texts. Empty: the template takes no context (it is put before ``before``).
    context_turn: str = ""
    # A GGUF chat template (jinja) renders the context itself, as earlier turns.
    chat_source: str | None = None
    bos_token: str = ""
    eos_token: str = ""

    def render(
        self, src: Language, tgt: Language, source: str, context: Sequence[tuple[str, str]] = ()
    ) -> Prompt:
        if context and self.chat_source is not None:
            return _render_chat(self, src, tgt, source, context)
        fill = {"src": src.name, "tgt": tgt.name}
        before = self.before.replace("{examples}", _examples_block(src, tgt))
        turns = "".join(
            _fill(self.context_turn, fill).replace("{s}", s).replace("{t}", t) for s, t in context
        )
        if "{context}" in before:
            before = _fill(before, fill).replace("{context}", turns)
        else:
            before = turns + _fill(before, fill)
        return Prompt(
            before=before,
            source=source,
            after=_fill(self.after, fill),
        )


def _fill(text: str, fill: dict[str, str]) -> str:
    for key, value in fill.items():
        text = text.replace("{" + key + "}", value)
    return text


# Parallel example sentences for the few-shot prompt, written for simul. The last pair is a sentence
# prefix, to show the model that an unfinished source gets an unfinished translation.
_EXAMPLES: dict[str, tuple[str, ...]] = {
    "en": (
        "The museum is closed on Mondays.",
        "She has been working as a nurse for ten years.",
        "Heavy rain is expected in the north of the country tomorrow, according to the weather service.",
        "The new bridge over the river",
    ),
    "de": (
        "Das Museum ist montags geschlossen.",
        "Sie arbeitet seit zehn Jahren als Krankenschwester.",
        "Laut Wetterdienst wird morgen im Norden des Landes mit starkem Regen gerechnet.",
        "Die neue Brücke über den Fluss",
    ),
    "zh": (
        "博物馆周一闭馆。",
        "她当护士已经十年了。",
        "据气象部门称，明天该国北部预计将有大雨。",
        "河上的新桥",
    ),
    "ja": (
        "博物館は月曜日が休館です。",
        "彼女は看護師として十年間働いています。",
        "気象庁によると、明日は国の北部で大雨が予想されています。",
        "川に架かる新しい橋",
    ),
    "fr": (
        "Le musée est fermé le lundi.",
        "Elle travaille comme infirmière depuis dix ans.",
        "Selon le service météorologique, de fortes pluies sont attendues demain dans le nord du pays.",
        "Le nouveau pont sur la rivière",
    ),
    "es": (
        "El museo cierra los lunes.",
        "Trabaja como enfermera desde hace diez años.",
        "Según el servicio meteorológico, mañana se esperan fuertes lluvias en el norte del país.",
        "El nuevo puente sobre el río",
    ),
}


def _examples_block(src: Language, tgt: Language) -> str:
    sources = _EXAMPLES.get(src.short)
    targets = _EXAMPLES.get(tgt.short)
    if sources is None or targets is None:
        return ""
    return "".join(f"{src.name}: {s}\n{tgt.name}: {t}\n\n" for s, t in zip(sources, targets, strict=True))


PRESETS: dict[str, Template] = {
    "fewshot": Template(
        name="fewshot",
        description="few-shot completion prompt for base models; stops at the end of the line",
        stop_at_newline=True,
        before="{examples}{context}{src}: ",
        after="\n{tgt}:",
        context_turn="{src}: {s}\n{tgt}: {t}\n\n",
    ),
    "plain": Template(
        name="plain",
        description="zero-shot completion prompt; stops at the end of the line",
        stop_at_newline=True,
        before="{context}{src}: ",
        after="\n{tgt}:",
        context_turn="{src}: {s}\n{tgt}: {t}\n\n",
    ),
    "tower": Template(
        name="tower",
        description="Tower+ 2B prompt from the SSBD paper (Table 5)",
        stop_at_newline=False,
        before="{context}<start_of_turn>user\n" + INSTRUCTION + "\n{src}: ",
        after="\n{tgt}:<end_of_turn>\n<start_of_turn>model\n",
        context_turn="<start_of_turn>user\n"
        + INSTRUCTION
        + "\n{src}: {s}\n{tgt}:<end_of_turn>\n<start_of_turn>model\n{t}<end_of_turn>\n",
    ),
    "qwen3": Template(
        name="qwen3",
        description="Qwen3 4B prompt from the SSBD paper (Table 5), thinking off",
        stop_at_newline=False,
        before="<|im_start|>system\n" + INSTRUCTION + "<|im_end|>\n{context}<|im_start|>user\n{src}: ",
        after="<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n{tgt}:",
        context_turn="<|im_start|>user\n{src}: {s}<|im_end|>\n<|im_start|>assistant\n{tgt}: {t}<|im_end|>\n",
    ),
}

TEMPLATE_NAMES = ("auto", "chat", *PRESETS)

_SENTINEL = "\u2063SIMUL_SOURCE\u2063"


_USER_TURN = INSTRUCTION + "\n{src}: {s}\n{tgt}:"


def _render_jinja(
    jinja_source: str, bos_token: str, eos_token: str, messages: list[dict[str, str]]
) -> tuple[str, str]:
    """Render ``messages`` (the last user turn holding the sentinel) and split at the sentinel."""
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)

    def raise_exception(message: str) -> None:
        raise jinja2.TemplateError(message)

    env.globals["raise_exception"] = raise_exception
    try:
        compiled = env.from_string(jinja_source)
        rendered = compiled.render(
            messages=messages,
            add_generation_prompt=True,
            bos_token=bos_token,
            eos_token=eos_token,
        )
    except jinja2.TemplateError as exc:
        raise SimulError(
            f"the model's chat template cannot be rendered ({exc}); pass --template fewshot, tower or qwen3"
        ) from None
    if rendered.count(_SENTINEL) != 1:
        raise SimulError("the model's chat template drops the user message; pass --template fewshot instead")
    before, after = rendered.split(_SENTINEL)
    # llama.cpp adds BOS itself when the model asks for it; do not add it twice.
    if bos_token and before.startswith(bos_token):
        before = before[len(bos_token) :]
    return before, after


def chat_template(jinja_source: str, bos_token: str = "", eos_token: str = "") -> Template:
    """A Template from a GGUF chat template: the instruction and source as one user turn."""
    before, after = _render_jinja(
        jinja_source,
        bos_token,
        eos_token,
        [{"role": "user", "content": _USER_TURN.replace("{s}", _SENTINEL)}],
    )
    return Template(
        name="chat",
        description="the chat template stored in the GGUF",
        stop_at_newline=False,
        before=before,
        after=after,
        chat_source=jinja_source,
        bos_token=bos_token,
        eos_token=eos_token,
    )


def _render_chat(
    template: Template, src: Language, tgt: Language, source: str, context: Sequence[tuple[str, str]]
) -> Prompt:
    """A chat template's prompt with the context pairs as earlier user/assistant turns."""
    assert template.chat_source is not None
    fill = {"src": src.name, "tgt": tgt.name}
    messages: list[dict[str, str]] = []
    for s, t in context:
        messages.append({"role": "user", "content": _fill(_USER_TURN, fill).replace("{s}", s)})
        messages.append({"role": "assistant", "content": t})
    messages.append({"role": "user", "content": _fill(_USER_TURN, fill).replace("{s}", _SENTINEL)})
    before, after = _render_jinja(template.chat_source, template.bos_token, template.eos_token, messages)
    return Prompt(before=before, source=source, after=after)


def get_template(name: str) -> Template:
    """A preset by name (``chat`` and ``auto`` need the model and are resolved by the backend)."""
    try:
        return PRESETS[name]
    except KeyError:
        raise UsageError(f"unknown template {name!r}; choose one of: {', '.join(TEMPLATE_NAMES)}") from None
