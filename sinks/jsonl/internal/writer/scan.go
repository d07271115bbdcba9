package writer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/transcript"
)

// reappendTypes are the per-session state entries Claude Code appends again
// every 32 KiB and at exit, so listings find them in the 64 KiB tail. The
// order is the order of the re-appended block.
var reappendTypes = []string{
	"last-prompt", "custom-title", "ai-title", "tag", "relocated",
	"agent-name", "agent-color", "agent-setting", "mode", "permission-mode", "repl-mode",
	"session-owner", "worktree-state", "pr-link",
}

var reappendIndex = func() map[string]int {
	m := make(map[string]int, len(reappendTypes))
	for i, t := range reappendTypes {
		m[t] = i
	}
	return m
}()

// existing is what a scan of a stored transcript found.
type existing struct {
	uuids    []string
	metadata [][]byte
	// latest holds the last line of each re-append type, by reappendIndex,
	// and latestEnd the file offset just after it.
	latest    [][]byte
	latestEnd []int64
	size      int64
	torn      bool // the file does not end with a newline
	malformed int
}

// scanFile reads a transcript from start to end. A missing file is an
// empty result. Lines of any length are read; malformed ones are counted.
func scanFile(path string) (*existing, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return scanReader(path, bytes.NewReader(nil))
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	return scanReader(path, f)
}

// scanReader is scanFile on r (a file, or a sealed transcript decrypted in
// memory); path names it in errors.
func scanReader(path string, r io.Reader) (*existing, error) {
	res := &existing{latest: make([][]byte, len(reappendTypes)), latestEnd: make([]int64, len(reappendTypes))}
	err := transcript.EachLine(r, func(line []byte, terminated bool) {
		res.size += int64(len(line))
		if terminated {
			res.size++
		} else {
			res.torn = len(line) > 0
		}
		if len(bytes.TrimSpace(line)) == 0 {
			return
		}
		e, perr := core.ParseEntryOwned(line)
		if perr != nil {
			res.malformed++
			return
		}
		if e.UUID != "" {
			res.uuids = append(res.uuids, e.UUID)
			return
		}
		raw := bytes.Clone(e.Raw)
		res.metadata = append(res.metadata, raw)
		if i, ok := reappendIndex[e.Type]; ok {
			res.latest[i] = raw
			res.latestEnd[i] = res.size
		}
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return res, nil
}
