package admin

// Session management: rename, tag, archive and unarchive, with the same
// effect on disk as the Claude Agent SDK's renameSession, tagSession,
// archiveSession and unarchiveSession (local, no sessionStore):
//
//   - renameSession(id, title) appends {"type":"custom-title",
//     "customTitle":<title trimmed>,"sessionId":id} and a newline to the
//     first non-empty <id>.jsonl of the project folders;
//   - tagSession(id, tag) appends {"type":"tag","tag":<tag cleaned by the
//     SDK's Unicode sanitizer (transcript.SanitizeJSTag) and trimmed>,
//     "sessionId":id}; tagSession(id, null) appends "tag":"";
//   - archiveSession / unarchiveSession write <project>/<id>/archived.json
//     = {"archived":true|false,"at":<ISO time>,"by":...} (0600, folder
//     0700) beside every non-empty copy of the transcript.
//
// Unlike the SDK, scribe takes the session's lock first (a live writer
// makes the change fail with ErrLocked, or wait with LockWait), seals a
// torn last line before appending (and says so), syncs what it wrote, and
// writes archived.json by atomic replace with "by":"scribe".

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/transcript"
)

// ErrEmptyValue is returned for a title or tag that is empty once trimmed.
var ErrEmptyValue = errors.New("empty value")

// ErrUnsupportedTag is returned for a tag whose sanitized form scribe
// cannot reproduce exactly (transcript.ErrUnreproducibleUnicode: characters
// newer than Go's Unicode tables, runs of more than 30 combining marks,
// invalid UTF-8): rather than write a different tag than the SDK, it refuses.
var ErrUnsupportedTag = errors.New("tag the SDK would write differently")

// lockedMains finds a session's transcripts and takes its lock; the
// caller releases it.
func (l Layout) lockedMains(ctx context.Context, what, id string, wait time.Duration) ([]string, *layout.SessionLock, error) {
	mains, err := l.SessionMains(id)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	if len(mains) == 0 {
		return nil, nil, fmt.Errorf("%s: %w: session %s", what, layout.ErrNotFound, id)
	}
	lk, err := l.Lock(ctx, id, wait)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", what, id, err)
	}
	return mains, lk, nil
}

// RenameSession gives a session a custom title, as renameSession does.
func (l Layout) RenameSession(ctx context.Context, id, title string, opt sessions.ManageOptions) (sessions.ManageResult, error) {
	line, err := RenameLine(id, title)
	if err != nil {
		return sessions.ManageResult{}, err
	}
	return l.appendMeta(ctx, "rename", id, line, opt)
}

// RenameLine is the line renameSession appends to give session id its
// title (trimmed as JavaScript trims; an empty title is ErrEmptyValue).
func RenameLine(id, title string) (string, error) {
	t := transcript.JSTrim(title)
	if t == "" {
		return "", fmt.Errorf("rename %s: %w: the title is empty", id, ErrEmptyValue)
	}
	return `{"type":"custom-title","customTitle":` + string(core.AppendJSString(nil, t)) + `,"sessionId":"` + id + `"}`, nil
}

// TagSession sets a session's tag, as tagSession does; clear appends the
// empty tag, as tagSession(id, null) does.
func (l Layout) TagSession(ctx context.Context, id, tag string, clear bool, opt sessions.ManageOptions) (sessions.ManageResult, error) {
	line, err := TagLine(id, tag, clear)
	if err != nil {
		return sessions.ManageResult{}, err
	}
	return l.appendMeta(ctx, "tag", id, line, opt)
}

// TagLine is the line tagSession appends to set session id's tag, or with
// clear to clear it.
func TagLine(id, tag string, clear bool) (string, error) {
	t := ""
	if !clear {
		clean, err := transcript.SanitizeJSTag(tag)
		if err != nil {
			return "", fmt.Errorf("tag %s: %w: %w", id, ErrUnsupportedTag, err)
		}
		if t = transcript.JSTrim(clean); t == "" {
			return "", fmt.Errorf("tag %s: %w: the tag is empty (clear it instead)", id, ErrEmptyValue)
		}
	}
	return `{"type":"tag","tag":` + string(core.AppendJSString(nil, t)) + `,"sessionId":"` + id + `"}`, nil
}

func (l Layout) appendMeta(ctx context.Context, what, id, line string, opt sessions.ManageOptions) (sessions.ManageResult, error) {
	mains, lk, err := l.lockedMains(ctx, what, id, opt.LockWait)
	if err != nil {
		return sessions.ManageResult{}, err
	}
	defer lk.Release()
	sealed, err := appendLineDurably(mains[0], line)
	if err != nil {
		return sessions.ManageResult{}, fmt.Errorf("%s %s: %w", what, id, err)
	}
	res := sessions.ManageResult{SessionID: id, Files: []string{mains[0]}, Line: line}
	if sealed {
		res.SealedTornTail = 1
	}
	return res, nil
}

// appendLineDurably appends line and a newline to an existing, non-empty
// file in one write, first sealing a torn last line with a newline, and
// syncs it. sealed says whether a torn tail was sealed.
func appendLineDurably(path, line string) (sealed bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return false, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("stat %s: %w", path, err)
	}
	if fi.Size() == 0 {
		return false, fmt.Errorf("%w: %s is empty", layout.ErrNotFound, path)
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, fi.Size()-1); err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	buf := make([]byte, 0, len(line)+2)
	if last[0] != '\n' {
		buf, sealed = append(buf, '\n'), true
	}
	buf = append(append(buf, line...), '\n')
	if _, err := f.Write(buf); err != nil {
		return false, fmt.Errorf("append to %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return false, fmt.Errorf("fsync %s: %w", path, err)
	}
	return sealed, nil
}

// SetArchived writes <id>/archived.json beside every copy of the session,
// as archiveSession (archived true) and unarchiveSession (false) do.
func (l Layout) SetArchived(ctx context.Context, id string, archived bool, opt sessions.ManageOptions) (sessions.ManageResult, error) {
	what := "archive"
	if !archived {
		what = "unarchive"
	}
	mains, lk, err := l.lockedMains(ctx, what, id, opt.LockWait)
	if err != nil {
		return sessions.ManageResult{}, err
	}
	defer lk.Release()
	now := time.Now
	if opt.Now != nil {
		now = opt.Now
	}
	doc := fmt.Sprintf(`{"archived":%t,"at":"%s","by":"scribe"}`, archived, layout.ISOTime(now()))
	res := sessions.ManageResult{SessionID: id}
	for _, m := range mains {
		p := filepath.Join(strings.TrimSuffix(m, ".jsonl"), "archived.json")
		if err := layout.ReplaceFile(p, []byte(doc)); err != nil {
			return res, fmt.Errorf("%s %s: %w", what, id, err)
		}
		res.Files = append(res.Files, p)
	}
	return res, nil
}
