"""The speed intervals (simul.metrics.intervals) on records whose timings the test chooses."""

from __future__ import annotations

import json

import numpy as np
import pytest

from simul.decoding.records import StepRecord, StreamResult
from simul.metrics.intervals import apart, speed_intervals
from simul.request.methods import Method

RT, SSBD = Method("rt"), Method("ssbd", beta=0.2)


def step(tokens: int, t_gen: float, t_prompt: float = 0.01) -> StepRecord:
    return StepRecord(
        step=0,
        source="a",
        final=True,
        time_ms=None,
        prompt_tokens=5,
        reused_tokens=0,
        processed_tokens=5,
        draft_tokens=0,
        accepted=0,
        output_ids=list(range(tokens)),
        output="x",
        display="x",
        accepted_chars=0,
        stop="eog",
        t_prompt=t_prompt,
        t_gen=t_gen,
    )


def results(method: Method, seconds: list[float], tokens: int = 10) -> list[StreamResult]:
    return [StreamResult(f"s{k}", method, [step(tokens, t)]) for k, t in enumerate(seconds)]


def one_round(rt: list[float], ssbd: list[float]) -> dict[str, list[StreamResult]]:
    return {RT.key: results(RT, rt), SSBD.key: results(SSBD, ssbd)}


def test_one_round_gives_the_runs_pooled_figures_inside_their_interval() -> None:
    rng = np.random.default_rng(1)
    rt = list(0.5 + 0.2 * rng.random(40))
    ssbd = [t / 2 for t in rt]  # exactly twice as fast on every stream
    got = speed_intervals([one_round(rt, ssbd)], RT.key)
    assert got.rounds == 1 and got.streams == 40
    tps = got.figures[RT.key]["tps"]
    assert tps.value == pytest.approx(400 / sum(rt))
    assert tps.low < tps.value < tps.high  # streams of other lengths: TPS depends on which were drawn
    speedup = got.figures[SSBD.key]["speedup"]
    # paired: every resample draws the same streams for both, so a uniform 2x has no spread at all
    assert speedup.value == pytest.approx(2.0) and speedup.low == pytest.approx(2.0)
    assert speedup.high == pytest.approx(2.0)
    assert got.figures[RT.key]["speedup"].value == pytest.approx(1.0)


def test_rounds_add_the_machines_drift_between_passes() -> None:
    rt = [0.5] * 20
    calm = speed_intervals([one_round(rt, [0.25] * 20)] * 4, RT.key).figures[SSBD.key]["speedup"]
    drifting = speed_intervals(
        [one_round(rt, [0.25 * f] * 20) for f in (0.9, 1.0, 1.1, 1.25)], RT.key
    ).figures[SSBD.key]["speedup"]
    assert calm.high - calm.low == pytest.approx(0.0)
    assert drifting.high - drifting.low > 0.2
    assert drifting.low < 2.0 < drifting.high or drifting.low < drifting.value < drifting.high
    assert drifting.rounds == pytest.approx((2 / 0.9, 2.0, 2 / 1.1, 2 / 1.25))


def test_the_same_records_give_the_same_interval_and_json_is_strict() -> None:
    rng = np.random.default_rng(2)
    rounds = [one_round(list(0.4 + rng.random(10)), list(0.2 + rng.random(10))) for _ in range(3)]
    a = speed_intervals(rounds, RT.key).to_json()
    b = speed_intervals(rounds, RT.key).to_json()
    assert a == b
    zero = speed_intervals([{RT.key: results(RT, [0.0, 0.0])}], RT.key).to_json()
    json.dumps(zero, allow_nan=False)  # no time to divide by: None, not NaN
    assert zero["methods"][RT.key]["tps"]["value"] is None


def test_rounds_must_hold_the_same_streams() -> None:
    with pytest.raises(ValueError, match="round 2"):
        speed_intervals([one_round([1.0, 1.0], [0.5, 0.5]), one_round([1.0], [0.5])], RT.key)


def test_apart_means_no_overlap() -> None:
    base = speed_intervals([one_round([0.5] * 5, [0.25] * 5)], RT.key).figures[SSBD.key]["speedup"]
    slower = speed_intervals([one_round([0.5] * 5, [0.4] * 5)], RT.key).figures[SSBD.key]["speedup"]
    assert apart(base, slower) and not apart(base, base)
