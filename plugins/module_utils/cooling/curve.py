# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fan-curve arithmetic: piecewise-linear curves, hysteresis, rate limiting, fail-safe duty.

Pure functions and one small state object, stdlib only. The role installs this file unchanged into
the controller package on each host (gpufabric_cooling/cooling_curve.py), so the curve that
`--check-config` and the service use is the code the unit tests and the preflight filter use.
"""

from __future__ import annotations

import math

FULL_DUTY = 100.0


def as_number(value):
    """Return value as float when it is a real, finite number (bool is not), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def curve_problems(points, path, min_duty=0.0):
    """Return sentences describing what is wrong with a curve; empty when it is usable.

    points: a list of {"temp": celsius, "duty": percent}. path names the variable in messages,
    for example "cooling_zones.gpu.curve".
    """
    if not isinstance(points, list) or len(points) < 2:
        return ["%s: a curve needs at least two points {temp, duty}, got %r" % (path, points)]
    problems = []
    previous = None
    for index, point in enumerate(points):
        where = "%s[%d]" % (path, index)
        if not isinstance(point, dict) or set(point) != {"temp", "duty"}:
            problems.append("%s: each point is a mapping with exactly the keys temp and duty, got %r" % (where, point))
            previous = None
            continue
        temp = as_number(point["temp"])
        duty = as_number(point["duty"])
        if temp is None or duty is None:
            problems.append("%s: temp and duty must be finite numbers, got %r" % (where, point))
            previous = None
            continue
        if not 0.0 <= duty <= FULL_DUTY:
            problems.append("%s.duty: %g is outside 0-100 %%" % (where, duty))
        if duty < min_duty:
            problems.append("%s.duty: %g is below the zone's min_duty %g" % (where, duty, min_duty))
        if not -40.0 <= temp <= 150.0:
            problems.append("%s.temp: %g degrees C is outside -40..150, not a plausible sensor temperature" % (where, temp))
        if previous is not None:
            if temp <= previous[0]:
                problems.append("%s.temp: temperatures must strictly increase (%g after %g)" % (where, temp, previous[0]))
            if duty < previous[1]:
                # A falling duty for a rising temperature is never wanted and makes the control loop oscillate.
                problems.append("%s.duty: duties must not decrease as temperature rises (%g after %g)" % (where, duty, previous[1]))
        previous = (temp, duty)
    return problems


def curve_duty(points, temp):
    """Duty for temp on the piecewise-linear curve; flat beyond the first and last points."""
    first, last = points[0], points[-1]
    if temp <= first["temp"]:
        return float(first["duty"])
    if temp >= last["temp"]:
        return float(last["duty"])
    for low, high in zip(points, points[1:]):
        if low["temp"] <= temp <= high["temp"]:
            span = high["temp"] - low["temp"]
            fraction = (temp - low["temp"]) / span
            return float(low["duty"] + fraction * (high["duty"] - low["duty"]))
    # Unreachable for a validated curve; full duty is the safe answer for anything else.
    return FULL_DUTY


def clamp_duty(duty, min_duty=0.0):
    """Bound duty to [min_duty, 100]."""
    return max(float(min_duty), min(FULL_DUTY, float(duty)))


def rate_limit(previous, target, max_step_up, max_step_down):
    """Move from previous toward target by at most max_step_up / max_step_down percent.

    previous is None on the first cycle: the target is applied at once.
    """
    if previous is None:
        return float(target)
    if target > previous:
        return float(min(target, previous + max_step_up))
    return float(max(target, previous - max_step_down))


class Hysteresis:
    """Backlash (play) operator on temperature.

    Rising temperatures pass through at once, so duty follows the curve up without delay; the fans
    slow down only once the temperature has fallen more than `band` degrees below the highest
    recent value, which stops them hunting around a curve point.
    """

    def __init__(self, band):
        self.band = float(band)
        self.effective = None

    def update(self, temp):
        if self.effective is None or temp > self.effective:
            self.effective = float(temp)
        elif temp < self.effective - self.band:
            self.effective = float(temp) + self.band
        return self.effective


class ZoneController:
    """Turns one zone's temperature readings into a duty: hysteresis, then curve, then min_duty."""

    def __init__(self, points, min_duty=0.0, hysteresis=0.0):
        self.points = points
        self.min_duty = float(min_duty)
        self.hysteresis = Hysteresis(hysteresis)

    def duty(self, temp):
        effective = self.hysteresis.update(temp)
        return clamp_duty(curve_duty(self.points, effective), self.min_duty)


class GroupOutput:
    """Rate-limited duty of one fan group; fail-safe jumps to full duty without rate limiting."""

    def __init__(self, max_step_up, max_step_down, min_duty=0.0):
        self.max_step_up = float(max_step_up)
        self.max_step_down = float(max_step_down)
        self.min_duty = float(min_duty)
        self.current = None

    def step(self, target, failsafe=False):
        if failsafe:
            self.current = FULL_DUTY
        else:
            limited = rate_limit(self.current, clamp_duty(target, self.min_duty), self.max_step_up, self.max_step_down)
            self.current = clamp_duty(limited, self.min_duty)
        return self.current
