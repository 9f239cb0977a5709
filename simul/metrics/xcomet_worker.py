"""The child process that loads an XCOMET model and scores with it: ``python -m simul.metrics.xcomet_worker``.

simul.metrics.xcomet starts it and talks to it in JSON lines: one request per line on its stdin, one answer
per line on what was its stdout when it started (anything a library prints afterwards goes to stderr, which
the parent keeps in a file for its error messages). Requests:

* ``{"op": "load", "checkpoint": PATH}``: load the model with unbabel-comet's ``load_from_checkpoint``;
  answers ``{"ok": true, "max_tokens": N, "class": NAME}``;
* ``{"op": "score", "data": [{"src", "mt", "ref"}, ...], "batch_size": B}``: ``predict`` on CPU; answers
  ``{"ok": true, "scores": [...], "details": [{"spans", "truncated", "tokens"}, ...]}``.

A failure answers ``{"ok": false, "error": "..."}``. The process ends when its stdin closes. If it is
killed (by the out-of-memory killer, say), the parent reads the end of the pipe and the signal from the exit
status. Test hooks: simul.testing.kill.

**Truncation.** unbabel-comet cuts each input (hypothesis, source, reference) to the encoder's
``max_positions - 2`` tokens with its special tokens (XLM-RoBERTa-XL: 512 usable positions), and cuts a
joined input [mt:src:ref] to ``max_positions`` when its tokens without specials exceed ``max_positions - (1 +
3 * size_separator)`` (``comet/encoders/base.py``, ``prepare_sample`` and ``concat_sequences``). A segment is
reported ``truncated`` when either happens to it, with the token counts that decided.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import IO, Any

from simul.testing.kill import kill_point


def _answer(out: IO[str], obj: dict[str, Any]) -> None:
    out.write(json.dumps(obj, ensure_ascii=False) + "\n")
    out.flush()


def token_counts(model: Any, texts: Sequence[str]) -> list[int]:
    """Tokens of each text with the encoder's special tokens, untruncated."""
    encoded = model.encoder.tokenizer(list(texts), add_special_tokens=True, truncation=False)
    return [len(ids) for ids in encoded["input_ids"]]


def truncation(model: Any, data: Sequence[dict[str, str]]) -> list[tuple[bool, dict[str, int]]]:
    """Per triple: whether unbabel-comet cuts the model's input, and the token counts of mt, src and ref."""
    limit = int(model.encoder.max_positions)
    separator = int(model.encoder.size_separator)
    counts = {key: token_counts(model, [d[key] for d in data]) for key in ("mt", "src", "ref")}
    out = []
    for i in range(len(data)):
        tokens = {key: counts[key][i] for key in ("mt", "src", "ref")}
        single = any(n > limit - 2 for n in tokens.values())
        # each input is cut to limit - 2 first; then the joined one, without the <s> ... </s> of each
        inner = sum(min(n, limit - 2) - 2 for n in tokens.values())
        joined = inner > limit - (1 + 3 * separator)
        out.append((single or joined, tokens))
    return out


def _score(model: Any, data: list[dict[str, str]], batch_size: int) -> dict[str, Any]:
    kill_point("score")
    cut = truncation(model, data)
    result = model.predict(data, batch_size=batch_size, gpus=0, progress_bar=False)
    spans = result.metadata.error_spans if "metadata" in result else [[] for _ in data]
    details = []
    for (truncated, tokens), segment_spans in zip(cut, spans, strict=True):
        details.append(
            {
                "spans": [
                    {
                        "text": str(span["text"]),
                        "start": int(span["start"]),
                        "end": int(span["end"]),
                        "severity": str(span["severity"]),
                        "confidence": round(float(span["confidence"]), 4),
                    }
                    for span in segment_spans
                ],
                "truncated": truncated,
                "tokens": tokens,
            }
        )
    return {"ok": True, "scores": [float(x) for x in result.scores], "details": details}


def serve(requests: IO[str], out: IO[str]) -> None:
    from simul.metrics.comet_model import quiet

    model: Any = None
    for line in requests:
        request = json.loads(line)
        try:
            if request["op"] == "load":
                kill_point("load")
                with quiet():
                    from comet import load_from_checkpoint

                    model = load_from_checkpoint(request["checkpoint"])
                _answer(
                    out,
                    {
                        "ok": True,
                        "max_tokens": int(model.encoder.max_positions),
                        "class": str(model.hparams.get("class_identifier", "")),
                    },
                )
            elif request["op"] == "score":
                with quiet():
                    _answer(out, _score(model, request["data"], int(request["batch_size"])))
            else:
                _answer(out, {"ok": False, "error": f"unknown request {request['op']!r}"})
        except Exception as exc:  # one line back to the parent, which reports it as the scorer's failure
            text = str(exc).strip().splitlines()
            _answer(out, {"ok": False, "error": f"{type(exc).__name__}: {text[0][:300] if text else ''}"})


def main() -> int:
    # the answers go to the original stdout; whatever the libraries print afterwards goes to stderr
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    serve(sys.stdin, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
