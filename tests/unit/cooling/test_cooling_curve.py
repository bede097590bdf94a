"""Curve, hysteresis, rate limit and fail-safe arithmetic, with property tests."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufabric.core.plugins.module_utils.cooling.curve import (
    FULL_DUTY,
    GroupOutput,
    Hysteresis,
    ZoneController,
    clamp_duty,
    curve_duty,
    curve_problems,
    rate_limit,
)

GPU_CURVE = [{"temp": 40, "duty": 30}, {"temp": 60, "duty": 50}, {"temp": 80, "duty": 100}]


def test_curve_interpolates_between_points_and_is_flat_outside():
    assert curve_duty(GPU_CURVE, 20) == 30.0
    assert curve_duty(GPU_CURVE, 40) == 30.0
    assert curve_duty(GPU_CURVE, 50) == 40.0
    assert curve_duty(GPU_CURVE, 70) == 75.0
    assert curve_duty(GPU_CURVE, 80) == 100.0
    assert curve_duty(GPU_CURVE, 95) == 100.0


def test_valid_curve_has_no_problems():
    assert curve_problems(GPU_CURVE, "cooling_zones.gpu.curve", min_duty=20) == []


@pytest.mark.parametrize(
    "points, expected",
    [
        ([{"temp": 40, "duty": 30}, {"temp": 40, "duty": 50}],
         "cooling_zones.gpu.curve[1].temp: temperatures must strictly increase (40 after 40)"),
        ([{"temp": 40, "duty": 60}, {"temp": 60, "duty": 50}],
         "cooling_zones.gpu.curve[1].duty: duties must not decrease as temperature rises (50 after 60)"),
        ([{"temp": 40, "duty": 30}, {"temp": 60, "duty": 120}], "cooling_zones.gpu.curve[1].duty: 120 is outside 0-100 %"),
        ([{"temp": 40, "duty": 10}, {"temp": 60, "duty": 50}], "cooling_zones.gpu.curve[0].duty: 10 is below the zone's min_duty 20"),
        ([{"temp": 40, "duty": 30}],
         "cooling_zones.gpu.curve: a curve needs at least two points {temp, duty}, got [{'temp': 40, 'duty': 30}]"),
        ([{"temp": 40, "duty": 30}, {"temp": "hot", "duty": 50}],
         "cooling_zones.gpu.curve[1]: temp and duty must be finite numbers, got {'temp': 'hot', 'duty': 50}"),
        ([{"temp": 40, "duty": 30}, {"temp": 60, "speed": 50}],
         "cooling_zones.gpu.curve[1]: each point is a mapping with exactly the keys temp and duty, got {'temp': 60, 'speed': 50}"),
        ([{"temp": 40, "duty": 30}, {"temp": 60, "duty": True}],
         "cooling_zones.gpu.curve[1]: temp and duty must be finite numbers, got {'temp': 60, 'duty': True}"),
        ([{"temp": 40, "duty": 30}, {"temp": 400, "duty": 50}],
         "cooling_zones.gpu.curve[1].temp: 400 degrees C is outside -40..150, not a plausible sensor temperature"),
    ],
)
def test_bad_curves_are_named_precisely(points, expected):
    assert expected in curve_problems(points, "cooling_zones.gpu.curve", min_duty=20)


def test_clamp_and_rate_limit():
    assert clamp_duty(130) == 100.0
    assert clamp_duty(5, min_duty=20) == 20.0
    assert rate_limit(None, 80, 10, 5) == 80.0  # first cycle: apply at once
    assert rate_limit(40, 80, 10, 5) == 50.0
    assert rate_limit(80, 40, 10, 5) == 75.0
    assert rate_limit(80, 78, 10, 5) == 78.0


def test_hysteresis_holds_duty_until_temperature_falls_past_the_band():
    band = Hysteresis(3)
    assert [band.update(t) for t in (50, 60, 59, 58, 57.5, 56, 55, 61)] == [50, 60, 60, 60, 60, 59, 58, 61]


def test_zone_controller_applies_hysteresis_then_curve_then_min_duty():
    zone = ZoneController(GPU_CURVE, min_duty=35, hysteresis=2)
    assert zone.duty(30) == 35.0  # curve says 30, min_duty wins
    assert zone.duty(70) == 75.0
    assert zone.duty(69) == 75.0  # inside the band: no change
    assert zone.duty(60) == 55.0  # effective 62: 50 + 2/20 * 50


def test_failsafe_jumps_to_full_duty_without_rate_limit_and_recovers_slowly():
    group = GroupOutput(max_step_up=10, max_step_down=5, min_duty=20)
    assert group.step(30) == 30.0
    assert group.step(30, failsafe=True) == FULL_DUTY
    assert group.step(30) == 95.0  # leaves full duty at max_step_down per cycle
    assert group.step(30) == 90.0


# ---- property tests ---------------------------------------------------------------------------

@st.composite
def valid_curves(draw):
    count = draw(st.integers(min_value=2, max_value=8))
    temps = sorted(draw(st.lists(st.integers(min_value=-40, max_value=150), min_size=count, max_size=count, unique=True)))
    duties = sorted(draw(st.lists(st.floats(min_value=0, max_value=100, allow_nan=False), min_size=count, max_size=count)))
    return [{"temp": t, "duty": d} for t, d in zip(temps, duties)]


temperatures = st.floats(min_value=-60, max_value=200, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(valid_curves())
def test_generated_valid_curves_pass_validation(points):
    assert curve_problems(points, "curve") == []


@settings(max_examples=300, deadline=None)
@given(valid_curves(), temperatures, st.floats(min_value=0, max_value=100))
def test_zone_output_is_bounded(points, temp, min_duty):
    duty = ZoneController(points, min_duty=min_duty, hysteresis=2).duty(temp)
    assert max(min_duty, points[0]["duty"]) - 1e-9 <= duty <= 100.0


@settings(max_examples=300, deadline=None)
@given(valid_curves(), st.lists(temperatures, min_size=2, max_size=30), st.floats(min_value=0, max_value=20))
def test_duty_is_monotone_for_rising_temperature(points, temps, band):
    zone = ZoneController(points, min_duty=0, hysteresis=band)
    duties = [zone.duty(t) for t in sorted(temps)]
    assert all(later >= earlier - 1e-9 for earlier, later in zip(duties, duties[1:]))
    # Rising input passes hysteresis untouched: the duty is exactly the curve's.
    assert duties[-1] == pytest.approx(curve_duty(points, sorted(temps)[-1]))


@settings(max_examples=300, deadline=None)
@given(valid_curves(), temperatures, temperatures)
def test_curve_is_monotone_between_any_two_temperatures(points, first, second):
    low, high = sorted((first, second))
    assert curve_duty(points, low) <= curve_duty(points, high) + 1e-9


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.floats(min_value=0, max_value=100), st.booleans()), min_size=1, max_size=40),
    st.floats(min_value=0.5, max_value=50),
    st.floats(min_value=0.5, max_value=50),
)
def test_group_output_is_bounded_rate_limited_and_failsafe_is_full(steps, up, down):
    group = GroupOutput(max_step_up=up, max_step_down=down, min_duty=10)
    previous = None
    for target, failsafe in steps:
        duty = group.step(target, failsafe)
        assert 10 <= duty <= 100
        if failsafe:
            assert duty == FULL_DUTY
        elif previous is not None:
            assert previous - down - 1e-9 <= duty <= previous + up + 1e-9
        previous = duty


@settings(max_examples=200, deadline=None)
@given(st.lists(temperatures, min_size=1, max_size=40), st.floats(min_value=0, max_value=20))
def test_hysteresis_stays_within_its_band_of_the_input(temps, band):
    play = Hysteresis(band)
    for temp in temps:
        effective = play.update(temp)
        assert temp - 1e-9 <= effective <= temp + band + 1e-9
