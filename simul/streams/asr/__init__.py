"""Speech recognition for simul: partial transcripts of audio with a local Whisper model.

Two paths, both reading audio with :mod:`~simul.streams.asr.audio` (files, resampling, the energy gate) and
recognizing it with Whisper through faster-whisper (:mod:`~simul.streams.asr.recognizer`, weights from
:mod:`~simul.streams.asr.model`), on one schedule (:mod:`~simul.streams.asr.schedule`: an update every
interval of audio, and when each result is ready):

* a stream per segment (``simul streams asr --audio``, ``simul streams acl6060 --audio-dir``): the segments
  of an audio file (:mod:`~simul.streams.asr.build`), each segment's growing audio recognized again and
  again (:mod:`~simul.streams.asr.growing`);
* a whole recording as one long-form stream (``--audio FILE --longform``): the whisper_streaming loop over a
  trimmed buffer (:mod:`~simul.streams.asr.online`), LocalAgreement-2 over timed words
  (:mod:`~simul.streams.asr.agreement`, whose word key both paths compare by), the stream and its figures
  (:mod:`~simul.streams.asr.talk`), and the reference lines' times on the talk clock derived from the
  recognized words when no segment YAML gives them (:mod:`~simul.streams.asr.segment_times`).

Final transcripts are scored by word error rate (:mod:`~simul.streams.asr.wer`). faster-whisper is the
optional ``asr`` extra and is imported only when a recognizer is built, so ``import simul`` stays fast and
works without it.
"""
