package jsonl

// JavaScript's rules the lite listing follows (see listing.go).

import (
	"time"
)

// ---------------------------------------------------------------------------
// JavaScript string semantics

// liteDateParse is Date.parse for the ISO-8601 forms V8 accepts
// (YYYY[-MM[-DD]][THH:mm[:ss[.f…]]][Z|±HH:mm|±HHmm], also ±YYYYYY years,
// lowercase t/z and a space for T). A date alone is UTC, a date-time
// without an offset local time. Other text gives false (V8's fallback
// parser for free-form dates is not reproduced).
func liteDateParse(s string) (int64, bool) {
	i := 0
	num := func(n int) (int, bool) {
		if i+n > len(s) {
			return 0, false
		}
		v := 0
		for _, c := range []byte(s[i : i+n]) {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		i += n
		return v, true
	}
	var year int
	var ok bool
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg := s[0] == '-'
		i++
		if year, ok = num(6); !ok {
			return 0, false
		}
		if neg {
			if year == 0 {
				return 0, false
			}
			year = -year
		}
	} else if year, ok = num(4); !ok {
		return 0, false
	}
	month, day := 1, 1
	if i < len(s) && s[i] == '-' {
		i++
		if month, ok = num(2); !ok {
			return 0, false
		}
		if i < len(s) && s[i] == '-' {
			i++
			if day, ok = num(2); !ok {
				return 0, false
			}
		}
	}
	hour, minute, sec, ms := 0, 0, 0, 0
	hasTime, utc := false, true
	offset := 0
	if i < len(s) && (s[i] == 'T' || s[i] == 't' || s[i] == ' ') {
		i++
		hasTime = true
		if hour, ok = num(2); !ok {
			return 0, false
		}
		if i >= len(s) || s[i] != ':' {
			return 0, false
		}
		i++
		if minute, ok = num(2); !ok {
			return 0, false
		}
		if i < len(s) && s[i] == ':' {
			i++
			if sec, ok = num(2); !ok {
				return 0, false
			}
			if i < len(s) && s[i] == '.' {
				i++
				st := i
				for i < len(s) && s[i] >= '0' && s[i] <= '9' {
					if i-st < 3 {
						ms = ms*10 + int(s[i]-'0')
					}
					i++
				}
				if i == st {
					return 0, false
				}
				for d := i - st; d < 3; d++ {
					ms *= 10
				}
			}
		}
		utc = false
	}
	if i < len(s) {
		switch s[i] {
		case 'Z', 'z':
			i++
			utc = true
		case '+', '-':
			if !hasTime {
				return 0, false
			}
			sign := 1
			if s[i] == '-' {
				sign = -1
			}
			i++
			oh, ok := num(2)
			if !ok {
				return 0, false
			}
			if i < len(s) && s[i] == ':' {
				i++
			}
			om, ok := num(2)
			if !ok || oh > 23 || om > 59 {
				return 0, false
			}
			offset = sign * (oh*60 + om)
			utc = true
		}
	}
	if i != len(s) {
		return 0, false
	}
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
