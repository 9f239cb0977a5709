"""Stream files, what every evaluation reads: the format (format), references (references), the stream sets
built from FLORES-200, ACL 60/60 and other test sets (flores, acl6060, text_streams, testsets, parallel_text,
fixed_lag, lag), the talk segments that speech streams are cut by (segments), recognizer partials and
simulated ones (partials, simulate), speech recognition (asr) and statistics of a stream file (stats)."""
