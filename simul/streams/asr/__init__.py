"""Speech recognition for simul: partial transcripts of audio with a local Whisper model.

``simul streams asr --audio`` and ``simul streams acl6060 --audio-dir`` read audio
(:mod:`simul.streams.asr.audio`), re-recognize the growing audio of each segment at fixed intervals
(:mod:`simul.streams.asr.growing`) with Whisper through faster-whisper (:mod:`simul.streams.asr.recognizer`,
weights from :mod:`simul.streams.asr.model`), and score the final transcripts (:mod:`simul.streams.asr.wer`).
faster-whisper is the optional ``asr`` extra and is imported only when a recognizer is built, so ``import
simul`` stays fast and works without it.
"""
