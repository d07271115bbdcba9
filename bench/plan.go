package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"path/filepath"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// eachLine calls fn for every line of the files, in order, without its
// "\n", however long the line; blank lines included. The slice is only
// valid during the call. Both in-process cases and the plan read through it.
func eachLine(files []string, fn func(file int, line []byte) error) error {
	for fi, name := range files {
		if err := eachLineOf(name, fi, fn); err != nil {
			return err
		}
	}
	return nil
}

func eachLineOf(name string, fi int, fn func(file int, line []byte) error) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			line := chunk[:len(chunk)-1]
			if long != nil {
				long = append(long, line...)
				line, long = long, nil
			}
			if err := fn(fi, line); err != nil {
				return err
			}
		case errors.Is(err, bufio.ErrBufferFull):
			long = append(long, chunk...)
		case errors.Is(err, io.EOF):
			long = append(long, chunk...)
			if len(long) > 0 {
				return fn(fi, long)
			}
			return nil
		default:
			return fmt.Errorf("read %s: %w", name, err)
		}
	}
}

func blank(line []byte) bool { return len(bytes.TrimSpace(line)) == 0 }

// router gives a line without a sessionId the session of the lines before
// it in the same file, and holds leading lines until a session is known,
// exactly as `scribe record` does.
type router struct {
	current []string // per input file
	pre     []core.Entry
}

func newRouter(files int) *router { return &router{current: make([]string, files)} }

// route returns the entries ready to submit, in order (nil while held).
func (r *router) route(file int, e core.Entry, out []core.Entry) []core.Entry {
	out = out[:0]
	if e.SessionID == "" {
		e.SessionID = r.current[file]
	} else {
		r.current[file] = e.SessionID
	}
	if e.SessionID == "" {
		r.pre = append(r.pre, e)
		return out
	}
	for _, p := range r.pre {
		p.SessionID = e.SessionID
		out = append(out, p)
	}
	r.pre = r.pre[:0]
	return append(out, e)
}

// fileKey is the transcript file the jsonl sink writes an entry to: the
// session's main file, or a subagent's.
func fileKey(e *core.Entry) string {
	if e.AgentID != "" && (e.IsSidechain || e.IsMetadata()) {
		return e.SessionID + "/" + e.AgentID
	}
	return e.SessionID + "/"
}

// outFile is what one transcript file must hold after a scribe run.
type outFile struct {
	Key     string
	Session string
	Agent   string
	Rel     string // path under the config folder
	// UUIDLines lines with a uuid, byte for byte in this order (Chain).
	UUIDLines int
	Chain     uint64
	// MetaLines uuid-less lines at least (the sink may append them again).
	MetaLines int
	// PeerBytes is what the plain append writes to this file.
	PeerBytes int64

	idx          int32
	materialized bool
	heldMeta     int
	cwd          string
}

// plan is the workload as the cases will see it, worked out before timing.
type plan struct {
	Inputs []string
	// DefaultCWD names the project folder of a session whose lines carry
	// no cwd: the library case gives it to the sink, the CLI runs in it.
	DefaultCWD string
	Bytes      int64 // size of the input files
	Lines      int   // every line, blank ones included
	Entries    int   // non-blank lines that parse
	Malformed  int
	Blank      int
	Unroutable int
	Duplicates int
	// Accepted is what the pipeline must accept: every parsed, routable
	// entry minus uuid repeats within a session.
	Accepted int
	Sessions int
	Files    []*outFile
	byKey    map[string]*outFile
	// route[i] is the index in Files the plain append writes line i to, or
	// -1 for a line scribe does not write.
	route []int32
}

var hashSeed = maphash.MakeSeed()

func chainAdd(h uint64, line []byte) uint64 {
	return (h^maphash.Bytes(hashSeed, line))*1099511628211 + 0x9e3779b97f4a7c15
}

// makePlan reads the inputs once, the way `scribe record` routes and
// deduplicates them, and records what every case must produce.
func makePlan(inputs []string, defaultCWD string) (*plan, error) {
	p := &plan{Inputs: inputs, DefaultCWD: defaultCWD, byKey: map[string]*outFile{}}
	for _, in := range inputs {
		fi, err := os.Stat(in)
		if err != nil {
			return nil, err
		}
		p.Bytes += fi.Size()
	}
	type pending struct {
		line  int
		bytes int64
	}
	var held []pending // line numbers of the router's held entries
	rt := newRouter(len(inputs))
	seen := map[string]map[string]bool{} // dedup key -> uuids
	sessions := map[string]string{}      // session -> first non-empty cwd
	var ready []core.Entry
	err := eachLine(inputs, func(fi int, line []byte) error {
		n := p.Lines
		p.Lines++
		p.route = append(p.route, -1)
		if blank(line) {
			p.Blank++
			return nil
		}
		e, err := core.ParseEntry(line)
		if err != nil {
			p.Malformed++
			return nil
		}
		p.Entries++
		held = append(held, pending{n, int64(len(line)) + 1})
		ready = rt.route(fi, e, ready)
		if len(ready) == 0 {
			return nil
		}
		if len(ready) != len(held) {
			return fmt.Errorf("plan: router released %d entries, %d held", len(ready), len(held))
		}
		for i := range ready {
			e := &ready[i]
			ref := e.Ref()
			if e.UUID != "" {
				s := seen[ref.Key()]
				if s == nil {
					s = map[string]bool{}
					seen[ref.Key()] = s
				}
				if s[e.UUID] {
					p.Duplicates++
					continue
				}
				s[e.UUID] = true
			}
			p.Accepted++
			if c, ok := sessions[e.SessionID]; !ok || c == "" {
				sessions[e.SessionID] = e.CWD
			}
			k := fileKey(e)
			f := p.byKey[k]
			if f == nil {
				f = &outFile{Key: k, Session: e.SessionID, idx: int32(len(p.Files))}
				if e.AgentID != "" && (e.IsSidechain || e.IsMetadata()) {
					f.Agent = e.AgentID
				}
				p.byKey[k] = f
				p.Files = append(p.Files, f)
			}
			p.route[held[i].line] = f.idx
			f.PeerBytes += held[i].bytes
			if e.UUID != "" {
				f.UUIDLines++
				f.Chain = chainAdd(f.Chain, e.Raw)
			} else {
				f.heldMeta++
			}
			if e.IsMessage() {
				f.materialized = true
			}
			if f.materialized {
				f.MetaLines += f.heldMeta
				f.heldMeta = 0
			}
		}
		held = held[:0]
		return nil
	})
	if err != nil {
		return nil, err
	}
	p.Unroutable = len(held)
	p.Sessions = len(sessions)
	l := jsonl.Layout{ConfigDir: "/"}
	for _, f := range p.Files {
		cwd := sessions[f.Session]
		if cwd == "" {
			cwd = defaultCWD
		}
		f.cwd = cwd
		dir := l.ProjectDir(cwd)
		var abs string
		if f.Agent != "" {
			abs = claudedir.AgentFile(dir, f.Session, f.Agent)
		} else {
			abs = claudedir.MainFile(dir, f.Session)
		}
		rel, err := filepath.Rel("/", abs)
		if err != nil {
			return nil, err
		}
		f.Rel = rel
	}
	if p.Accepted == 0 {
		return nil, errors.New("plan: the input holds no entry scribe would record")
	}
	return p, nil
}
