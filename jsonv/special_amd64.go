//go:build !purego

package jsonv

// stringBody (special_amd64.s, SSE2) is stringBodyWords sixteen bytes a
// step: the offset of the first byte of a string's body b that Go has to
// judge (closing quote, control character, a backslash that does not
// start a two-byte escape, or len(b)), and whether it stepped over an
// escape.
//
//go:noescape
func stringBody(b []byte) (n int, escaped bool)
