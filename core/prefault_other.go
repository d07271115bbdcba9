//go:build !linux

package core

func prefault([]byte) {}
