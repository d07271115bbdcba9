// Package ident checks the identifiers scribe accepts from the outside:
// agent and entry ids, tenants, token hashes, SQL names (a session id is
// core.IsUUID).
//
// They are plain loops, not regular expressions. A bounded repetition
// such as {1,128} compiles to 128 copies of its class, and a package-level
// regexp is compiled at every process start: scribe's cost 11,000
// allocations and 0.9 MB before main ran. The regexps left are compiled
// on first use (sync.OnceValue).
package ident

// Token reports whether s is 1 to max letters, digits, '-' and '_': an
// agent id (max 64), an entry uuid or idempotency key (max 128). Such a
// token is safe as a file name, a NATS subject token and a KV key.
func Token(s string, max int) bool { return span(s, max, tokenByte) }

// RunID reports whether s is 1 to 128 of a Token's bytes, '.' and ':': a
// tool-use id as the SDK accepts it for parent_tool_use_id.
func RunID(s string) bool {
	return span(s, 128, func(c byte) bool { return tokenByte(c) || c == '.' || c == ':' })
}

// Tenant reports whether s is 1 to 64 lower-case letters, digits, '-' and '_'.
func Tenant(s string) bool {
	return span(s, 64, func(c byte) bool { return lowerByte(c) || digitByte(c) || c == '-' || c == '_' })
}

// Hex reports whether s is exactly n lower-case hexadecimal digits.
func Hex(s string, n int) bool {
	return len(s) == n && span(s, n, lowerHexByte)
}

// SQLName reports whether s is an unquoted SQL identifier of at most 63
// bytes: a letter or '_', then letters, digits and '_'.
func SQLName(s string) bool {
	if s == "" || digitByte(s[0]) {
		return false
	}
	return span(s, 63, func(c byte) bool { return letterByte(c) || digitByte(c) || c == '_' })
}

func span(s string, max int, ok func(byte) bool) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func tokenByte(c byte) bool    { return letterByte(c) || digitByte(c) || c == '-' || c == '_' }
func letterByte(c byte) bool   { return lowerByte(c | 0x20) }
func lowerByte(c byte) bool    { return 'a' <= c && c <= 'z' }
func digitByte(c byte) bool    { return '0' <= c && c <= '9' }
func lowerHexByte(c byte) bool { return digitByte(c) || 'a' <= c && c <= 'f' }
