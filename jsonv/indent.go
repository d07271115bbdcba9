package jsonv

// AppendIndent appends the valid JSON value src to dst as encoding/json's
// Indent writes it with the same prefix and indent, byte for byte: a new
// line per element and member, "key": value, empty objects and arrays as {}
// and [], the space between tokens dropped, strings copied as they are. It
// is for values already checked: on invalid input its output is undefined
// (it never panics).
func AppendIndent(dst, src []byte, prefix, indent string) []byte {
	depth := 0
	open := false // a '{' or '[' was written and its first element is not yet
	newline := func() {
		dst = append(dst, '\n')
		dst = append(dst, prefix...)
		for range depth {
			dst = append(dst, indent...)
		}
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		if open && c != '}' && c != ']' {
			open = false
			newline()
		}
		switch c {
		case '"':
			end, _ := StringEnd(src, i)
			if end <= i {
				end = len(src)
			}
			dst = append(dst, src[i:end]...)
			i = end - 1
		case '{', '[':
			dst = append(dst, c)
			depth++
			open = true
		case '}', ']':
			depth--
			if open {
				open = false // empty: {} or []
			} else {
				newline()
			}
			dst = append(dst, c)
		case ',':
			dst = append(dst, ',')
			newline()
		case ':':
			dst = append(dst, ':', ' ')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
