package core

// The JSON value scanner that ParseEntry uses, offered to the packages that
// read values inside a row (transcript's rebuild and forks) so that there is
// one reading of JSON. Values are sub-values of a line: nesting counts from
// one level below the line's object.

// JSONFields calls fn for every member of the JSON object v, in order (a
// repeated key is reported each time). It reports false when v is not an
// object or is malformed; fn may have been called for the members before
// the damage.
func JSONFields(v []byte, fn func(key, val []byte)) bool {
	if len(v) == 0 || v[0] != '{' {
		return false
	}
	s := scanner{b: v}
	_, err := s.objectAt(0, 1, func(key []byte, vs int) (int, error) {
		end, err := s.skip(vs, 2)
		if err != nil {
			return 0, err
		}
		fn(key, v[vs:end])
		return end, nil
	})
	return err == nil
}

// JSONObjectEnd reports whether b (surrounding spaces allowed) is one JSON
// object, calling fn for its members in order as JSONFields does.
func JSONObjectEnd(b []byte, fn func(key, val []byte)) bool {
	s := scanner{b: b}
	i := s.ws(0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	end, err := s.objectAt(i, 0, func(key []byte, vs int) (int, error) {
		ve, err := s.skip(vs, 1)
		if err != nil {
			return 0, err
		}
		fn(key, b[vs:ve])
		return ve, nil
	})
	return err == nil && s.ws(end) == len(b)
}

// JSONElems returns the elements of the JSON array v, up to the first
// malformed one (nil when v is not an array or is empty).
func JSONElems(v []byte) [][]byte {
	if len(v) == 0 || v[0] != '[' {
		return nil
	}
	s := scanner{b: v}
	i := s.ws(1)
	if i < len(v) && v[i] == ']' {
		return nil
	}
	var out [][]byte
	for i < len(v) {
		end, err := s.skip(i, 1)
		if err != nil {
			return out
		}
		out = append(out, v[i:end])
		i = s.ws(end)
		if i >= len(v) || v[i] != ',' {
			break
		}
		i = s.ws(i + 1)
	}
	return out
}

// JSONString decodes the JSON string v.
func JSONString(v []byte) (string, bool) {
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	s := scanner{b: v}
	var out string
	if _, err := s.str(0, &out); err != nil {
		return "", false
	}
	return out, true
}
