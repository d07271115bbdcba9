package listing

// JavaScript's rules the listing follows (see listing.go).

import (
	"time"
)

// ---------------------------------------------------------------------------
// JavaScript string semantics

// DateParse is Date.parse for the ISO-8601 forms V8 accepts
// (YYYY[-MM[-DD]][THH:mm[:ss[.f…]]][Z|±HH:mm|±HHmm], also ±YYYYYY years,
// lowercase t/z and a space for T). A date alone is UTC, a date-time
// without an offset local time. Other text gives false (V8's fallback
// parser for free-form dates is not reproduced).
func DateParse(s string) (int64, bool) {
	d := dateScan{s: s}
	year, month, day, ok := d.date()
	if !ok {
		return 0, false
	}
	hour, minute, sec, ms := 0, 0, 0, 0
	hasTime, utc := false, true
	if d.i < len(s) && (s[d.i] == 'T' || s[d.i] == 't' || s[d.i] == ' ') {
		d.i++
		hasTime, utc = true, false
		if hour, minute, sec, ms, ok = d.clock(); !ok {
			return 0, false
		}
	}
	offset, zoned, ok := d.zone(hasTime)
	if !ok || d.i != len(s) {
		return 0, false
	}
	utc = utc || zoned
	if month < 1 || month > 12 || day < 1 || day > 31 || minute > 59 || sec > 59 {
		return 0, false
	}
	if hour > 24 || hour == 24 && (minute != 0 || sec != 0 || ms != 0) {
		return 0, false
	}
	loc := time.UTC
	if !utc {
		loc = time.Local
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, ms*1e6, loc).UnixMilli() - int64(offset)*60000
	if t > 8.64e15 || t < -8.64e15 {
		return 0, false
	}
	return t, true
}

// dateScan reads DateParse's text from i on.
type dateScan struct {
	s string
	i int
}

// num reads n digits.
func (d *dateScan) num(n int) (int, bool) {
	if d.i+n > len(d.s) {
		return 0, false
	}
	v := 0
	for _, c := range []byte(d.s[d.i : d.i+n]) {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	d.i += n
	return v, true
}

// date reads YYYY[-MM[-DD]] or ±YYYYYY[-MM[-DD]].
func (d *dateScan) date() (year, month, day int, ok bool) {
	s := d.s
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg := s[0] == '-'
		d.i++
		if year, ok = d.num(6); !ok || neg && year == 0 {
			return 0, 0, 0, false
		}
		if neg {
			year = -year
		}
	} else if year, ok = d.num(4); !ok {
		return 0, 0, 0, false
	}
	month, day = 1, 1
	if d.i < len(s) && s[d.i] == '-' {
		d.i++
		if month, ok = d.num(2); !ok {
			return 0, 0, 0, false
		}
		if d.i < len(s) && s[d.i] == '-' {
			d.i++
			if day, ok = d.num(2); !ok {
				return 0, 0, 0, false
			}
		}
	}
	return year, month, day, true
}

// clock reads HH:mm[:ss[.f…]] (milliseconds from the first three digits
// of the fraction).
func (d *dateScan) clock() (hour, minute, sec, ms int, ok bool) {
	s := d.s
	if hour, ok = d.num(2); !ok || d.i >= len(s) || s[d.i] != ':' {
		return 0, 0, 0, 0, false
	}
	d.i++
	if minute, ok = d.num(2); !ok {
		return 0, 0, 0, 0, false
	}
	if d.i >= len(s) || s[d.i] != ':' {
		return hour, minute, 0, 0, true
	}
	d.i++
	if sec, ok = d.num(2); !ok {
		return 0, 0, 0, 0, false
	}
	if d.i >= len(s) || s[d.i] != '.' {
		return hour, minute, sec, 0, true
	}
	d.i++
	st := d.i
	for d.i < len(s) && s[d.i] >= '0' && s[d.i] <= '9' {
		if d.i-st < 3 {
			ms = ms*10 + int(s[d.i]-'0')
		}
		d.i++
	}
	if d.i == st {
		return 0, 0, 0, 0, false
	}
	for n := d.i - st; n < 3; n++ {
		ms *= 10
	}
	return hour, minute, sec, ms, true
}

// zone reads Z or ±HH[:]mm (an offset only after a time), if there:
// offset in minutes, zoned whether one was there.
func (d *dateScan) zone(hasTime bool) (offset int, zoned, ok bool) {
	s := d.s
	if d.i >= len(s) {
		return 0, false, true
	}
	switch s[d.i] {
	case 'Z', 'z':
		d.i++
		return 0, true, true
	case '+', '-':
		if !hasTime {
			return 0, false, false
		}
		sign := 1
		if s[d.i] == '-' {
			sign = -1
		}
		d.i++
		oh, ok := d.num(2)
		if !ok {
			return 0, false, false
		}
		if d.i < len(s) && s[d.i] == ':' {
			d.i++
		}
		om, ok := d.num(2)
		if !ok || oh > 23 || om > 59 {
			return 0, false, false
		}
		return sign * (oh*60 + om), true, true
	}
	return 0, false, true
}
