"""Small helpers every stage shares: the error type (errors), whole-file writes (files), file hashes and the
joining of shipped parts (hashing), where simul keeps things (paths), UTF-8 at token boundaries (text), data
text made safe for the terminal (safe_text), the limits every reader enforces (limits), language codes
(languages) and the common prefix of two sequences (sequences)."""
