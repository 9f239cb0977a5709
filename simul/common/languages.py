"""Language codes: FLORES-200 (``eng_Latn``) and short ISO 639-1 (``en``) codes to names and tokenizers."""

from __future__ import annotations

from dataclasses import dataclass

from simul.common.errors import SimulError


@dataclass(frozen=True)
class Language:
    """One language as simul needs it: codes, an English name for prompts, and how to tokenize it."""

    short: str
    flores: str
    name: str
    # sacrebleu tokenizer for BLEU on this target language (the SPEC: zh, ja-mecab, else 13a)
    bleu_tokenizer: str = "13a"
    # True for scripts written without spaces between words (lag is then counted in characters)
    unspaced: bool = False
    # other codes datasets use for the same language (FLORES+ writes Mandarin as cmn_Hans)
    aliases: tuple[str, ...] = ()

    @property
    def bcp47(self) -> str:
        """The tag for HTML ``lang`` attributes; the script matters for Han characters (zh-Hans vs ja)."""
        return "zh-Hans" if self.short == "zh" else self.short

    @property
    def dataset_codes(self) -> tuple[str, ...]:
        """Codes to look for in dataset file names, most common first."""
        return (self.flores, *self.aliases, self.short)


_LANGUAGES = [
    Language("en", "eng_Latn", "English"),
    Language("de", "deu_Latn", "German"),
    Language("fr", "fra_Latn", "French"),
    Language("es", "spa_Latn", "Spanish"),
    Language("it", "ita_Latn", "Italian"),
    Language("pt", "por_Latn", "Portuguese"),
    Language("nl", "nld_Latn", "Dutch"),
    Language("cs", "ces_Latn", "Czech"),
    Language("pl", "pol_Latn", "Polish"),
    Language("ru", "rus_Cyrl", "Russian"),
    Language("uk", "ukr_Cyrl", "Ukrainian"),
    Language("tr", "tur_Latn", "Turkish"),
    Language("ar", "arb_Arab", "Arabic"),
    Language("fa", "pes_Arab", "Persian"),
    Language("he", "heb_Hebr", "Hebrew"),
    Language("hi", "hin_Deva", "Hindi"),
    Language("ko", "kor_Hang", "Korean"),
    Language("vi", "vie_Latn", "Vietnamese"),
    Language("id", "ind_Latn", "Indonesian"),
    Language("zh", "zho_Hans", "Chinese", bleu_tokenizer="zh", unspaced=True, aliases=("cmn_Hans",)),
    Language(
        "zh-Hant",
        "zho_Hant",
        "Traditional Chinese",
        bleu_tokenizer="zh",
        unspaced=True,
        aliases=("cmn_Hant",),
    ),
    Language("ja", "jpn_Jpan", "Japanese", bleu_tokenizer="ja-mecab", unspaced=True),
    Language("th", "tha_Thai", "Thai", unspaced=True),
]

_BY_CODE: dict[str, Language] = {}
for _lang in _LANGUAGES:
    for _code in (_lang.short, _lang.flores, *_lang.aliases):
        _BY_CODE[_code.lower()] = _lang
# other spellings seen in dataset file names
_BY_CODE["zh-cn"] = _BY_CODE["zh"]
_BY_CODE["zh-hans"] = _BY_CODE["zh"]
_BY_CODE["zh-tw"] = _BY_CODE["zh-hant"]


def known_codes() -> list[str]:
    """Every short code simul knows, for error messages."""
    return sorted(lang.short for lang in _LANGUAGES)


def get_language(code: str) -> Language:
    """Look up a language by FLORES code (``deu_Latn``) or short code (``de``); case does not matter."""
    lang = _BY_CODE.get(code.strip().lower())
    if lang is None:
        raise SimulError(
            f"unknown language code {code!r}: use a short code ({', '.join(known_codes())}) "
            "or a FLORES-200 code such as eng_Latn, deu_Latn, zho_Hans, jpn_Jpan"
        )
    return lang
