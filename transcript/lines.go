package transcript

// A transcript's lines, as a JSONL file holds them.

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
)

// EachLine calls fn for every line of r without its newline, however long
// the line. The buffer passed to fn is only valid during the call.
// terminated is false for a last line with no newline (a torn tail).
func EachLine(r io.Reader, fn func(line []byte, terminated bool)) error {
	br := bufio.NewReaderSize(r, readBufSize(r))
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			if long != nil {
				long = append(long, chunk[:len(chunk)-1]...)
				fn(long, true)
				long = long[:0:0]
				long = nil
			} else {
				fn(chunk[:len(chunk)-1], true)
			}
		case errors.Is(err, bufio.ErrBufferFull):
			long = append(long, chunk...)
		case errors.Is(err, io.EOF):
			long = append(long, chunk...)
			if len(long) > 0 {
				fn(long, false)
			}
			return nil
		default:
			return err
		}
	}
}

// readBufSize is 1 MiB, or the size of a smaller file (a new session's
// files are empty or small, and a store opens many).
func readBufSize(r io.Reader) int {
	const most = 1 << 20
	if f, ok := r.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() < most {
			return max(int(st.Size())+1, 4096)
		}
	}
	if b, ok := r.(*bytes.Reader); ok && b.Len() < most {
		return max(b.Len()+1, 4096)
	}
	return most
}
