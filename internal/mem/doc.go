// Package mem holds what scribe asks of the kernel about its own memory.
package mem
