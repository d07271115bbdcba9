package jsonv

import (
	"encoding/binary"
	"unicode/utf16"
	"unicode/utf8"
)

// Unquote decodes the string s (with its quotes) as encoding/json does:
// escapes decoded, an unpaired surrogate escape and each byte of invalid
// UTF-8 replaced by U+FFFD. ok is false when s is not a valid string.
func Unquote(s []byte) (string, bool) {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return "", false
	}
	return UnquoteInside(s[1 : len(s)-1])
}

// UnquoteInside is Unquote for the inside of a string, without its quotes
// (an unescaped quote in it makes it invalid).
func UnquoteInside(in []byte) (string, bool) {
	if plain(in) {
		return string(in), true
	}
	out, ok := AppendUnquoted(make([]byte, 0, len(in)+utf8.UTFMax), in)
	return string(out), ok
}

// plain reports whether in decodes to itself: no escape, quote or
// control character, valid UTF-8.
func plain(in []byte) bool {
	var seen uint64 // the high bits of every byte
	i := 0
	for ; i+8 <= len(in); i += 8 {
		v := binary.LittleEndian.Uint64(in[i:])
		if specialBytes(v) != 0 {
			return false
		}
		seen |= v
	}
	for ; i < len(in); i++ {
		if c := in[i]; c < 0x20 || c == '"' || c == '\\' {
			return false
		}
		seen |= uint64(in[i])
	}
	return seen&0x8080808080808080 == 0 || utf8.Valid(in)
}

// AppendUnquoted appends the decoding of in (the inside of a string, as
// UnquoteInside) to dst; ok is false when in is not a valid inside.
func AppendUnquoted(dst, in []byte) ([]byte, bool) {
	for i := 0; i < len(in); {
		c := in[i]
		switch {
		case c == '\\':
			n, ok := unescape(&dst, in, i)
			if !ok {
				return dst, false
			}
			i += n
		case c < 0x20 || c == '"':
			return dst, false
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(in[i:])
			dst = utf8.AppendRune(dst, r) // RuneError for a bad byte, as encoding/json
			i += size
		}
	}
	return dst, true
}

// unescape appends the escape at in[i]=='\\' (a surrogate pair taken
// together) and returns its length.
func unescape(dst *[]byte, in []byte, i int) (int, bool) {
	if i+1 >= len(in) {
		return 0, false
	}
	var c byte
	switch in[i+1] {
	case '"', '\\', '/':
		c = in[i+1]
	case 'b':
		c = '\b'
	case 'f':
		c = '\f'
	case 'n':
		c = '\n'
	case 'r':
		c = '\r'
	case 't':
		c = '\t'
	case 'u':
		r, ok := hexRune(in, i+2)
		if !ok {
			return 0, false
		}
		if !utf16.IsSurrogate(r) {
			*dst = utf8.AppendRune(*dst, r)
			return 6, true
		}
		if r < 0xdc00 && i+12 <= len(in) && in[i+6] == '\\' && in[i+7] == 'u' {
			if r2, ok := hexRune(in, i+8); ok && r2 >= 0xdc00 && r2 <= 0xdfff {
				*dst = utf8.AppendRune(*dst, utf16.DecodeRune(r, r2))
				return 12, true
			}
		}
		*dst = utf8.AppendRune(*dst, utf8.RuneError)
		return 6, true
	default:
		return 0, false
	}
	*dst = append(*dst, c)
	return 2, true
}

func hexRune(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return r, true
}
