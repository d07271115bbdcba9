package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/transcript"
	"github.com/e0dc0000/scribe/transcript/fork"
)

// ErrSessionExists is returned by ForkSession when the new session id is
// already taken.
var ErrSessionExists = errors.New("session already exists")

// ForkSession copies a session into a new one in the same project folder,
// as the Claude Agent SDK's forkSession(sessionID, {dir, upToMessageId,
// title}) does (see fork.Fork for the rules), and returns the new id and
// file.
//
// The source is found as the SDK finds it: the first non-empty
// <sessionID>.jsonl in the project folder(s) of dir, or in any project
// folder when dir is "". It is read whole; lines that do not parse are
// skipped. Unless opt.SourceTitle is set, the source title comes from the
// file's first and last 64 KiB and its <sessionID>/custom-title.json.
//
// The new file is written with mode 0600 to a temporary file, synced,
// then linked into place, which fails rather than replace an existing
// file; a session id already present in any project folder is
// ErrSessionExists.
func (l Layout) ForkSession(ctx context.Context, sessionID, dir string, opt fork.Options) (newID, path string, err error) {
	res, projectDir, err := l.Fork(ctx, sessionID, dir, opt)
	if err != nil {
		return "", "", err
	}
	path = claudedir.MainFile(projectDir, res.SessionID)
	if err := forkWriteNew(path, res.Entries); err != nil {
		return "", "", fmt.Errorf("fork %s: %w", sessionID, err)
	}
	return res.SessionID, path, nil
}

// Fork is ForkSession without the write: the new session's entries, and
// the project folder its source is in. It reads through the layout's FS,
// so a store read in memory is forked by writing the entries through its
// sink.
func (l Layout) Fork(ctx context.Context, sessionID, dir string, opt fork.Options) (res fork.Result, projectDir string, err error) {
	if !claudedir.IsSessionID(sessionID) {
		return res, "", fmt.Errorf("fork: %w: session %q (not a UUID)", layout.ErrBadID, sessionID)
	}
	if opt.NewSessionID != "" && !claudedir.IsSessionID(opt.NewSessionID) {
		return res, "", fmt.Errorf("fork %s: %w: new session %q (not a UUID)", sessionID, layout.ErrBadID, opt.NewSessionID)
	}
	src, _, err := l.reader().FindMain(ctx, sessionID, dir)
	if err != nil {
		return res, "", fmt.Errorf("fork: %w", err)
	}
	if src == "" {
		return res, "", fmt.Errorf("fork: %w: session %s", layout.ErrNotFound, sessionID)
	}
	buf, err := layout.ReadFileFS(l.FS, src)
	if err != nil {
		return res, "", fmt.Errorf("fork %s: %w", sessionID, err)
	}
	if len(buf) == 0 {
		return res, "", fmt.Errorf("fork: %w: session %s", layout.ErrNotFound, sessionID)
	}
	projectDir = filepath.Dir(src)
	if opt.SourceTitle == nil {
		opt.SourceTitle = func() string {
			return fork.SourceTitle(buf, forkSidecarTitle(l.FS, projectDir, sessionID))
		}
	}
	res, err = fork.Fork(forkParseLines(buf), sessionID, opt)
	if err != nil {
		return res, "", fmt.Errorf("fork %s: %w", sessionID, err)
	}
	if err := ctx.Err(); err != nil {
		return res, "", err
	}
	if d, err := l.FindSession(res.SessionID, ""); err != nil {
		return res, "", fmt.Errorf("fork %s: %w", sessionID, err)
	} else if d != "" {
		return res, "", fmt.Errorf("fork %s: %w: %s in %s", sessionID, ErrSessionExists, res.SessionID, d)
	}
	return res, projectDir, nil
}

var (
	forkBOM = []byte("\uFEFF")
	// forkOwnerRE finds a session-owner line, the one kind of line whose
	// leading byte-order mark the SDK's loader removes.
	forkOwnerRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`"type"` + forkJSSpace + `*:` + forkJSSpace + `*"session-owner"`)
	})
)

// forkJSSpace is JavaScript's \s.
const forkJSSpace = `[\t\n\x0B\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}]`

// forkParseLines splits a transcript as the SDK's fork reads it: lines end
// at '\n'; bytes up to ' ' at the start of a line are skipped; blank lines
// and lines that do not parse as an object are skipped.
func forkParseLines(buf []byte) []core.Entry {
	entries := make([]core.Entry, 0, bytes.Count(buf, []byte{'\n'})+1)
	for start := 0; start < len(buf); {
		end := bytes.IndexByte(buf[start:], '\n')
		if end < 0 {
			end = len(buf)
		} else {
			end += start
		}
		p := start
		for p < end && buf[p] <= ' ' {
			p++
		}
		line := buf[p:end]
		start = end + 1
		if len(line) == 0 {
			continue
		}
		if bytes.HasPrefix(line, forkBOM) && bytes.Contains(line, []byte(`"restricted"`)) && forkOwnerRE().Match(line) {
			line = line[len(forkBOM):]
		}
		e, err := core.ParseEntryOwned(line)
		if err != nil {
			continue
		}
		entries = append(entries, e)
	}
	return entries
}

// forkSidecarTitle is <projectDir>/<id>/custom-title.json's customTitle,
// cleaned as the SDK cleans it ("" when absent or unusable).
func forkSidecarTitle(fsys layout.FS, projectDir, id string) string {
	raw, err := layout.ReadFileFS(fsys, filepath.Join(projectDir, id, "custom-title.json"))
	if err != nil {
		return ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	v := m["customTitle"]
	if len(v) == 0 || v[0] != '"' {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return ""
	}
	return transcript.CleanSidecarTitle(s)
}

// forkWriteNew writes a new transcript durably and never over an existing
// file: temp file, fsync, hard link into place (which fails if the name is
// taken), fsync the folder.
func forkWriteNew(path string, entries []core.Entry) error {
	_, err := durable.Replace(path, durable.Options{Perm: layout.FileMode, DirPerm: layout.DirMode, NoReplace: true}, func(w io.Writer) error {
		for i := range entries {
			if _, err := w.Write(entries[i].Raw); err != nil {
				return err
			}
			if _, err := w.Write([]byte{'\n'}); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %s", ErrSessionExists, path)
	}
	return err
}
