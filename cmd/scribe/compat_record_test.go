package main_test

// Compatibility test of `scribe record` against the real Claude Agent SDK.
//
// For every Claude Code transcript of the committed corpus
// (testdata/corpus/real, see testdata/corpus/SOURCES.md) the test builds two
// config folders and asks the SDK (internal/peer) what Claude Code would see
// in each:
//
//   ORIGINAL  the corpus files laid out the way Claude Code keeps them:
//             projects/<sanitized cwd>/<sessionId>.jsonl and
//             projects/<sanitized cwd>/<sessionId>/subagents/agent-<id>.jsonl
//             (plus any agent-<id>.meta.json found beside a corpus subagent).
//   RECORDED  a fresh folder filled only by `scribe record --json` runs over
//             the same corpus files.
//
// and compares listSessions, getSessionMessages (with system messages),
// listSubagents and getSubagentMessages, field by field.
//
// Corpus files are grouped into units, one per session id: a main transcript
// plus the subagent transcripts of that session. Layout choices:
//   - a main file named <uuid>.jsonl keeps its name and is recorded with
//     --session <uuid>;
//   - a main file with another name (index.jsonl, native.jsonl,
//     session-01.jsonl, fixtures/*.jsonl, ...) holds a single session; Claude
//     Code would have named it <sessionId>.jsonl, so ORIGINAL uses that name
//     (laid out under its own name the SDK would ignore it while the
//     recording, which routes by sessionId, would not: the comparison would be
//     meaningless). It is recorded without --session;
//   - subagent files, in a <uuid>/subagents/ folder of the corpus or old-style
//     top-level agent-<id>.jsonl files (2.0.x, first line isSidechain:true),
//     go to <sessionId>/subagents/agent-<id>.jsonl beside their main file,
//     which is where scribe records sidechain rows (the SDK does not look at
//     top-level agent files at all). They are recorded without --session: their
//     rows carry the parent's sessionId and their agentId. Subagent files
//     whose main transcript is not in the corpus form a unit of their own,
//     given a one-line stub main transcript (see withStubMain) so that the
//     SDK can find them;
//   - a file with no cwd at all (summary-only or snapshot-only files) is laid
//     out under noCwdProject and recorded with --cwd noCwdProject.
//
// Documented, deliberate differences, accepted only under exact conditions,
// and each logged and counted:
//   - a session whose original file holds metadata only (no user, assistant
//     or system entry; e.g. a lone summary line, which the SDK does list) is
//     absent from RECORDED: scribe, like the CLI, creates a session file only
//     with its first conversation entry and holds metadata until then;
//   - re-appended metadata, below.
//
// Re-appended metadata: scribe re-appends the latest
// custom-title / ai-title / tag / last-prompt every 32 KiB and at close, so a
// title that sat outside both 64 KiB lite-read windows of the original (and
// was therefore invisible to the SDK) becomes visible in the recording. Such a
// difference is accepted only when the original's value is empty/absent, the
// recording's value equals the last such metadata line of the original file,
// and that line lies outside both windows of the original. Each accepted case
// is logged and counted.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/internal/testenv"
)

// recordReport is the part of `scribe record --json` output the tests read
// (other fields are ignored; malformed line numbers are 1-based).
type recordReport struct {
	Accepted   int `json:"accepted"`
	Duplicates int `json:"duplicates"`
	Malformed  []struct {
		File  string `json:"file"`
		Line  int    `json:"line"`
		Error string `json:"error"`
	} `json:"malformed"`
}

// recorder records one corpus file into configDir (session "" = no
// --session; cwd "" = no --cwd).
type recorder func(t *testing.T, configDir string, f *corpusFile, session, cwd string) recordReport

// scribeRecorder runs the scribe binary.
func scribeRecorder(bin string) recorder {
	return func(t *testing.T, configDir string, f *corpusFile, session, cwd string) recordReport {
		t.Helper()
		args := []string{"record", "--config-dir", configDir, "--json"}
		if session != "" {
			args = append(args, "--session", session)
		}
		if cwd != "" {
			args = append(args, "--cwd", cwd)
		}
		args = append(args, f.abs)
		ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		runErr := cmd.Run()
		show := fmt.Sprintf("scribe %s\nstdout:\n%.4000s\nstderr:\n%.4000s", strings.Join(args, " "), stdout.String(), stderr.String())
		if ctx.Err() != nil {
			t.Fatalf("%s: timed out after %v\n%s", f.rel, recordTimeout, show)
		}
		var exitErr *exec.ExitError
		if runErr != nil && !errors.As(runErr, &exitErr) {
			t.Fatalf("%s: %v\n%s", f.rel, runErr, show)
		}
		rep, err := decodeReport(stdout.Bytes())
		if err != nil {
			t.Fatalf("%s: decode --json output: %v\n%s", f.rel, err, show)
		}
		if runErr != nil {
			// Only input with malformed lines, all of them reported, may
			// make record exit non-zero.
			if len(f.malformed) == 0 || !slices.Equal(reportedLines(rep), f.malformed) {
				t.Fatalf("%s: %v\n%s", f.rel, runErr, show)
			}
			t.Logf("%s: scribe record exited %d on input with malformed lines %v (reported)", f.rel, exitErr.ExitCode(), f.malformed)
		}
		if got := reportedLines(rep); !slices.Equal(got, f.malformed) {
			t.Errorf("%s: malformed lines reported %v, want %v (the lines that are not JSON objects)\n%s", f.rel, got, f.malformed, show)
		}
		return rep
	}
}

func reportedLines(r recordReport) []int {
	var ls []int
	for _, m := range r.Malformed {
		ls = append(ls, m.Line)
	}
	sort.Ints(ls)
	return ls
}

// decodeReport reads the --json object: the whole output, else its last
// non-empty line.
func decodeReport(out []byte) (recordReport, error) {
	var r recordReport
	err := json.Unmarshal(out, &r)
	if err == nil {
		return r, nil
	}
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	if last := lines[len(lines)-1]; len(last) > 0 {
		if json.Unmarshal(last, &r) == nil {
			return r, nil
		}
	}
	return r, err
}

// recordUnit records the unit's files into configDir: the main file first
// (with --session <uuid> when it is named <uuid>.jsonl), then its subagent
// files (without --session).
func recordUnit(t *testing.T, rec recorder, configDir string, u *unit) []recordReport {
	t.Helper()
	var reps []recordReport
	if u.main != nil {
		session, cwd := "", ""
		if u.mainAt != "" {
			session = u.sid
		}
		if u.main.firstCwd() == "" {
			cwd = u.cwd
		}
		reps = append(reps, rec(t, configDir, u.main, session, cwd))
	}
	for _, a := range u.agents {
		cwd := ""
		if a.firstCwd() == "" {
			cwd = u.cwd
		}
		reps = append(reps, rec(t, configDir, a.corpusFile, "", cwd))
	}
	return reps
}

// exceptions collects the accepted, documented differences (see the file
// comment), one line per case.
type exceptions struct {
	mu    sync.Mutex
	cases []string
}

func (e *exceptions) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cases = append(e.cases, fmt.Sprintf(format, args...))
}

// sdkView is what the SDK reports for one config folder.
type sdkView struct {
	list      map[string]peer.SessionInfo
	order     []string
	messages  map[string][]json.RawMessage
	subagents map[string][]string
	subMsgs   map[string]map[string][]json.RawMessage
}

// listFieldsSkipped are SDKSessionInfo fields that naturally differ.
var listFieldsSkipped = map[string]bool{"fileSize": true, "lastModified": true}

// preparedUnit is a unit laid out as ORIGINAL and recorded as RECORDED.
type preparedUnit struct {
	u               *unit
	origDir, recDir string
}

// prepareUnit lays out ORIGINAL and records RECORDED with rec, in folders
// that live as long as the test.
func prepareUnit(t *testing.T, base string, rec recorder, u *unit) preparedUnit {
	if u.main == nil {
		u = withStubMain(t, u)
	}
	dir, err := os.MkdirTemp(base, "unit-")
	if err != nil {
		t.Fatal(err)
	}
	pu := preparedUnit{u: u, origDir: filepath.Join(dir, "original"), recDir: filepath.Join(dir, "recorded")}
	if err := os.Mkdir(pu.recDir, 0o700); err != nil {
		t.Fatal(err)
	}
	layOriginal(t, pu.origDir, u)
	recordUnit(t, rec, pu.recDir, u)
	checkModes(t, u.name, pu.recDir)
	return pu
}

// viewOf is a peer.View as the comparisons read it.
func viewOf(t *testing.T, v peer.View) *sdkView {
	sv := &sdkView{list: map[string]peer.SessionInfo{}, messages: v.Messages, subagents: map[string][]string{}, subMsgs: v.SubMessages}
	for _, s := range v.List {
		if _, dup := sv.list[s.SessionID]; dup {
			t.Errorf("listSessions returned session %s twice", s.SessionID)
		}
		sv.list[s.SessionID] = s
		sv.order = append(sv.order, s.SessionID)
	}
	for sid, agents := range v.Subagents {
		agents = slices.Clone(agents)
		sort.Strings(agents)
		sv.subagents[sid] = agents
	}
	return sv
}

// compareUnit compares what the SDK sees in a unit's ORIGINAL and RECORDED
// folders (views read for every session either lists, and the unit's own).
func compareUnit(t *testing.T, u *unit, orig, recd *sdkView, exc *exceptions) {
	ids := map[string]bool{u.sid: true}
	for id := range orig.list {
		ids[id] = true
	}
	for id := range recd.list {
		ids[id] = true
	}
	var sids []string
	for id := range ids {
		sids = append(sids, id)
	}
	sort.Strings(sids)

	// listSessions
	for _, sid := range sids {
		o, inO := orig.list[sid]
		r, inR := recd.list[sid]
		switch {
		case inO && inR:
			compareInfo(t, u, sid, o, r, exc)
		case inO:
			if sid == u.sid && u.main != nil && u.main.chainEntries() == 0 {
				why := "the original has no user/assistant/system entry; scribe, like the CLI, creates a session file only with its first such entry"
				exc.add("%s: session %s listed only in ORIGINAL, summary %q (%s)", u.name, sid, o.Summary, why)
				t.Logf("accepted: session %s listed only in ORIGINAL, summary %q: %s", sid, o.Summary, why)
			} else {
				t.Errorf("%s: session %s: listed in ORIGINAL (summary %q) but not in RECORDED", u.name, sid, o.Summary)
			}
		case inR:
			if why, ok := revealedSession(u, sid, r); ok {
				exc.add("%s: session %s listed only in RECORDED, summary %q (%s)", u.name, sid, r.Summary, why)
				t.Logf("accepted: session %s listed only in RECORDED, summary %q: %s", sid, r.Summary, why)
			} else {
				t.Errorf("%s: session %s: listed in RECORDED (summary %q) but not in ORIGINAL", u.name, sid, r.Summary)
			}
		}
	}
	// messages and subagents
	for _, sid := range sids {
		compareMessages(t, fmt.Sprintf("%s: session %s getSessionMessages", u.mainName(), sid), orig.messages[sid], recd.messages[sid])
		if !slices.Equal(orig.subagents[sid], recd.subagents[sid]) {
			t.Errorf("%s: session %s listSubagents: ORIGINAL %q, RECORDED %q", u.name, sid, orig.subagents[sid], recd.subagents[sid])
		}
		for _, a := range orig.subagents[sid] {
			if !slices.Contains(recd.subagents[sid], a) {
				continue
			}
			compareMessages(t, fmt.Sprintf("%s: session %s getSubagentMessages(%s)", u.agentName(a), sid, a),
				orig.subMsgs[sid][a], recd.subMsgs[sid][a])
		}
	}
}

// withStubMain returns a copy of a subagents-only unit with a one-line stand-in
// main transcript. The SDK finds a session's subagents only through its main
// file; without one, listSubagents answers [] for both folders and the
// subagent transcripts would go unchecked. The stub is recorded by scribe (with
// --session) like any main file, and laid into ORIGINAL as it is.
func withStubMain(t *testing.T, u *unit) *unit {
	t.Helper()
	ts := "2025-01-01T00:00:00.000Z"
	if first, err := os.ReadFile(u.agents[0].abs); err == nil {
		var row struct {
			Timestamp string `json:"timestamp"`
		}
		line, _, _ := bytes.Cut(first, []byte("\n"))
		if json.Unmarshal(line, &row) == nil && row.Timestamp != "" {
			ts = row.Timestamp
		}
	}
	row, err := json.Marshal(map[string]any{
		"parentUuid":  nil,
		"isSidechain": false,
		"type":        "user",
		"message":     map[string]any{"role": "user", "content": "scribe test stub: the main transcript of this session is not in the corpus"},
		"uuid":        "00000000-0000-4000-8000-000000000001",
		"timestamp":   ts,
		"userType":    "external",
		"cwd":         u.cwd,
		"sessionId":   u.sid,
		"version":     "2.0.42",
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	name := u.sid + ".jsonl"
	if err := os.WriteFile(filepath.Join(dir, name), append(row, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	stub, err := scanCorpusFile(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	stub.rel = u.name + " (stub main " + name + ")"
	c := *u
	c.main, c.mainAt = stub, name
	return &c
}

func (u *unit) mainName() string {
	if u.main != nil {
		return u.main.rel
	}
	return u.name
}

func (u *unit) agentName(agentID string) string {
	for _, a := range u.agents {
		if a.agentID == agentID {
			return a.rel
		}
	}
	return u.name
}

// compareInfo compares one SDKSessionInfo of ORIGINAL and RECORDED.
func compareInfo(t *testing.T, u *unit, sid string, o, r peer.SessionInfo, exc *exceptions) {
	t.Helper()
	keys := map[string]bool{}
	for k := range o.Raw {
		keys[k] = true
	}
	for k := range r.Raw {
		keys[k] = true
	}
	var names []string
	for k := range keys {
		if !listFieldsSkipped[k] {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	acceptedTitle := false
	diff := map[string]bool{}
	for _, k := range names {
		ov, oOK := o.Raw[k]
		rv, rOK := r.Raw[k]
		if oOK == rOK && reflect.DeepEqual(ov, rv) {
			continue
		}
		diff[k] = true
	}
	// customTitle and tag first: summary's exception depends on customTitle's.
	for _, k := range []string{"customTitle", "tag", "summary"} {
		if !diff[k] {
			continue
		}
		if why, ok := revealedField(u, sid, k, o, r, acceptedTitle); ok {
			if k == "customTitle" {
				acceptedTitle = true
			}
			delete(diff, k)
			exc.add("%s: session %s %s: ORIGINAL %s, RECORDED %s (%s)", u.name, sid, k, showField(o.Raw, k), showField(r.Raw, k), why)
			t.Logf("accepted: session %s %s: ORIGINAL %s, RECORDED %s: %s", sid, k, showField(o.Raw, k), showField(r.Raw, k), why)
		}
	}
	for _, k := range names {
		if diff[k] {
			t.Errorf("%s: session %s listSessions field %s: ORIGINAL %s, RECORDED %s", u.mainName(), sid, k, showField(o.Raw, k), showField(r.Raw, k))
		}
	}
}

func showField(m map[string]any, k string) string {
	v, ok := m[k]
	if !ok {
		return "(absent)"
	}
	b, _ := json.Marshal(v)
	return truncate(string(b), 300)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func emptyField(m map[string]any, k string) bool {
	v, ok := m[k]
	return !ok || v == nil || v == ""
}

// hiddenMeta returns the last metadata line of a kind in the original main
// file when the SDK could not see it (outside both lite windows).
func hiddenMeta(u *unit, m metaLine) (string, bool) {
	if u.main == nil || !m.ok || m.value == "" || m.visible(u.main.size) {
		return "", false
	}
	return m.value, true
}

// revealedField decides whether a difference in field k is the documented
// re-append effect (see the file comment).
func revealedField(u *unit, sid, k string, o, r peer.SessionInfo, titleAccepted bool) (string, bool) {
	if sid != u.sid || u.main == nil {
		return "", false
	}
	at := func(m metaLine) string {
		return fmt.Sprintf("bytes %d-%d of %d, outside both 64 KiB windows", m.start, m.end, u.main.size)
	}
	switch k {
	case "customTitle":
		// The SDK reports custom-title, else ai-title, as customTitle.
		m := u.main.lastCustomTitle
		if !m.ok {
			m = u.main.lastAiTitle
		}
		if v, ok := hiddenMeta(u, m); ok && emptyField(o.Raw, k) && r.CustomTitle == v {
			return "last title line of the original, " + at(m), true
		}
	case "tag":
		m := u.main.lastTag
		if v, ok := hiddenMeta(u, m); ok && emptyField(o.Raw, k) && r.Tag == v {
			return "last tag line of the original, " + at(m), true
		}
	case "summary":
		// summary = customTitle || lastPrompt || summary entry || firstPrompt.
		// The original's summary came from a lower-priority source than the
		// revealed one (its own value for that source was absent).
		if titleAccepted && r.Summary == r.CustomTitle {
			return "follows the revealed customTitle", true
		}
		m := u.main.lastPrompt
		if v, ok := hiddenMeta(u, m); ok && emptyField(o.Raw, "customTitle") && emptyField(r.Raw, "customTitle") && r.Summary == v {
			return "last last-prompt line of the original, " + at(m), true
		}
	}
	return "", false
}

// revealedSession decides whether a session listed only in RECORDED is the
// re-append effect: the SDK dropped the original (no prompt, title, lastPrompt
// or summary in its windows) and the recording's summary is a hidden
// metadata value of the original.
func revealedSession(u *unit, sid string, r peer.SessionInfo) (string, bool) {
	if sid != u.sid || u.main == nil {
		return "", false
	}
	for _, m := range []struct {
		name string
		line metaLine
	}{{"custom-title", u.main.lastCustomTitle}, {"ai-title", u.main.lastAiTitle}, {"last-prompt", u.main.lastPrompt}} {
		if v, ok := hiddenMeta(u, m.line); ok && r.Summary == v {
			return fmt.Sprintf("last %s line of the original at bytes %d-%d of %d, outside both windows", m.name, m.line.start, m.line.end, u.main.size), true
		}
	}
	return "", false
}

// compareMessages compares two SDK message lists: the uuid order, then each
// decoded message object.
func compareMessages(t *testing.T, what string, o, r []json.RawMessage) {
	t.Helper()
	ou, ru := peer.UUIDs(o), peer.UUIDs(r)
	if !slices.Equal(ou, ru) {
		i := 0
		for i < len(ou) && i < len(ru) && ou[i] == ru[i] {
			i++
		}
		t.Errorf("%s: uuid order differs: ORIGINAL %d messages, RECORDED %d; first difference at index %d: ORIGINAL %q, RECORDED %q",
			what, len(ou), len(ru), i, window(ou, i), window(ru, i))
		return
	}
	reported := 0
	for i := range o {
		od, rd := decodeAny(o[i]), decodeAny(r[i])
		if reflect.DeepEqual(od, rd) {
			continue
		}
		if reported++; reported > 5 {
			t.Errorf("%s: more messages differ", what)
			return
		}
		om, _ := od.(map[string]any)
		rm, _ := rd.(map[string]any)
		var fields []string
		for k := range om {
			if !reflect.DeepEqual(om[k], rm[k]) {
				fields = append(fields, k)
			}
		}
		for k := range rm {
			if _, ok := om[k]; !ok {
				fields = append(fields, k)
			}
		}
		sort.Strings(fields)
		var detail []string
		for _, k := range fields {
			detail = append(detail, fmt.Sprintf("%s: ORIGINAL %s, RECORDED %s", k, showField(om, k), showField(rm, k)))
		}
		t.Errorf("%s: message %d (uuid %s) differs in %q\n  %s", what, i, ou[i], fields, strings.Join(detail, "\n  "))
	}
}

func window(s []string, i int) []string {
	lo, hi := max(0, i-1), min(len(s), i+2)
	if lo >= hi {
		return nil
	}
	return s[lo:hi]
}

func decodeAny(raw json.RawMessage) any {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return string(raw)
	}
	return v
}

// checkModes wants every folder under configDir to be 0700 and every file
// 0600.
func checkModes(t *testing.T, name, configDir string) {
	t.Helper()
	err := filepath.WalkDir(configDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == configDir {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(configDir, p)
		switch {
		case fi.IsDir():
			if fi.Mode().Perm() != 0o700 {
				t.Errorf("%s: recorded folder %s has mode %#o, want 0700", name, rel, fi.Mode().Perm())
			}
		case fi.Mode().IsRegular():
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: recorded file %s has mode %#o, want 0600", name, rel, fi.Mode().Perm())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// logCorpus logs what the corpus holds and checks the Codex count.
func logCorpus(t *testing.T, c *corpus) {
	t.Helper()
	t.Logf("corpus: %d sessions (%d main transcripts, %d of them not named <uuid>.jsonl; %d subagent-only units), "+
		"%d subagent files (%d in <uuid>/subagents/, %d old-style top-level agent-*.jsonl)",
		len(c.units), c.mainFiles, len(c.nonUUIDMain), len(c.orphanUnits), c.modernAgents+c.oldStyleAgents, c.modernAgents, c.oldStyleAgents)
	t.Logf("skipping %d Codex rollout files (session_meta/response_item records, no sessionId): %q", len(c.codex), c.codex)
	if len(c.codex) != wantCodexFiles {
		t.Errorf("found %d Codex files in the corpus, want %d (SOURCES.md)", len(c.codex), wantCodexFiles)
	}
	if len(c.multiSession) > 0 {
		t.Logf("files with several sessionIds: %q", c.multiSession)
	}
	t.Logf("files with several cwds: %q", c.multiCwd)
	t.Logf("files with no cwd (laid out under %s, recorded with --cwd): %q", noCwdProject, c.noCwd)
	t.Logf("files with malformed lines: %q", c.malformedFiles)
}

// forEachUnit runs fn for every corpus unit in a parallel subtest named by the
// unit, at most compatParallel at a time, and returns when all are done.
func forEachUnit(t *testing.T, c *corpus, fn func(t *testing.T, u *unit)) {
	sem := make(chan struct{}, compatParallel)
	t.Run("corpus", func(t *testing.T) {
		for _, u := range c.units {
			t.Run(u.name, func(t *testing.T) {
				t.Parallel()
				sem <- struct{}{}
				defer func() { <-sem }()
				fn(t, u)
			})
		}
	})
}

func TestCompatRecordCorpus(t *testing.T) {
	t.Parallel() // a long, self-contained run: it overlaps the others
	p := peer.Find(t)
	c := loadCorpus(t)
	logCorpus(t, c)

	// Our layout's folder names must be the SDK's.
	var cwds []string
	for _, u := range c.units {
		cwds = append(cwds, u.cwd)
	}
	for i, got := range p.Sanitize(t, cwds...) {
		if want := claudedir.SanitizePath(cwds[i]); got != want {
			t.Fatalf("project folder of %q: SDK %q, ours %q", cwds[i], got, want)
		}
	}

	rec := scribeRecorder(testenv.BuildScribe(t))
	exc := &exceptions{}
	start := time.Now()
	// Lay out and record every unit (in parallel), read what the SDK sees
	// in all of them in two node processes (one per core), then compare.
	base := t.TempDir()
	prepared := make([]preparedUnit, len(c.units))
	index := make(map[*unit]int, len(c.units))
	for i, u := range c.units {
		index[u] = i
	}
	forEachUnit(t, c, func(t *testing.T, u *unit) { prepared[index[u]] = prepareUnit(t, base, rec, u) })
	if t.Failed() {
		return
	}
	groups := make([]peer.ViewGroup, len(prepared))
	for i, pu := range prepared {
		groups[i] = peer.ViewGroup{Dirs: []string{pu.origDir, pu.recDir}, Sids: []string{pu.u.sid}}
	}
	half := (len(groups) + 1) / 2
	parts := make([][][]peer.View, 2)
	t.Run("sdk", func(t *testing.T) {
		for k, part := range [][]peer.ViewGroup{groups[:half], groups[half:]} {
			t.Run(fmt.Sprint(k), func(t *testing.T) {
				t.Parallel()
				if len(part) > 0 {
					parts[k] = p.Views(t, part)
				}
			})
		}
	})
	if t.Failed() {
		return
	}
	views := append(parts[0], parts[1]...)
	t.Run("compare", func(t *testing.T) {
		for i, pu := range prepared {
			t.Run(pu.u.name, func(t *testing.T) {
				compareUnit(t, pu.u, viewOf(t, views[i][0]), viewOf(t, views[i][1]), exc)
			})
		}
	})
	sort.Strings(exc.cases)
	t.Logf("%d units compared in %v; %d accepted deliberate differences (metadata-only sessions; title/tag/last-prompt outside the original's 64 KiB windows):\n%s",
		len(c.units), time.Since(start).Round(time.Millisecond), len(exc.cases), strings.Join(exc.cases, "\n"))
}

// TestRecordTwiceAddsNothing records each corpus unit twice into the same
// folder: the second run must not change any file.
func TestRecordTwiceAddsNothing(t *testing.T) {
	c := loadCorpus(t)
	rec := scribeRecorder(testenv.BuildScribe(t))
	var dupTotal atomic.Int64
	forEachUnit(t, c, func(t *testing.T, u *unit) {
		dir := filepath.Join(t.TempDir(), "cfg")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		recordUnit(t, rec, dir, u)
		before := fileSizes(t, dir)
		second := recordUnit(t, rec, dir, u)
		after := fileSizes(t, dir)
		for _, r := range second {
			// Entries scribe holds and never writes (metadata of a session
			// that has no conversation entry) are accepted again: only the
			// bytes on disk are judged.
			if r.Accepted != 0 {
				t.Logf("%s: second recording accepted %d entries (duplicates %d)", u.name, r.Accepted, r.Duplicates)
			}
			dupTotal.Add(int64(r.Duplicates))
		}
		for f, n := range after {
			if m, ok := before[f]; !ok {
				t.Errorf("%s: second recording created %s (%d bytes)", u.name, f, n)
			} else if m != n {
				t.Errorf("%s: second recording changed %s from %d to %d bytes", u.name, f, m, n)
			}
		}
		for f := range before {
			if _, ok := after[f]; !ok {
				t.Errorf("%s: second recording removed %s", u.name, f)
			}
		}
	})
	t.Logf("second recordings reported %d duplicates in all", dupTotal.Load())
}

func fileSizes(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	m := map[string]int64{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		m[rel] = fi.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
