//go:build !linux

package mem

func Prefault([]byte) {}
