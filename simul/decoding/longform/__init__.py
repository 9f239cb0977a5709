"""Long-form decoding: a whole talk as one stream, re-translated in a bounded window (talk.py), cut where the
policy says (policy.py)."""

from simul.decoding.longform.policy import WindowPolicy
from simul.decoding.longform.talk import talk_positions_needed, talk_steps

__all__ = ["WindowPolicy", "talk_positions_needed", "talk_steps"]
