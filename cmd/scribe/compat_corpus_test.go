package main_test

// The corpus as the compatibility tests see it: its files grouped into
// units (a session's main transcript and its subagents), and laid out as
// Claude Code keeps them.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/internal/testenv"
)

const (
	// wantCodexFiles is the number of OpenAI Codex rollout files in the
	// corpus (SOURCES.md, "OpenAI Codex CLI rollout files (9)"); they are not
	// Claude Code transcripts and are skipped.
	wantCodexFiles = 9
	// listWindow is the size of the head and tail windows the SDK reads for
	// listings.
	listWindow = 65536
	// compatParallel bounds how many corpus units run at once (the SDK runs
	// are CPU-bound node processes).
	compatParallel = 2
	// noCwdProject is the project path used for corpus files none of whose
	// lines has a cwd.
	noCwdProject = "/scribe-corpus/no-cwd"
	// recordTimeout bounds one `scribe record` run.
	recordTimeout = 2 * time.Minute
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// metaLine is the last metadata line of one kind in a file.
type metaLine struct {
	ok         bool
	value      string
	start, end int64 // byte range of the line (without its newline)
}

// visible reports whether the SDK's lite read of a file of the given size
// sees the line: whole within the first 64 KiB, or starting within the last.
func (m metaLine) visible(size int64) bool {
	return m.end <= listWindow || m.start >= size-listWindow
}

// corpusFile is one .jsonl file of the corpus, as scanned.
type corpusFile struct {
	rel        string // slash-separated, relative to the corpus root
	abs        string
	size       int64
	sessionIDs []string // distinct, in order of first appearance
	cwds       []string // distinct, in order of first appearance
	agentIDs   []string // distinct agentId values
	firstSC    bool     // the first line carrying isSidechain has it true
	hasTypes   map[string]int
	malformed  []int // 1-based numbers of lines that are not JSON objects

	lastCustomTitle, lastAiTitle, lastTag, lastPrompt metaLine
}

func (f *corpusFile) firstCwd() string {
	if len(f.cwds) == 0 {
		return ""
	}
	return f.cwds[0]
}

// chainEntries counts the conversation entries (user, assistant, system)
// of the file; a file without any holds only metadata.
func (f *corpusFile) chainEntries() int {
	return f.hasTypes["user"] + f.hasTypes["assistant"] + f.hasTypes["system"]
}

// isCodex tells a Codex rollout file from a Claude Code transcript by content:
// Codex rollouts have session_meta / response_item records and no sessionId.
func (f *corpusFile) isCodex() bool {
	return len(f.sessionIDs) == 0 && (f.hasTypes["session_meta"] > 0 || f.hasTypes["response_item"] > 0)
}

func scanCorpusFile(root, rel string) (*corpusFile, error) {
	abs := filepath.Join(root, filepath.FromSlash(rel))
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, err
	}
	f := &corpusFile{rel: rel, abs: abs, size: int64(len(data)), hasTypes: map[string]int{}}
	seenSC := false
	var off int64
	for n := 1; len(data) > 0; n++ {
		line := data
		next := len(data)
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, next = data[:i], i+1
		}
		start, end := off, off+int64(len(line))
		off += int64(next)
		data = data[next:]
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(line, &obj); err != nil || obj == nil {
			f.malformed = append(f.malformed, n)
			continue
		}
		str := func(k string) (string, bool) {
			raw, ok := obj[k]
			if !ok {
				return "", false
			}
			var s string
			if json.Unmarshal(raw, &s) != nil {
				return "", false
			}
			return s, true
		}
		typ, _ := str("type")
		f.hasTypes[typ]++
		if s, ok := str("sessionId"); ok && s != "" && !slices.Contains(f.sessionIDs, s) {
			f.sessionIDs = append(f.sessionIDs, s)
		}
		if s, ok := str("cwd"); ok && s != "" && !slices.Contains(f.cwds, s) {
			f.cwds = append(f.cwds, s)
		}
		if s, ok := str("agentId"); ok && s != "" && !slices.Contains(f.agentIDs, s) {
			f.agentIDs = append(f.agentIDs, s)
		}
		if raw, ok := obj["isSidechain"]; ok && !seenSC {
			seenSC = true
			f.firstSC = string(raw) == "true"
		}
		set := func(m *metaLine, key string) {
			if v, ok := str(key); ok {
				*m = metaLine{ok: true, value: v, start: start, end: end}
			}
		}
		switch typ {
		case "custom-title":
			set(&f.lastCustomTitle, "customTitle")
		case "ai-title":
			set(&f.lastAiTitle, "aiTitle")
		case "tag":
			set(&f.lastTag, "tag")
		case "last-prompt":
			set(&f.lastPrompt, "lastPrompt")
		}
	}
	return f, nil
}

// agentFile is a subagent transcript of a unit.
type agentFile struct {
	*corpusFile
	agentID string // from the file name agent-<id>.jsonl
	meta    string // absolute path of agent-<id>.meta.json beside it in the corpus, if any
	projDir string // the corpus folder its main transcript is (or would be) in
}

// unit is one session of the corpus: its main transcript (if the corpus has
// it) and its subagent transcripts.
type unit struct {
	name   string // subtest name
	sid    string
	main   *corpusFile // nil when the corpus has only subagents of the session
	mainAt string      // "<uuid>.jsonl" name: record with --session
	agents []*agentFile
	cwd    string // project path of the session (first cwd)
}

type corpus struct {
	units          []*unit
	codex          []string
	mainFiles      int
	nonUUIDMain    []string
	modernAgents   int
	oldStyleAgents int
	orphanUnits    []string
	multiSession   []string // files with several sessionIds
	multiCwd       []string // files with several cwds
	noCwd          []string
	malformedFiles []string
}

var (
	corpusOnce sync.Once
	corpusVal  *corpus
	corpusErr  error
)

// loadCorpus scans testdata/corpus/real once per test process.
func loadCorpus(t *testing.T) *corpus {
	t.Helper()
	root := testenv.CorpusDir(t)
	corpusOnce.Do(func() { corpusVal, corpusErr = scanCorpus(root) })
	if corpusErr != nil {
		t.Fatalf("corpus: %v", corpusErr)
	}
	return corpusVal
}

// scanCorpus reads every .jsonl file under root, sorts Codex files out,
// notes the odd ones, and groups the rest into units by session.
func scanCorpus(root string) (*corpus, error) {
	rels, err := corpusJSONLFiles(root)
	if err != nil {
		return nil, err
	}
	c := &corpus{}
	bySID := map[string]*unit{}
	for _, rel := range rels {
		f, err := scanCorpusFile(root, rel)
		if err != nil {
			return nil, err
		}
		if f.isCodex() {
			c.codex = append(c.codex, rel)
			continue
		}
		c.noteOddities(rel, f)
		if err := c.place(rel, f, bySID); err != nil {
			return nil, err
		}
	}
	c.finishUnits(bySID)
	return c, nil
}

// corpusJSONLFiles lists the .jsonl files under root, relative to it with
// slashes, sorted.
func corpusJSONLFiles(root string) ([]string, error) {
	var rels []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			r, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			rels = append(rels, filepath.ToSlash(r))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(rels)
	return rels, nil
}

// corpusUnitOf is the unit of session sid in bySID, added if new.
func corpusUnitOf(bySID map[string]*unit, sid string) *unit {
	u := bySID[sid]
	if u == nil {
		u = &unit{sid: sid}
		bySID[sid] = u
	}
	return u
}

// noteOddities notes file rel if it has several sessions or cwds, no cwd,
// or malformed lines.
func (c *corpus) noteOddities(rel string, f *corpusFile) {
	if len(f.sessionIDs) > 1 {
		c.multiSession = append(c.multiSession, rel)
	}
	if len(f.cwds) > 1 {
		c.multiCwd = append(c.multiCwd, fmt.Sprintf("%s %q", rel, f.cwds))
	}
	if len(f.cwds) == 0 {
		c.noCwd = append(c.noCwd, rel)
	}
	if len(f.malformed) > 0 {
		c.malformedFiles = append(c.malformedFiles, fmt.Sprintf("%s lines %v", rel, f.malformed))
	}
}

// place adds file rel to its session's unit in bySID: as a modern
// subagent file, an old-style top-level agent file, or the main transcript.
func (c *corpus) place(rel string, f *corpusFile, bySID map[string]*unit) error {
	base := path.Base(rel)
	stem := strings.TrimSuffix(base, ".jsonl")
	dir := path.Dir(rel)
	switch {
	case path.Base(dir) == "subagents": // <uuid>/subagents/agent-<id>.jsonl
		sid := path.Base(path.Dir(dir))
		if !uuidRE.MatchString(sid) || !strings.HasPrefix(stem, "agent-") {
			return fmt.Errorf("%s: unexpected subagent path", rel)
		}
		if len(f.sessionIDs) != 1 || f.sessionIDs[0] != sid {
			return fmt.Errorf("%s: subagent rows carry sessionIds %q, want the parent %s", rel, f.sessionIDs, sid)
		}
		a := &agentFile{corpusFile: f, agentID: strings.TrimPrefix(stem, "agent-"), projDir: path.Dir(path.Dir(dir))}
		if m := strings.TrimSuffix(f.abs, ".jsonl") + ".meta.json"; fileExists(m) {
			a.meta = m
		}
		u := corpusUnitOf(bySID, sid)
		u.agents = append(u.agents, a)
		c.modernAgents++
	case strings.HasPrefix(stem, "agent-") && f.firstSC: // old-style top-level agent file
		if len(f.sessionIDs) != 1 {
			return fmt.Errorf("%s: old-style agent file with sessionIds %q", rel, f.sessionIDs)
		}
		u := corpusUnitOf(bySID, f.sessionIDs[0])
		u.agents = append(u.agents, &agentFile{corpusFile: f, agentID: strings.TrimPrefix(stem, "agent-"), projDir: dir})
		c.oldStyleAgents++
	default: // a main transcript
		sid := stem
		if !uuidRE.MatchString(stem) {
			if len(f.sessionIDs) != 1 {
				return fmt.Errorf("%s: non-UUID file name and sessionIds %q: cannot tell its session", rel, f.sessionIDs)
			}
			sid = f.sessionIDs[0]
			c.nonUUIDMain = append(c.nonUUIDMain, rel)
		}
		u := corpusUnitOf(bySID, sid)
		if u.main != nil {
			return fmt.Errorf("%s and %s are both main transcripts of session %s", u.main.rel, rel, sid)
		}
		u.main = f
		u.name = rel
		if uuidRE.MatchString(stem) {
			u.mainAt = base
		}
		c.mainFiles++
	}
	return nil
}

// finishUnits names units without a main transcript, gives each unit a
// cwd, and puts the units into c, sorted by name.
func (c *corpus) finishUnits(bySID map[string]*unit) {
	for _, u := range bySID {
		if u.main == nil {
			u.name = fmt.Sprintf("%s/%s/subagents-only", u.agents[0].projDir, u.sid)
			c.orphanUnits = append(c.orphanUnits, u.name)
		}
		if u.main != nil && u.main.firstCwd() != "" {
			u.cwd = u.main.firstCwd()
		} else {
			for _, a := range u.agents {
				if a.firstCwd() != "" {
					u.cwd = a.firstCwd()
					break
				}
			}
		}
		if u.cwd == "" {
			u.cwd = noCwdProject
		}
		c.units = append(c.units, u)
	}
	sort.Slice(c.units, func(i, j int) bool { return c.units[i].name < c.units[j].name })
	sort.Strings(c.orphanUnits)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// layOriginal copies the unit's corpus files into configDir the way Claude
// Code keeps them and returns the project folder.
func layOriginal(t *testing.T, configDir string, u *unit) string {
	t.Helper()
	proj := filepath.Join(configDir, "projects", claudedir.SanitizePath(u.cwd))
	if u.main != nil {
		copyFile(t, u.main.abs, filepath.Join(proj, u.sid+".jsonl"))
	}
	for _, a := range u.agents {
		dst := filepath.Join(proj, u.sid, "subagents", "agent-"+a.agentID+".jsonl")
		copyFile(t, a.abs, dst)
		if a.meta != "" {
			copyFile(t, a.meta, strings.TrimSuffix(dst, ".jsonl")+".meta.json")
		}
	}
	return proj
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		t.Fatal(err)
	}
	if fileExists(dst) {
		t.Fatalf("layout: %s written twice", dst)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
