package listing

// The listing: which sessions a listing keeps (see listing.go).

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/jsonv"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// ---------------------------------------------------------------------------
// Filters

// programmaticFields returns the entrypoint (first in the head, else last
// in the tail), the sessionKind of the first head line holding
// "parentUuid": (the whole head when none does), whether the session is a
// nested (child) session (see isNested), and whether that first line
// carries "forkedFrom" (the SDK's forkSession and Claude Code's /branch
// write it on every row they copy).
func (w *Worker) programmaticFields(win *Win) (entrypoint, kind string, nested, forked bool) {
	ep, ok := firstValue(win.Head, &keyEntrypoint)
	if !ok {
		ep, _ = w.tix.lastValue(lkEntrypoint)
	}
	scope := win.Head
	if p := parentUUIDPat.index(win.Head, 0); p >= 0 {
		ls := bytes.LastIndexByte(win.Head[:p], '\n') + 1
		le := len(win.Head)
		if e := bytes.IndexByte(win.Head[p:], '\n'); e >= 0 {
			le = p + e
		}
		scope = win.Head[ls:le]
		forked = bytes.Contains(scope, []byte(`"forkedFrom":`))
	}
	kind, _ = firstValue(scope, &keySessionKind)
	tailLast := -1
	if occ := w.tix.pos[lkParentUUID]; len(occ) > 0 {
		tailLast = occ[len(occ)-1]
	}
	return ep, kind, isNested(win.Head, win.Tail, tailLast), forked
}

func programmatic(entrypoint, kind string, nested bool) bool {
	return sessions.Programmatic(entrypoint, kind, nested)
}

// isNested is the SDK's (0.3.337) test for a child session, which
// Claude Code 2.1.337 marks with "nestedSession":true in every entry's
// envelope: both the head's first "parentUuid": and the tail's last one
// (tailLast; -1 when the tail has none, which tests the tail's first line)
// are followed on their line by a "userType": after whose last occurrence
// comes "nestedSession":true.
func isNested(head, tail []byte, tailLast int) bool {
	first := parentUUIDPat.index(head, 0)
	return first >= 0 && nestedAt(head, first) && nestedAt(tail, tailLast)
}

// nestedAt tests the rest of win's line from at (0 when at < 0).
func nestedAt(win []byte, at int) bool {
	at = max(at, 0)
	seg := win[at:]
	if e := bytes.IndexByte(seg, '\n'); e >= 0 {
		seg = seg[:e]
	}
	o := bytes.LastIndex(seg, []byte(`"userType":`))
	return o >= 0 && bytes.Contains(seg[o:], []byte(`"nestedSession":true`))
}

// continuedIn is the SDK's continued-in check: the newest
// {"type":"continued-in","continuedInSessionId":<uuid>} line of the tail,
// unless a finished assistant reply or a real user prompt comes after it.
func (x *keyIndex) continuedIn() (string, bool) {
	tail := x.win
	found := false
	for _, p := range x.pos[lkType] {
		if bytes.HasPrefix(tail[p+len(`"type":`):], []byte(`"continued-in"`)) {
			found = true
			break
		}
	}
	if !found {
		return "", false
	}
	end := len(tail)
	for end > 0 {
		ls := bytes.LastIndexByte(tail[:end], '\n')
		line := tail[ls+1 : end]
		end = ls
		if id, decided := continuedLine(line); decided {
			return id, id != ""
		}
		if ls < 0 {
			break
		}
	}
	return "", false
}

// continuedLine is continuedIn's test of one line: a continued-in row
// decides (its id, or "" when the id is not a session id), and so does a
// finished turn (""); decided is false for any other line.
func continuedLine(line []byte) (id string, decided bool) {
	isCont := bytes.Contains(line, []byte(`"type":"continued-in"`))
	isChat := bytes.Contains(line, []byte(`"type":"user"`)) || bytes.Contains(line, []byte(`"type":"assistant"`))
	if !isCont && !isChat {
		return "", false
	}
	obj, ok := jsonv.Value(line)
	if !ok || obj[0] != '{' {
		return "", false
	}
	if isCont {
		t, _ := jsonv.GetString(obj, "type")
		id, ok := jsonv.GetString(obj, "continuedInSessionId")
		if t == "continued-in" && ok {
			if !claudedir.IsSessionID(id) {
				return "", true
			}
			return id, true
		}
	}
	return "", isChat && finishedTurn(obj)
}

// finishedTurn: an assistant row that is not an API error and has a
// string stop_reason, or a user row that yields a prompt.
func finishedTurn(obj []byte) bool {
	if t, ok := jsonv.GetString(obj, "type"); ok && t == "assistant" {
		valid := true
		apiErr := false
		if v, ok := jsonv.Get(obj, "isApiErrorMessage"); ok {
			switch string(v) {
			case "true":
				apiErr = true
			case "false":
			default:
				valid = false
			}
		}
		stop := false
		if m, ok := jsonv.Get(obj, "message"); ok {
			if m[0] != '{' {
				valid = false
			} else if sr, ok := jsonv.Get(m, "stop_reason"); ok {
				switch {
				case sr[0] == '"':
					stop = true
				case string(sr) == "null":
				default:
					valid = false
				}
			}
		}
		if valid {
			return !apiErr && stop
		}
	}
	var fb string
	_, ok := promptOfEntry(obj, &fb)
	return ok
}

// ContinuedTargetLive is the SDK's test that the continuation exists: its
// windows hold "parentUuid":, or (for a file over 64 KiB) the first 16 MiB
// do, or the file is longer than that.
func (w *Worker) ContinuedTargetLive(path string) bool {
	w2 := newWorker(w.fsys)
	win, ok, _ := w2.Read(path)
	if !ok {
		return false
	}
	if parentUUIDPat.index(win.Head, 0) >= 0 || parentUUIDPat.index(win.Tail, 0) >= 0 {
		return true
	}
	if win.size <= claudedir.ListWindow {
		return false
	}
	f, err := openFile(w.fsys, path)
	if err != nil {
		return false
	}
	defer f.close()
	if st, err := f.stat(); err != nil || !st.regular {
		return false
	}
	const chunk, maxScan = 1 << 20, 16 << 20
	pat := parentUUIDPat.pat
	buf := make([]byte, chunk+len(pat))
	carry := 0
	for off := int64(0); off < maxScan; {
		n, err := f.pread(buf[carry:carry+chunk], off)
		if err != nil || n == 0 {
			return false
		}
		end := carry + n
		if bytes.Contains(buf[:end], pat) {
			return true
		}
		carry = min(len(pat), end)
		copy(buf, buf[end-carry:end])
		off += int64(n)
	}
	return true
}

// UnderOwn reports whether the recorded cwd is one of the project's own worktrees or
// under one.
func UnderOwn(cwd string, own []string) bool {
	if own == nil {
		return false
	}
	r := strings.ReplaceAll(cwd, `\`, "/")
	for _, o := range own {
		s := strings.ReplaceAll(o, `\`, "/")
		if r == s {
			return true
		}
		if !strings.HasSuffix(s, "/") {
			s += "/"
		}
		if strings.HasPrefix(r, s) {
			return true
		}
	}
	return false
}

// Collision is the SDK's collision filter: a session whose recorded
// cwd is a different, existing directory with the same sanitized name as
// the project path belongs to that other directory.
type Collision struct{}

// Collides reports whether a session recorded in recorded but stored in
// projectPath's folder belongs to that other directory.
func (Collision) Collides(recorded, projectPath string) bool {
	if !sameNameOtherPath(recorded, projectPath) {
		return false
	}
	if networkPath(recorded) || networkPath(projectPath) {
		return false
	}
	abs, err := filepath.Abs(recorded)
	if err != nil {
		return false
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return false
	}
	return sameNameOtherPath(real, layout.Realpath(projectPath))
}

func sameNameOtherPath(a, b string) bool {
	if claudedir.SanitizeFull(a) != claudedir.SanitizeFull(b) {
		return false
	}
	return strings.ReplaceAll(a, `\`, "/") != strings.ReplaceAll(b, `\`, "/")
}

var dotDot = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|[\\/])\.\.([\\/]|$)`) })

// networkPath approximates the SDK's network-path guards: UNC-style
// paths, a ".." segment, /net, /Network and macOS special roots.
func networkPath(p string) bool {
	if len(p) >= 2 && (p[0] == '/' || p[0] == '\\') && (p[1] == '/' || p[1] == '\\') {
		return true
	}
	if dotDot().MatchString(p) {
		return true
	}
	if !strings.HasPrefix(p, "/") {
		return false
	}
	var segs []string
	for _, s := range strings.Split(p, "/") {
		switch s {
		case "", ".":
		case "..":
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
		default:
			segs = append(segs, s)
		}
	}
	if len(segs) == 0 {
		return false
	}
	switch strings.ToLower(segs[0]) {
	case "net", "network", ".vol", ".file", ".nofollow", ".resolve":
		return true
	}
	return false
}
