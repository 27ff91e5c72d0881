"""Pure-Python helpers the C module calls (argument conversions)."""

import datetime as _dt

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_MS = _dt.timedelta(milliseconds=1)


def timestamp_ms(ts):
    """ms since the Unix epoch for a datetime (naive = UTC), date or ISO-8601 string."""
    if isinstance(ts, str):
        ts = _dt.datetime.fromisoformat(ts)
    if isinstance(ts, _dt.date) and not isinstance(ts, _dt.datetime):
        ts = _dt.datetime(ts.year, ts.month, ts.day)
    if not isinstance(ts, _dt.datetime):
        raise TypeError("timestamp must be an int (ms since the epoch), a datetime, a date "
                        f"or an ISO-8601 string, not {type(ts).__name__}")
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=_dt.timezone.utc)
    return (ts - _EPOCH) // _MS
