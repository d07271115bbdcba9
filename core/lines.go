package core

import (
	"bytes"
	"io"
)

// LineReader cuts a JSONL input into lines that may be parsed in place
// (ParseEntryOwned) and submitted without a copy. The input is read into
// large blocks that are never written again once a line was cut from
// them: a line is a slice of its block, its capacity ending at the line,
// and a new block is started (the unfinished line moved to it) instead of
// reusing one. The garbage collector frees a block once no line of it is
// referenced. That is what Pipeline.Submit asks of Raw: its caller never
// changes it afterwards, since the sinks' queues read it later.
type LineReader struct {
	r     io.Reader
	block []byte
	start int // where the unfinished line begins in block
	err   error
}

// lineBlock is the size of a block; a line longer than the rest of a block
// moves to a block of at least twice its size.
const lineBlock = 4 << 20

// minRead is the least room a block must have for the next read.
const minRead = 64 << 10

// NewLineReader reads r.
func NewLineReader(r io.Reader) *LineReader {
	return &LineReader{r: r, block: make([]byte, 0, lineBlock)}
}

// Read reads once more and appends to lines the complete lines that read
// brought (none, when it ended inside a line), without their newlines. At
// the end of the input a last line without a newline (a torn one) comes
// too, with io.EOF; a read error comes once the lines before it were
// returned. A live stream's lines are returned as they arrive: Read does
// not wait for a block to fill.
func (lr *LineReader) Read(lines [][]byte) ([][]byte, error) {
	if lr.err != nil {
		return lines, lr.err
	}
	if cap(lr.block)-len(lr.block) < minRead {
		tail := lr.block[lr.start:]
		nb := make([]byte, len(tail), max(lineBlock, 2*len(tail)))
		copy(nb, tail)
		lr.block, lr.start = nb, 0
	}
	n, err := lr.r.Read(lr.block[len(lr.block):cap(lr.block)])
	lr.block = lr.block[:len(lr.block)+n]
	for {
		i := bytes.IndexByte(lr.block[lr.start:], '\n')
		if i < 0 {
			break
		}
		end := lr.start + i
		lines = append(lines, lr.block[lr.start:end:end])
		lr.start = end + 1
	}
	if err != nil {
		if err == io.EOF && lr.start < len(lr.block) {
			lines = append(lines, lr.block[lr.start:len(lr.block):len(lr.block)])
			lr.start = len(lr.block)
		}
		lr.err = err
	}
	return lines, err
}
