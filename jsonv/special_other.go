//go:build !amd64 || purego

package jsonv

// stringBody has no vector version here.
func stringBody(b []byte) (n int, escaped bool) { return stringBodyWords(b) }
