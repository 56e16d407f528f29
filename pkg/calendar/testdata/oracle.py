"""Oracle for pkg/calendar's slot tests, sharing no code with it.

Reads {"cases": [...]} on stdin; each case is a calendar schedule (name,
zone, frequency, hour, minute, daysOfWeek, daysOfMonth) and a UTC window
[from, to) in Unix seconds. Writes {name: [Unix seconds of each slot]} on
stdout.

The rules, as the product states them (docs/sequences.md, "Schedules and
time zones"): each slot is a local wall time; a wall time that happens
twice (a fold) runs once, at the earlier instant; a wall time that never
happens (a gap) runs at the first instant after the gap, which is the
transition itself. Wall times that land on the same instant run once.

This uses Python's zoneinfo and PEP 495's fold attribute, never Go's
zone transitions: a wall time is valid when it survives the round trip to
UTC and back with fold=0 or fold=1; when it survives neither, it is in a
gap, and the transition is found by bisection over the instants between
the two guesses, as the first one whose clocks show the wall time or later.
"""

import calendar
import datetime as dt
import json
import sys
from zoneinfo import ZoneInfo

UTC = dt.timezone.utc
DAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]  # Python's weekday() order


def shown(ts, zone):
    """What the clocks of zone show at Unix second ts, as a naive datetime."""
    return dt.datetime.fromtimestamp(ts, zone).replace(tzinfo=None)


def resolve(wall, zone):
    guesses = [int(wall.replace(tzinfo=zone, fold=f).timestamp()) for f in (0, 1)]
    if guesses[0] == guesses[1] and shown(guesses[0], zone) == wall:
        return guesses[0]  # an ordinary wall time: one offset, one instant
    valid = [ts for ts in guesses if shown(ts, zone) == wall]
    if valid:
        return min(valid)  # a fold: the earlier instant
    lo, hi = min(guesses), max(guesses)
    assert shown(lo, zone) < wall <= shown(hi, zone), (wall, zone)
    while hi - lo > 1:  # invariant: shown(lo) < wall <= shown(hi)
        mid = (lo + hi) // 2
        if shown(mid, zone) >= wall:
            hi = mid
        else:
            lo = mid
    return hi


def walls_on(case, day):
    minute = case["minute"]
    freq = case["frequency"]
    if freq == "hourly":
        return [dt.datetime(day.year, day.month, day.day, h, minute) for h in range(24)]
    wall = dt.datetime(day.year, day.month, day.day, case["hour"], minute)
    if freq == "daily":
        return [wall]
    if freq == "weekly":
        return [wall] if DAYS[day.weekday()] in case["daysOfWeek"] else []
    if freq == "monthly":
        last = calendar.monthrange(day.year, day.month)[1]
        wanted = {last if d == -1 else d for d in case["daysOfMonth"]}
        return [wall] if day.day in wanted else []
    raise ValueError("unknown frequency " + freq)


def slots(case):
    zone = ZoneInfo(case["zone"])
    lo, hi = case["from"], case["to"]
    day = dt.datetime.fromtimestamp(lo, UTC).date() - dt.timedelta(days=3)
    end = dt.datetime.fromtimestamp(hi, UTC).date() + dt.timedelta(days=3)
    found = set()
    while day <= end:
        for wall in walls_on(case, day):
            ts = resolve(wall, zone)
            if lo <= ts < hi:
                found.add(ts)
        day += dt.timedelta(days=1)
    return sorted(found)


def main():
    cases = json.load(sys.stdin)["cases"]
    json.dump({c["name"]: slots(c) for c in cases}, sys.stdout)


if __name__ == "__main__":
    main()
