package transcript

// Forking a session: the rules of the Claude Agent SDK's forkSession
// (@anthropic-ai/claude-agent-sdk 0.3.332), written anew from its shipped
// code and checked against it by sinks/jsonl's compatibility tests.
//
// The source is read as the SDK's loader reads it: every line that parses
// as an object, in file order. Rows of type user, assistant, attachment,
// system and progress with a string uuid form the transcript; the other
// lines are per-session metadata, of which only a few kinds are carried.
//
// The new file, in order:
//
//	history-suppression        if the source has one
//	hybrid-organization ...    one per organization named in the source
//	session-owner              the first restricted owner of the source
//	the transcript rows        sidechain and progress rows left out
//	content-replacement        all of the source's replacements, in one row
//	atis-latch, tools-used     the source's last one
//	data-flow-incomplete, data-flow-records, derived-from
//	relocated                  the source's last one
//	custom-title               the fork's title, with uuid and timestamp
//
// Each transcript row keeps its keys, their order and their bytes; the
// fork edits it the way a JavaScript object spread does: a key that is set
// keeps its place, a new key goes at the end, and a key set to undefined
// disappears. Lines are written back compactly, with keys quoted the way
// JSON.stringify quotes them; nested values that are not edited keep their
// bytes.

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/e0dc0000/scribe/core"
	"github.com/google/uuid"
)

// Fork errors.
var (
	// ErrNothingToFork is returned when the source has no main-chain
	// message to copy (the SDK's "has no messages to fork").
	ErrNothingToFork = errors.New("no messages to fork")
	// ErrForkUnsupported is returned for sources scribe cannot fork the way
	// the SDK does: data-flow records (whose merge rules scribe does not
	// implement; dropping them would lose provenance), and compact
	// boundaries the SDK itself fails on.
	ErrForkUnsupported = errors.New("cannot fork")
)

// ForkOptions tune Fork.
type ForkOptions struct {
	// NewSessionID is the fork's session id; "" draws one with NewUUID.
	NewSessionID string
	// UpTo cuts the fork at this message uuid, inclusive ("" copies the
	// whole conversation). A uuid that names no row is ErrMessageNotFound.
	// As in the SDK, a queued command's source_uuid also names its row.
	UpTo string
	// Title is the fork's custom title, trimmed. "" gives
	// "<source title> (fork)", where the source title is the SDK's:
	// custom-title ‖ ai-title ‖ first prompt ‖ "Forked session" (see
	// ForkSourceTitle).
	Title string
	// KeepUUIDs forks the way Claude Code's /branch does: rows keep their
	// uuids (and timestamps); each row's parentUuid is re-linked to the
	// nearest kept row above it (through progress rows, as in the SDK
	// fork); sessionId is replaced, isSidechain set to false, sessionKind
	// removed, requestSessionId and forkedFrom added. Everything else on the
	// row is left as it is. The rows chosen and the metadata carried are
	// those of the SDK fork.
	KeepUUIDs bool
	// Now is the fork time: the SDK stamps the last copied row and the
	// added metadata rows with it. Zero means time.Now().
	Now time.Time
	// NewUUID draws fresh uuids (rows, session id, metadata rows), in the
	// SDK's order. nil means uuid.NewString.
	NewUUID func() string
	// SourceTitle, when set and Title is empty, gives the source's title.
	// A store sets it to ForkSourceTitle over the source file's bytes and
	// its custom-title.json sidecar. nil means ForkSourceTitle over the
	// source entries' lines, as if they were the whole file, with no
	// sidecar.
	SourceTitle func() string
}

// ForkResult is a fork's new session.
type ForkResult struct {
	// SessionID is the fork's session id.
	SessionID string
	// Entries are the new file's lines in order, each Raw in Claude Code's
	// key order.
	Entries []core.Entry
}

// Fork copies a session the way the SDK's forkSession does. source is the
// source file's entries in file order; sourceSessionID is the source's
// session id (the file name's). Fork writes nothing.
//
// The rows copied are the transcript's non-sidechain rows, cut at UpTo
// (see below), without progress rows. Every copied row gets:
//   - a fresh uuid; parentUuid and logicalParentUuid mapped to the fresh
//     uuids (a parent that is a progress row is followed to its own parent;
//     a parent outside the copy becomes null);
//   - sessionId set to the fork's; isSidechain false; teamName,
//     agentName, sessionKind, slug, sourceToolAssistantUUID,
//     summarizedTurnPromptUuids, droppedPromptUuids, sentAsUuid,
//     rowsAheadOfPutBack and turnAttributionKey removed;
//   - requestSessionId (assistant rows only: the row's requestSessionId,
//     else its forkedFrom.sessionId, else its sessionId; removed elsewhere)
//     and forkedFrom {sessionId, messageUuid} naming the source row;
//   - its timestamp, except the last row, which gets the fork time;
//   - uuids inside compactMetadata.preservedMessages/preservedSegment,
//     deferred_tools_record announcements and queued-command source_uuid
//     mapped too; model_refusal_fallback rows get neutralizedByFork:true.
//
// With UpTo, the rows are those up to the named one in file order, less:
// compact boundaries (and what follows them) after the last user or
// assistant row of the cut; and the rows of branches that a compact
// boundary cut off from the conversation ending at the cut.
func Fork(source []core.Entry, sourceSessionID string, opt ForkOptions) (ForkResult, error) {
	f := &forker{src: sourceSessionID, opt: opt, flows: map[string]*fkFlow{}, uncovered: map[string]bool{}}
	f.newUUID = opt.NewUUID
	if f.newUUID == nil {
		f.newUUID = uuid.NewString
	}
	now := opt.Now
	if now.IsZero() {
		now = time.Now()
	}
	f.now = fkISOTime(now)
	for i := range source {
		raw := source[i].Raw
		if !utf8.Valid(raw) {
			// The SDK decodes the file as UTF-8 with replacement characters.
			raw = fkLossyUTF8(raw)
		}
		obj, ok := fkParseObj(raw)
		if !ok {
			continue
		}
		if err := f.take(obj); err != nil {
			return ForkResult{}, err
		}
	}
	lines, err := f.fork(source)
	if err != nil {
		return ForkResult{}, err
	}
	res := ForkResult{SessionID: f.sid, Entries: make([]core.Entry, 0, len(lines))}
	for _, l := range lines {
		e, err := core.ParseEntryOwned(l)
		if err != nil {
			return ForkResult{}, fmt.Errorf("fork: built a bad line: %w", err)
		}
		res.Entries = append(res.Entries, e)
	}
	return res, nil
}

// ForkSourceTitle is the SDK's title of a session being forked, from the
// bytes of its file and its custom-title.json sidecar title (already
// cleaned; "" when there is none): the last custom-title of the file's
// last 64 KiB (even an empty one), else the sidecar's, else the last
// custom-title of the first 64 KiB; then the last ai-title of the tail, then
// of the head; then the first prompt of the head. "" when none is found.
func ForkSourceTitle(file []byte, sidecar string) string {
	n := len(file)
	head := fkLossyUTF8(file[:min(n, fkWindow)])
	tail := fkLossyUTF8(file[max(0, n-fkWindow):])
	var t string
	if c, ok := fkLastTyped(tail, "customTitle", "custom-title"); ok {
		t = c
	} else if sidecar != "" {
		t = sidecar
	} else {
		t, _ = fkLastTyped(head, "customTitle", "custom-title")
	}
	if t != "" {
		return t
	}
	if v, _ := fkLastTyped(tail, "aiTitle", "ai-title"); v != "" {
		return v
	}
	if v, _ := fkLastTyped(head, "aiTitle", "ai-title"); v != "" {
		return v
	}
	return fkFirstPrompt(head)
}

// fkWindow is the size of the head and tail the SDK reads for titles.
const fkWindow = 64 << 10

// ---------------------------------------------------------------------------
// The fork

type forker struct {
	src     string
	opt     ForkOptions
	newUUID func() string
	now     string
	sid     string

	// What the SDK's loader gathers from the whole source.
	transcript   []*fkRow
	historySupp  bool
	atis         *string
	tools        []string
	toolsSet     bool
	flows        map[string]*fkFlow
	flowOrder    []string
	uncovered    map[string]bool
	derived      []fkSession
	derivedSet   bool
	orgs         []string
	owner        *fkObj
	replacements [][]byte
	relocated    string
}

// fkFlow is the data-flow state of one session id: here only its
// "incomplete" codes (scribe refuses sources with data-flow records).
type fkFlow struct{ codes []int }

func (fl *fkFlow) add(codes ...int) {
	for _, c := range codes {
		if !fkHasInt(fl.codes, c) {
			fl.codes = append(fl.codes, c)
		}
	}
}

func fkHasInt(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// Data-flow "incomplete" codes the fork adds.
const (
	fkCodeNotFlowed = 11 // a transcript row written without data-flow tracking
	fkCodeLost      = 12 // derived-from sessions that could not be read
	fkCodeUncovered = 13 // a compact boundary with no data-flow snapshot after it
)

func (f *forker) flow(sid string) *fkFlow {
	fl := f.flows[sid]
	if fl == nil {
		fl = &fkFlow{}
		f.flows[sid] = fl
		f.flowOrder = append(f.flowOrder, sid)
	}
	return fl
}

// take is the SDK loader's handling of one parsed line.
func (f *forker) take(obj *fkObj) error {
	typ, typOK := fkStr(obj.get("type"))
	if id, ok := fkStr(obj.get("uuid")); ok && typOK && fkChainType(typ) {
		r := &fkRow{obj: obj, uuid: id, typ: typ}
		f.transcript = append(f.transcript, r)
		if typ == core.TypeSystem && r.subtype() == "compact_boundary" && !fkIsTrue(obj.get("isSidechain")) {
			if sid, ok := fkStr(obj.get("sessionId")); ok {
				f.uncovered[sid] = true
			}
		}
		if !fkIsTrue(obj.get("dataFlowOn")) && !fkTruthy(obj.get("isSidechain")) {
			for _, k := range f.flowOrder {
				f.flows[k].add(fkCodeNotFlowed)
			}
		}
		return nil
	}
	if !typOK {
		return nil
	}
	sid, sidOK := fkStr(obj.get("sessionId"))
	own := sidOK && sid == f.src
	switch {
	case typ == "history-suppression":
		f.historySupp = true
	case typ == "atis-latch" && own:
		if a, ok := fkStr(obj.get("atis")); ok && fkVisibleASCII(a) {
			f.atis = &a
		}
	case typ == "tools-used" && own && fkIsArr(obj.get("tools")):
		f.tools, f.toolsSet = nil, true
		for _, el := range fkElems(obj.get("tools")) {
			if s, ok := fkStr(el); ok && s != "" {
				f.tools = append(f.tools, s)
			}
		}
	case (typ == "data-flow-records" || typ == "data-flow-incomplete") && sidOK && obj.get("agentId") == nil:
		if typ == "data-flow-records" {
			return fmt.Errorf("%w: session %s has data-flow records, which scribe does not merge", ErrForkUnsupported, f.src)
		}
		f.flow(sid).add(fkFlowCodes(obj.get("codes"))...)
	case typ == "derived-from" && own:
		sessions, lost := fkDerivedSessions(obj)
		if lost {
			f.derived = fkDedupSessions(append(f.derived, sessions...))
			f.flow(f.src).add(fkCodeLost)
		} else {
			f.derived = sessions
		}
		f.derivedSet = true
	case typ == "hybrid-organization":
		if s, ok := fkStr(obj.get("organizationUuid")); ok && fkUUIDRE.MatchString(s) {
			s = strings.ToLower(s)
			if !fkHasString(f.orgs, s) {
				f.orgs = append(f.orgs, s)
			}
		}
	case typ == "session-owner":
		if f.owner == nil {
			f.owner = fkOwner(obj)
		}
	case typ == "content-replacement" && own && fkIsArr(obj.get("replacements")):
		for _, el := range fkElems(obj.get("replacements")) {
			if fkIsObj(el) {
				f.replacements = append(f.replacements, el)
			}
		}
	case typ == "relocated" && own:
		if s, ok := fkStr(obj.get("relocatedCwd")); ok && s != "" {
			f.relocated = s
		}
	}
	return nil
}

func fkChainType(t string) bool {
	switch t {
	case core.TypeUser, core.TypeAssistant, core.TypeAttachment, core.TypeSystem, core.TypeProgress:
		return true
	}
	return false
}

var fkUUIDRE = regexp.MustCompile(`^(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func fkVisibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func fkHasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// fkFlowCodes reads a data-flow-incomplete row's codes: integers 1..255,
// anything else counting as 1, deduplicated; [1] when there are none.
func fkFlowCodes(v []byte) []int {
	var out []int
	for _, el := range fkElems(v) {
		c := 1
		if x, ok := fkNum(el); ok && x == math.Trunc(x) && x >= 1 && x <= 255 {
			c = int(x)
		}
		if !fkHasInt(out, c) {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return []int{1}
	}
	return out
}

// fkOwner is a session-owner row's owner when it is restricted, else nil.
func fkOwner(obj *fkObj) *fkObj {
	acct, ok := fkStr(obj.get("accountUuid"))
	if !ok || acct == "" {
		return nil
	}
	restricted := false
	for _, el := range fkElems(obj.get("restricted")) {
		if s, ok := fkStr(el); ok && s == "ldr" {
			restricted = true
		}
	}
	if !restricted {
		return nil
	}
	o := newFkObj()
	o.set("accountUuid", core.AppendJSString(nil, acct))
	if org, ok := fkStr(obj.get("organizationUuid")); ok {
		o.set("organizationUuid", core.AppendJSString(nil, org))
	}
	o.set("restricted", []byte(`["ldr"]`))
	return o
}

// fkSession is one entry of a derived-from row.
type fkSession struct {
	typ, via, started string
	id                *string // nil for an "unknown" session's null id
}

func (s fkSession) key() string {
	id := ""
	if s.id != nil {
		id = *s.id
	}
	return s.typ + "\n" + id + "\n" + s.via + "\n" + s.started
}

var (
	fkSessionTypes = []string{"claude_code_session", "unknown"}
	fkSessionVias  = []string{"clear", "fork", "branch", "background", "cloud", "teleport", "teammate", "launch",
		"subprocess", "resume", "import", "compact"}
)

// fkDerivedSessions reads a derived-from row: its valid sessions, and
// whether any entry (or the whole list) was unreadable.
func fkDerivedSessions(obj *fkObj) ([]fkSession, bool) {
	if v, ok := fkNum(obj.get("v")); !ok || v != 1 || !fkIsArr(obj.get("sessions")) {
		return nil, true
	}
	var out []fkSession
	lost := false
	for _, el := range fkElems(obj.get("sessions")) {
		s, ok := fkDerivedSession(el)
		if !ok {
			lost = true
			continue
		}
		out = append(out, s)
	}
	return fkDedupSessions(out), lost
}

func fkDerivedSession(v []byte) (fkSession, bool) {
	if !fkIsObj(v) {
		return fkSession{}, false
	}
	typ, _ := fkStr(fkField(v, "type"))
	via, _ := fkStr(fkField(v, "via"))
	if !fkHasString(fkSessionTypes, typ) || !fkHasString(fkSessionVias, via) {
		return fkSession{}, false
	}
	s := fkSession{typ: typ, via: via}
	id := fkField(v, "id")
	if typ == "unknown" {
		if !fkIsNull(id) {
			return fkSession{}, false
		}
	} else {
		str, ok := fkStr(id)
		if !ok || !fkValidID(str) {
			return fkSession{}, false
		}
		s.id = &str
	}
	if st, ok := fkStr(fkField(v, "started")); ok && fkValidID(st) {
		s.started = st
	}
	return s, true
}

// fkValidID is the SDK's check for ids in provenance records: a string of
// 1 to 256 UTF-16 units without control characters.
func fkValidID(s string) bool {
	if s == "" || UTF16Len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return false
		}
	}
	return true
}

func fkDedupSessions(list []fkSession) []fkSession {
	seen := map[string]bool{}
	out := list[:0:0]
	for _, s := range list {
		if k := s.key(); !seen[k] {
			seen[k] = true
			out = append(out, s)
		}
	}
	return out
}

func (s fkSession) json() []byte {
	o := newFkObj()
	o.set("type", core.AppendJSString(nil, s.typ))
	if s.id == nil {
		o.set("id", fkNull)
	} else {
		o.set("id", core.AppendJSString(nil, *s.id))
	}
	o.set("via", core.AppendJSString(nil, s.via))
	if s.started != "" {
		o.set("started", core.AppendJSString(nil, s.started))
	}
	return o.bytes()
}

// fork builds the new file's lines.
func (f *forker) fork(source []core.Entry) ([][]byte, error) {
	var rows []*fkRow
	for _, r := range f.transcript {
		if !fkTruthy(r.obj.get("isSidechain")) {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: session %s", ErrNothingToFork, f.src)
	}
	if f.opt.UpTo != "" {
		var err error
		if rows, err = f.cut(rows, f.opt.UpTo); err != nil {
			return nil, err
		}
	}
	// Fresh uuids for every row, progress rows included (a repeated uuid
	// gets the one drawn last), then the session id.
	newOf := make(map[string]string, len(rows))
	byUUID := make(map[string]*fkRow, len(rows))
	var kept []*fkRow
	for _, r := range rows {
		if f.opt.KeepUUIDs {
			newOf[r.uuid] = r.uuid
		} else {
			newOf[r.uuid] = f.newUUID()
		}
		byUUID[r.uuid] = r
		if r.typ != core.TypeProgress {
			kept = append(kept, r)
		}
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("%w: session %s", ErrNothingToFork, f.src)
	}
	keptNew := make(map[string]string, len(kept))
	for _, r := range kept {
		keptNew[r.uuid] = newOf[r.uuid]
	}
	f.sid = f.opt.NewSessionID
	if f.sid == "" {
		f.sid = f.newUUID()
	}
	sid := core.AppendJSString(nil, f.sid)
	now := core.AppendJSString(nil, f.now)

	var out [][]byte
	meta := func(kv ...any) {
		o := newFkObj()
		for i := 0; i+1 < len(kv); i += 2 {
			o.set(kv[i].(string), kv[i+1].([]byte))
		}
		out = append(out, o.bytes())
	}
	if f.historySupp {
		meta("type", core.AppendJSString(nil, "history-suppression"), "sessionId", sid, "cause", core.AppendJSString(nil, "fork_inherit"), "ts", now)
	}
	for _, org := range f.orgs {
		meta("type", core.AppendJSString(nil, "hybrid-organization"), "sessionId", sid, "organizationUuid", core.AppendJSString(nil, org))
	}
	if f.owner != nil {
		o := newFkObj()
		o.set("type", core.AppendJSString(nil, "session-owner"))
		o.set("sessionId", sid)
		for j, k := range f.owner.keys {
			o.set(k, f.owner.vals[j])
		}
		out = append(out, o.bytes())
	}
	for g, r := range kept {
		out = append(out, f.rewrite(r, g == len(kept)-1, newOf, keptNew, byUUID, sid, now))
	}
	if len(f.replacements) > 0 {
		meta("type", core.AppendJSString(nil, "content-replacement"), "sessionId", sid,
			"replacements", fkArray(f.replacements), "uuid", core.AppendJSString(nil, f.newUUID()), "timestamp", now)
	}
	if f.atis != nil {
		meta("type", core.AppendJSString(nil, "atis-latch"), "sessionId", sid, "atis", core.AppendJSString(nil, *f.atis))
	}
	if f.toolsSet {
		tools := make([][]byte, len(f.tools))
		for i, t := range f.tools {
			tools[i] = core.AppendJSString(nil, t)
		}
		meta("type", core.AppendJSString(nil, "tools-used"), "sessionId", sid, "tools", fkArray(tools))
	}
	var flow *fkFlow
	if f.flows[f.src] != nil {
		// Every session's codes, merged in the order they were met.
		flow = &fkFlow{}
		for _, k := range f.flowOrder {
			flow.add(f.flows[k].codes...)
		}
		for _, k := range f.flowOrder {
			if f.uncovered[k] {
				flow.add(fkCodeUncovered)
				break
			}
		}
		if len(flow.codes) > 0 {
			codes := make([][]byte, len(flow.codes))
			for i, c := range flow.codes {
				codes[i] = strconv.AppendInt(nil, int64(c), 10)
			}
			meta("type", core.AppendJSString(nil, "data-flow-incomplete"), "v", []byte("1"), "sessionId", sid, "codes", fkArray(codes))
		}
		meta("type", core.AppendJSString(nil, "data-flow-records"), "v", []byte("1"), "sessionId", sid,
			"records", []byte("[]"), "snapshot", []byte("true"))
	}
	if flow != nil || f.derivedSet {
		list := fkDedupSessions(f.derived)
		seen := map[string]bool{}
		for _, s := range list {
			if s.id != nil {
				seen[*s.id] = true
			}
		}
		for _, r := range f.transcript {
			ff := r.obj.get("forkedFrom")
			if !fkIsObj(ff) {
				continue
			}
			if id, ok := fkStr(fkField(ff, "sessionId")); ok && fkValidID(id) && !seen[id] {
				seen[id] = true
				list = append(list, fkSession{typ: "claude_code_session", id: &id, via: "fork"})
			}
		}
		src := f.src
		list = fkDedupSessions(append(list, fkSession{typ: "claude_code_session", id: &src, via: "fork"}))
		els := make([][]byte, len(list))
		for i, s := range list {
			els[i] = s.json()
		}
		meta("type", core.AppendJSString(nil, "derived-from"), "v", []byte("1"), "sessionId", sid, "sessions", fkArray(els))
	}
	if f.relocated != "" {
		meta("type", core.AppendJSString(nil, "relocated"), "sessionId", sid, "relocatedCwd", core.AppendJSString(nil, f.relocated))
	}
	title := JSTrim(f.opt.Title)
	if title == "" {
		var src string
		if f.opt.SourceTitle != nil {
			src = f.opt.SourceTitle()
		} else {
			src = ForkSourceTitle(fkJoinLines(source), "")
		}
		if src == "" {
			src = "Forked session"
		}
		title = src + " (fork)"
	}
	meta("type", core.AppendJSString(nil, "custom-title"), "sessionId", sid, "customTitle", core.AppendJSString(nil, title),
		"uuid", core.AppendJSString(nil, f.newUUID()), "timestamp", now)
	return out, nil
}

func fkJoinLines(entries []core.Entry) []byte {
	n := 0
	for i := range entries {
		n += len(entries[i].Raw) + 1
	}
	b := make([]byte, 0, n)
	for i := range entries {
		b = append(b, entries[i].Raw...)
		b = append(b, '\n')
	}
	return b
}

// fkYJ are the keys the fork removes from every row (isSidechain, also in
// the SDK's list, is set to false instead).
var fkYJ = []string{"teamName", "agentName", "sessionKind", "slug", "sourceToolAssistantUUID",
	"summarizedTurnPromptUuids", "droppedPromptUuids", "sentAsUuid", "rowsAheadOfPutBack", "turnAttributionKey"}

var (
	fkNull  = []byte("null")
	fkTrue  = []byte("true")
	fkFalse = []byte("false")
)

// rewrite is one copied row.
func (f *forker) rewrite(r *fkRow, last bool, newOf, keptNew map[string]string, byUUID map[string]*fkRow, sid, now []byte) []byte {
	o := r.obj.clone()
	keep := f.opt.KeepUUIDs

	// The parent: the nearest row above that is not a progress row.
	parent := fkNull
	p := r.obj.get("parentUuid")
	var seen map[string]bool
	for fkTruthy(p) {
		ps, ok := fkStr(p)
		if !ok {
			break
		}
		up := byUUID[ps]
		if up == nil {
			break
		}
		if up.typ != core.TypeProgress {
			parent = core.AppendJSString(nil, newOf[ps])
			break
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		if seen[up.uuid] {
			// A loop of progress rows: the SDK links to the progress row.
			parent = core.AppendJSString(nil, newOf[up.uuid])
			break
		}
		seen[up.uuid] = true
		p = up.obj.get("parentUuid")
	}

	if !keep {
		if r.typ == core.TypeSystem && r.subtype() == "model_refusal_fallback" {
			o.set("neutralizedByFork", fkTrue)
		}
		if v := fkDeferredTools(r, newOf); v != nil {
			o.set("attachment", v)
		}
		if v := fkMapCompactMetadata(r, keptNew); v != nil {
			o.set("compactMetadata", v)
		}
		if key, v := fkMapSourceUUID(r, newOf); v != nil {
			o.set(key, v)
		}
	}

	var ts []byte
	if last && !keep {
		ts = now
	} else {
		ts = r.obj.get("timestamp")
	}
	lp := r.obj.get("logicalParentUuid")
	if !keep && lp != nil && !fkIsNull(lp) {
		if s, ok := fkStr(lp); ok && newOf[s] != "" {
			lp = core.AppendJSString(nil, newOf[s])
		} else {
			lp = fkNull
		}
	}
	o.set("uuid", core.AppendJSString(nil, newOf[r.uuid]))
	o.set("parentUuid", parent)
	o.set("logicalParentUuid", lp)
	o.set("sessionId", sid)
	o.set("timestamp", ts)
	o.set("isSidechain", fkFalse)
	if keep {
		o.set("sessionKind", nil)
	} else {
		for _, k := range fkYJ {
			o.set(k, nil)
		}
	}
	o.set("requestSessionId", fkRequestSession(r))
	ff := newFkObj()
	ff.set("sessionId", core.AppendJSString(nil, f.src))
	ff.set("messageUuid", core.AppendJSString(nil, r.uuid))
	o.set("forkedFrom", ff.bytes())
	return o.bytes()
}

// fkRequestSession is the requestSessionId the fork gives a row: on
// assistant rows the row's own, else its forkedFrom.sessionId, else its
// sessionId; none on other rows.
func fkRequestSession(r *fkRow) []byte {
	if r.typ != core.TypeAssistant {
		return nil
	}
	if v := r.obj.get("requestSessionId"); fkIsStr(v) {
		return v
	}
	if ff := r.obj.get("forkedFrom"); fkIsObj(ff) {
		if v := fkField(ff, "sessionId"); fkIsStr(v) {
			return v
		}
	}
	if v := r.obj.get("sessionId"); fkIsStr(v) {
		return v
	}
	return nil
}

// fkDeferredTools maps a deferred_tools_record attachment's
// nameOnlyAnnouncements to the fresh uuids, dropping the ones not copied.
func fkDeferredTools(r *fkRow, newOf map[string]string) []byte {
	att := r.obj.get("attachment")
	if r.typ != core.TypeAttachment || !fkIsObj(att) || !fkStrIs(fkField(att, "type"), "deferred_tools_record") {
		return nil
	}
	ann := fkField(att, "nameOnlyAnnouncements")
	if !fkIsArr(ann) {
		return nil
	}
	var els [][]byte
	for _, el := range fkElems(ann) {
		if s, ok := fkStr(el); ok && newOf[s] != "" {
			els = append(els, core.AppendJSString(nil, newOf[s]))
		}
	}
	a, _ := fkParseObj(att)
	a.set("nameOnlyAnnouncements", fkArray(els))
	return a.bytes()
}

// fkMapCompactMetadata rewrites a system row's compactMetadata when it has
// preservedMessages, preservedSegment or runningTurnSends: the last is
// dropped, the first two move to the end with their uuids mapped (uuids of
// progress rows and of rows not copied are left as they are).
func fkMapCompactMetadata(r *fkRow, keptNew map[string]string) []byte {
	cm := r.obj.get("compactMetadata")
	if r.typ != core.TypeSystem || !fkIsObj(cm) {
		return nil
	}
	src, _ := fkParseObj(cm)
	pm, ps, rts := src.get("preservedMessages"), src.get("preservedSegment"), src.get("runningTurnSends")
	if pm == nil && ps == nil && rts == nil {
		return nil
	}
	mapOne := func(v []byte) []byte {
		if s, ok := fkStr(v); ok && keptNew[s] != "" {
			return core.AppendJSString(nil, keptNew[s])
		}
		return v
	}
	mapIn := func(v []byte, keys ...string) []byte {
		if !fkIsObj(v) {
			return v
		}
		obj, _ := fkParseObj(v)
		for _, k := range keys {
			x := obj.get(k)
			if x == nil {
				continue
			}
			if fkIsArr(x) {
				els := fkElems(x)
				for i, el := range els {
					els[i] = mapOne(el)
				}
				obj.set(k, fkArray(els))
			} else {
				obj.set(k, mapOne(x))
			}
		}
		return obj.bytes()
	}
	out := newFkObj()
	for j, k := range src.keys {
		switch k {
		case "preservedMessages", "preservedSegment", "runningTurnSends":
			continue
		}
		out.set(k, src.vals[j])
	}
	if pm != nil {
		out.set("preservedMessages", mapIn(pm, "anchorUuid", "uuids", "allUuids"))
	}
	if ps != nil {
		out.set("preservedSegment", mapIn(ps, "headUuid", "anchorUuid", "tailUuid"))
	}
	return out.bytes()
}

// fkQueued is the object holding a row's queued-command source_uuid: a
// queued_command attachment, or a voice_call_talk row's fold.command.
func fkQueued(r *fkRow) (holder []byte, voice bool) {
	if r.typ == core.TypeSystem && r.subtype() == "voice_call_talk" {
		fold := r.obj.get("fold")
		if !fkIsObj(fold) {
			return nil, false
		}
		cmd := fkField(fold, "command")
		if fkIsObj(cmd) {
			return cmd, true
		}
		return nil, false
	}
	if r.typ == core.TypeAttachment {
		att := r.obj.get("attachment")
		if fkIsObj(att) && fkStrIs(fkField(att, "type"), "queued_command") {
			return att, false
		}
	}
	return nil, false
}

// fkSourceUUID is a queued command's source_uuid ("" when none).
func fkSourceUUID(r *fkRow) string {
	h, _ := fkQueued(r)
	if h == nil {
		return ""
	}
	s, _ := fkStr(fkField(h, "source_uuid"))
	return s
}

// fkMapSourceUUID maps a queued command's source_uuid to its fresh uuid.
func fkMapSourceUUID(r *fkRow, newOf map[string]string) (string, []byte) {
	s := fkSourceUUID(r)
	if s == "" || newOf[s] == "" {
		return "", nil
	}
	h, voice := fkQueued(r)
	obj, _ := fkParseObj(h)
	obj.set("source_uuid", core.AppendJSString(nil, newOf[s]))
	if !voice {
		return "attachment", obj.bytes()
	}
	fold, _ := fkParseObj(r.obj.get("fold"))
	fold.set("command", obj.bytes())
	return "fold", fold.bytes()
}

// ---------------------------------------------------------------------------
// The cut (UpTo)

// cut keeps the rows up to upTo, as the SDK does.
func (f *forker) cut(rows []*fkRow, upTo string) ([]*fkRow, error) {
	chain, _, err := fkBuildChain(fkNodes(rows, false))
	if err != nil {
		return nil, err
	}
	first := fkFirstIndex(rows)
	y := -1
	for _, n := range chain {
		if i, ok := first[n.r.uuid]; ok && i > y {
			y = i
		}
	}
	// Look in the conversation and what follows it first, then anywhere.
	h := make([]*fkRow, 0, len(chain)+len(rows)-y-1)
	for _, n := range chain {
		h = append(h, n.r)
	}
	h = append(h, rows[y+1:]...)
	b := -1
	if k := fkFind(h, upTo); k >= 0 {
		if i, ok := first[h[k].uuid]; ok {
			b = i
		}
	} else {
		b = fkFind(rows, upTo)
	}
	if b < 0 {
		return nil, fmt.Errorf("%w: %s in session %s", core.ErrMessageNotFound, upTo, f.src)
	}
	at := rows[b].uuid
	rows = fkDropTrailingBoundary(rows[:b+1])
	rows = fkUnpreserve(at, rows)
	return f.dropDeadBranches(rows)
}

func fkFirstIndex(rows []*fkRow) map[string]int {
	m := make(map[string]int, len(rows))
	for i, r := range rows {
		if _, ok := m[r.uuid]; !ok {
			m[r.uuid] = i
		}
	}
	return m
}

// fkFind is the index of the row with uuid s, else of the queued command
// whose source_uuid is s, else -1.
func fkFind(rows []*fkRow, s string) int {
	for i, r := range rows {
		if r.uuid == s {
			return i
		}
	}
	for i, r := range rows {
		if fkSourceUUID(r) == s {
			return i
		}
	}
	return -1
}

// fkPreserved is a compact boundary's preservedMessages (else
// preservedSegment) object when it has an anchorUuid, else nil.
func fkPreserved(r *fkRow) []byte {
	cm := r.obj.get("compactMetadata")
	if !fkIsObj(cm) {
		return nil
	}
	o := fkField(cm, "preservedMessages")
	if o == nil || fkIsNull(o) {
		o = fkField(cm, "preservedSegment")
	}
	if fkIsObj(o) && fkField(o, "anchorUuid") != nil {
		return o
	}
	return nil
}

func fkAnchorIs(r *fkRow, s string) bool {
	p := fkPreserved(r)
	return p != nil && fkStrIs(fkField(p, "anchorUuid"), s)
}

// fkPreservedUUIDs lists the uuids a compact boundary keeps:
// preservedMessages.uuids, then preservedSegment's headUuid and tailUuid.
// Entries may be non-strings or absent (nil).
func fkPreservedUUIDs(r *fkRow) [][]byte {
	cm := r.obj.get("compactMetadata")
	if !fkIsObj(cm) {
		return nil
	}
	var out [][]byte
	if pm := fkField(cm, "preservedMessages"); fkIsObj(pm) {
		if u := fkField(pm, "uuids"); fkIsArr(u) {
			out = append(out, fkElems(u)...)
		}
	}
	if ps := fkField(cm, "preservedSegment"); fkIsObj(ps) {
		out = append(out, fkField(ps, "headUuid"), fkField(ps, "tailUuid"))
	}
	return out
}

func fkPreservedHas(r *fkRow, s string) bool {
	for _, v := range fkPreservedUUIDs(r) {
		if fkStrIs(v, s) {
			return true
		}
	}
	return false
}

// fkSelfAnchored is a boundary that records no compaction of its own
// (durationMs 0 and anchored at itself).
func fkSelfAnchored(r *fkRow) bool {
	cm := r.obj.get("compactMetadata")
	if !fkIsObj(cm) {
		return false
	}
	d, ok := fkNum(fkField(cm, "durationMs"))
	return ok && d == 0 && fkAnchorIs(r, r.uuid)
}

func fkIsBoundary(r *fkRow) bool {
	return r.typ == core.TypeSystem && r.subtype() == "compact_boundary"
}

// fkRealBoundary is a compact boundary that is not self-anchored.
func fkRealBoundary(r *fkRow) bool { return fkIsBoundary(r) && !fkSelfAnchored(r) }

// fkDropTrailingBoundary drops a compact boundary that follows the cut's
// last user or assistant row, with everything after it, and goes back to
// the last row it preserves (or that row's own anchor) when it has one.
func fkDropTrailingBoundary(rows []*fkRow) []*fkRow {
	t := -1
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].typ == core.TypeUser || rows[i].typ == core.TypeAssistant {
			t = i
			break
		}
	}
	n := -1
	for i := t + 1; i < len(rows); i++ {
		if fkRealBoundary(rows[i]) {
			n = i
			break
		}
	}
	if n < 0 {
		return rows
	}
	bnd := rows[n]
	before := rows[:n]
	var keep [][]byte
	if !fkAnchorIs(bnd, bnd.uuid) {
		keep = append(fkPreservedUUIDs(bnd), bnd.obj.get("logicalParentUuid"))
	}
	i := -1
	for j := len(before) - 1; j >= 0 && i < 0; j-- {
		for _, v := range keep {
			if fkStrIs(v, before[j].uuid) {
				i = j
				break
			}
		}
	}
	l := -1
	if i >= 0 {
		var prev *fkRow
		for j := len(before) - 1; j >= 0; j-- {
			if fkIsBoundary(before[j]) {
				prev = before[j]
				break
			}
		}
		if prev != nil && !fkSelfAnchored(prev) && fkPreservedHas(prev, before[i].uuid) {
			if p := fkPreserved(prev); p != nil {
				if a, ok := fkStr(fkField(p, "anchorUuid")); ok {
					for j := len(before) - 1; j >= 0; j-- {
						if before[j].uuid == a {
							l = j
							break
						}
					}
				}
			}
		}
	}
	u := before
	if c := max(i, l); c >= 0 {
		u = before[:c+1]
	}
	for _, r := range u {
		if r.typ != core.TypeProgress {
			return u
		}
	}
	return rows
}

// fkUnpreserve removes preservedMessages, preservedSegment and postTokens
// from compact boundaries anchored at the cut row.
func fkUnpreserve(at string, rows []*fkRow) []*fkRow {
	out := rows
	copied := false
	for i, r := range rows {
		if !fkRealBoundary(r) || !fkAnchorIs(r, at) {
			continue
		}
		cm, _ := fkParseObj(r.obj.get("compactMetadata"))
		cm.set("preservedMessages", nil)
		cm.set("preservedSegment", nil)
		cm.set("postTokens", nil)
		obj := r.obj.clone()
		obj.set("compactMetadata", cm.bytes())
		if !copied {
			out = append([]*fkRow(nil), rows...)
			copied = true
		}
		out[i] = &fkRow{obj: obj, uuid: r.uuid, typ: r.typ}
	}
	return out
}

// dropDeadBranches leaves out rows that a compact boundary cut off from the
// conversation that ends at the cut's last row, then the branches that
// still hide that conversation.
func (f *forker) dropDeadBranches(rows []*fkRow) ([]*fkRow, error) {
	if len(rows) == 0 {
		return rows, nil
	}
	last := rows[len(rows)-1]
	nodes := fkNodes(rows, true)
	probe := &fkRow{obj: newFkObj(), uuid: f.newUUID(), typ: core.TypeSystem}
	probe.obj.set("type", core.AppendJSString(nil, core.TypeSystem))
	probe.obj.set("uuid", core.AppendJSString(nil, probe.uuid))
	withProbe := append(append([]*fkNode(nil), nodes...), &fkNode{r: probe, parent: core.AppendJSString(nil, last.uuid)})
	want, _, err := fkBuildChain(withProbe)
	if err != nil {
		return nil, err
	}
	first := fkFirstIndex(rows)
	if len(want) == 0 {
		return rows, nil
	}
	start, ok := first[want[0].r.uuid]
	if !ok {
		return rows, nil
	}
	wantSet := make(map[string]bool, len(want))
	for _, n := range want {
		wantSet[n.r.uuid] = true
	}
	byUUID := make(map[string]*fkRow, len(rows))
	for _, r := range rows {
		byUUID[r.uuid] = r
	}
	parentOf := func(r *fkRow) *fkRow {
		if s, ok := fkStr(r.obj.get("parentUuid")); ok && s != "" {
			return byUUID[s]
		}
		return nil
	}
	live := map[string]bool{}
	roots := append([]string{last.uuid}, fkKeys(want)...)
	for _, u := range roots {
		for r := byUUID[u]; r != nil && !live[r.uuid]; r = parentOf(r) {
			live[r.uuid] = true
		}
	}
	removable := func(r *fkRow) bool {
		if live[r.uuid] {
			return false
		}
		i, ok := first[r.uuid]
		if !ok {
			i = start
		}
		return i >= start
	}
	left := map[string]bool{}
	leave := func(t *fkRow) {
		for r := byUUID[t.uuid]; r != nil && removable(r) && !left[r.uuid]; r = parentOf(r) {
			left[r.uuid] = true
		}
		for _, r := range rows {
			if s, ok := fkStr(r.obj.get("parentUuid")); ok && s != "" && left[s] {
				left[r.uuid] = true
			}
		}
	}
	for _, r := range rows {
		if !fkIsBoundary(r) || !removable(r) {
			continue
		}
		hit := false
		for _, v := range fkPreservedUUIDs(r) {
			if s, ok := fkStr(v); ok && live[s] {
				hit = true
				break
			}
		}
		if !hit {
			leave(r)
		}
	}
	for {
		var in []*fkNode
		for _, n := range nodes {
			if !left[n.r.uuid] {
				in = append(in, n)
			}
		}
		got, terminal, err := fkBuildChain(in)
		if err != nil {
			return nil, err
		}
		same := len(got) == len(wantSet)
		for _, n := range got {
			if !same {
				break
			}
			same = wantSet[n.r.uuid]
		}
		if same || terminal == nil || !removable(terminal.r) {
			break
		}
		leave(terminal.r)
	}
	if len(left) == 0 {
		return rows, nil
	}
	out := make([]*fkRow, 0, len(rows)-len(left))
	for _, r := range rows {
		if !left[r.uuid] {
			out = append(out, r)
		}
	}
	return out, nil
}

func fkKeys(nodes []*fkNode) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.r.uuid
	}
	return out
}

// ---------------------------------------------------------------------------
// The SDK's conversation rebuild, as the fork uses it

// fkRow is one transcript row.
type fkRow struct {
	obj  *fkObj
	uuid string
	typ  string

	msgDone bool
	msgID   string // assistant message.id ("" when none)
	uses    []string
	results []string
}

func (r *fkRow) subtype() string {
	s, _ := fkStr(r.obj.get("subtype"))
	return s
}

func (r *fkRow) loadMessage() {
	if r.msgDone {
		return
	}
	r.msgDone = true
	msg := r.obj.get("message")
	if !fkIsObj(msg) {
		return
	}
	if r.typ == core.TypeAssistant {
		r.msgID, _ = fkStr(fkField(msg, "id"))
	}
	for _, b := range fkElems(fkField(msg, "content")) {
		if !fkIsObj(b) {
			continue
		}
		switch t, _ := fkStr(fkField(b, "type")); t {
		case "tool_use":
			if s, ok := fkStr(fkField(b, "id")); ok {
				r.uses = append(r.uses, s)
			}
		case "tool_result":
			if s, ok := fkStr(fkField(b, "tool_use_id")); ok {
				r.results = append(r.results, s)
			}
		}
	}
}

// messageID is an assistant row's non-empty message.id.
func (r *fkRow) messageID() string { r.loadMessage(); return r.msgID }

// hasToolResult reports a user row with a parent whose content holds a
// tool_result block.
func (r *fkRow) hasToolResult(parent []byte) bool {
	if r.typ != core.TypeUser || !fkTruthy(parent) {
		return false
	}
	msg := r.obj.get("message")
	if !fkIsObj(msg) {
		return false
	}
	for _, b := range fkElems(fkField(msg, "content")) {
		if fkIsObj(b) && fkStrIs(fkField(b, "type"), "tool_result") {
			return true
		}
	}
	return false
}

// fkNode is a row as the rebuild sees it: its parent may be re-linked, and
// a clean node reads as the fork's copy (not a sidechain row, no team, no
// sourceToolAssistantUUID).
type fkNode struct {
	r      *fkRow
	parent []byte
	clean  bool
}

func fkNodes(rows []*fkRow, clean bool) []*fkNode {
	out := make([]*fkNode, len(rows))
	for i, r := range rows {
		out[i] = &fkNode{r: r, parent: r.obj.get("parentUuid"), clean: clean}
	}
	return out
}

func (n *fkNode) get(k string) []byte {
	if n.clean {
		if k == "isSidechain" {
			return fkFalse
		}
		for _, y := range fkYJ {
			if k == y {
				return nil
			}
		}
	}
	return n.r.obj.get(k)
}

func (n *fkNode) with(parent []byte) *fkNode {
	c := *n
	c.parent = parent
	return &c
}

// fkBuildChain is the SDK's rebuild of the conversation (the one its
// forkSession uses): compact relinking, the leaf, the walk to the root,
// split-assistant repair. It returns the chain and the terminal row the
// leaf was found from (nil when the fallback chose the leaf).
func fkBuildChain(in []*fkNode) ([]*fkNode, *fkNode, error) {
	order := make([]string, 0, len(in))
	m := make(map[string]*fkNode, len(in))
	pos := make(map[string]int, len(in))
	for i, n := range in {
		if _, ok := m[n.r.uuid]; !ok {
			order = append(order, n.r.uuid)
		}
		m[n.r.uuid] = n
		pos[n.r.uuid] = i
	}
	for _, key := range order {
		h := m[key]
		if !fkIsBoundary(h.r) {
			continue
		}
		cm := h.get("compactMetadata")
		var pm, ps []byte
		if fkIsObj(cm) {
			pm, ps = fkField(cm, "preservedMessages"), fkField(cm, "preservedSegment")
		}
		switch {
		case fkTruthy(pm):
			uuids, skip, err := fkRelinkList(pm, m, h.r.uuid)
			if err != nil {
				return nil, nil, err
			}
			if skip {
				continue
			}
			anchor := fkField(pm, "anchorUuid")
			c := anchor
			for _, w := range uuids {
				m[w] = m[w].with(c)
				c = core.AppendJSString(nil, w)
			}
			head, tail := uuids[0], core.AppendJSString(nil, uuids[len(uuids)-1])
			for _, k := range order {
				if x := m[k]; fkSame(x.parent, anchor) && k != head {
					m[k] = x.with(tail)
				}
			}
		case fkTruthy(ps):
			var head, anchor, tail []byte
			if fkIsObj(ps) {
				head, anchor, tail = fkField(ps, "headUuid"), fkField(ps, "anchorUuid"), fkField(ps, "tailUuid")
			}
			hs, hok := fkStr(head)
			if hok && m[hs] != nil {
				m[hs] = m[hs].with(anchor)
			}
			for _, k := range order {
				if x := m[k]; fkSame(x.parent, anchor) && !(hok && k == hs) {
					m[k] = x.with(tail)
				}
			}
		}
	}
	up := func(n *fkNode) *fkNode {
		if s, ok := fkStr(n.parent); ok && s != "" {
			return m[s]
		}
		return nil
	}
	cand := func(n *fkNode) bool {
		if fkTruthy(n.get("isSidechain")) || fkTruthy(n.get("teamName")) || n.r.typ == core.TypeProgress {
			return false
		}
		return !(n.r.typ == core.TypeAttachment && fkStrIs(fkField(n.get("attachment"), "type"), "fork_briefing"))
	}
	parents := map[string]bool{}
	candParents := map[string]bool{}
	for _, k := range order {
		x := m[k]
		if s, ok := fkStr(x.parent); ok && s != "" {
			parents[s] = true
			if cand(x) {
				candParents[s] = true
			}
		}
	}
	var cands []*fkNode
	for _, k := range order {
		if x := m[k]; cand(x) && !candParents[k] {
			cands = append(cands, x)
		}
	}
	sort.SliceStable(cands, func(a, b int) bool { return pos[cands[a].r.uuid] > pos[cands[b].r.uuid] })
	isMsg := func(n *fkNode) bool { return n.r.typ == core.TypeUser || n.r.typ == core.TypeAssistant }
	var leaf, terminal *fkNode
	visited := map[string]bool{}
	for _, h := range cands {
		var path []string
		here := map[string]bool{}
		for c := h; c != nil && !visited[c.r.uuid] && !here[c.r.uuid]; c = up(c) {
			if isMsg(c) {
				leaf, terminal = c, h
				break
			}
			here[c.r.uuid] = true
			path = append(path, c.r.uuid)
		}
		if leaf != nil {
			break
		}
		for _, u := range path {
			visited[u] = true
		}
	}
	if leaf == nil {
		var found []*fkNode
		for _, k := range order {
			if parents[k] {
				continue
			}
			seen := map[string]bool{}
			for c := m[k]; c != nil && !seen[c.r.uuid]; c = up(c) {
				seen[c.r.uuid] = true
				if isMsg(c) {
					found = append(found, c)
					break
				}
			}
		}
		if len(found) == 0 {
			return nil, nil, nil
		}
		latest := func(list []*fkNode) *fkNode {
			best := list[0]
			for _, x := range list[1:] {
				if pos[x.r.uuid] > pos[best.r.uuid] {
					best = x
				}
			}
			return best
		}
		var main []*fkNode
		for _, c := range found {
			if !fkTruthy(c.get("isSidechain")) && !fkTruthy(c.get("teamName")) && !fkTruthy(c.get("isMeta")) {
				main = append(main, c)
			}
		}
		if len(main) > 0 {
			leaf = latest(main)
		} else {
			leaf = latest(found)
		}
	}
	var chain []*fkNode
	onChain := map[string]bool{}
	for y := m[leaf.r.uuid]; y != nil && !onChain[y.r.uuid]; y = up(y) {
		onChain[y.r.uuid] = true
		chain = append(chain, y)
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}
	return fkRepairSplit(order, m, chain, onChain), terminal, nil
}

// fkRelinkList checks a compact boundary's preservedMessages as the SDK
// uses it: the uuids to chain, or skip when the SDK skips the boundary; an
// error where the SDK throws.
func fkRelinkList(pm []byte, m map[string]*fkNode, boundary string) ([]string, bool, error) {
	bad := fmt.Errorf("%w: compact boundary %s has a malformed compactMetadata.preservedMessages (the SDK fails on it too)",
		ErrForkUnsupported, boundary)
	if !fkIsObj(pm) {
		return nil, false, bad
	}
	u := fkField(pm, "uuids")
	switch {
	case u == nil || fkIsNull(u):
		return nil, false, bad
	case fkIsStr(u):
		if string(u) == `""` {
			return nil, true, nil
		}
		return nil, false, bad
	case fkIsObj(u):
		if fkField(u, "0") != nil {
			return nil, false, bad
		}
		return nil, true, nil
	case !fkIsArr(u):
		return nil, true, nil
	}
	els := fkElems(u)
	if len(els) == 0 {
		return nil, true, nil
	}
	out := make([]string, len(els))
	for i, el := range els {
		s, ok := fkStr(el)
		if !ok || m[s] == nil {
			return nil, true, nil
		}
		out[i] = s
	}
	return out, false, nil
}

// fkRepairSplit puts back, after the chain row holding each assistant
// message id, that message's other rows (older CLIs wrote one row per
// content block) and the tool_result rows answering them, ordered by
// timestamp.
func fkRepairSplit(order []string, m map[string]*fkNode, chain []*fkNode, onChain map[string]bool) []*fkNode {
	var asst []*fkNode
	for _, b := range chain {
		if b.r.typ == core.TypeAssistant {
			asst = append(asst, b)
		}
	}
	if len(asst) == 0 {
		return chain
	}
	chainByMsg := map[string]*fkNode{}
	for _, b := range asst {
		if id := b.r.messageID(); id != "" {
			chainByMsg[id] = b
		}
	}
	byMsg := map[string][]*fkNode{}
	toolUse := map[string]*fkNode{} // nil value: claimed by two messages
	var results []*fkNode
	for _, k := range order {
		b := m[k]
		if id := b.r.messageID(); id != "" {
			byMsg[id] = append(byMsg[id], b)
			b.r.loadMessage()
			for _, x := range b.r.uses {
				w, had := toolUse[x]
				if !had || (w != nil && w.r.messageID() == id) {
					toolUse[x] = b
				} else {
					toolUse[x] = nil
				}
			}
		} else if b.r.hasToolResult(b.parent) {
			results = append(results, b)
		}
	}
	children := map[string][]*fkNode{}
	dedup := map[[2]string]bool{}
	add := func(key string, c *fkNode) {
		k := [2]string{key, c.r.uuid}
		if dedup[k] {
			return
		}
		dedup[k] = true
		children[key] = append(children[key], c)
	}
	same := func(b, c *fkNode) bool {
		side := func(n *fkNode) []byte {
			if v := n.get("isSidechain"); v != nil && !fkIsNull(v) {
				return v
			}
			return fkFalse
		}
		return fkSame(side(b), side(c)) && fkSame(b.get("agentId"), c.get("agentId"))
	}
	for _, b := range results {
		if s, ok := fkStr(b.parent); ok {
			add(s, b)
		}
		if st := b.get("sourceToolAssistantUUID"); fkIsStr(st) && !fkSame(st, b.parent) {
			s, _ := fkStr(st)
			if c := m[s]; c != nil && same(b, c) {
				add(c.r.uuid, b)
			}
		}
		b.r.loadMessage()
		for _, id := range b.r.results {
			if x := toolUse[id]; x != nil && same(b, x) {
				add(x.r.uuid, b)
			}
		}
	}
	answered := map[string]bool{}
	for _, b := range chain {
		b.r.loadMessage()
		for _, id := range b.r.results {
			answered[id] = true
		}
	}
	idx := make(map[string]int, len(order))
	for i, k := range order {
		idx[k] = i
	}
	at := func(n *fkNode) int {
		if i, ok := idx[n.r.uuid]; ok {
			return i
		}
		return math.MaxInt
	}
	byTime := func(list []*fkNode) {
		sort.SliceStable(list, func(a, b int) bool { return fkTimeKey(list[a]) < fkTimeKey(list[b]) })
	}
	done := map[string]bool{}
	extra := map[string][]*fkNode{}
	total := 0
	for _, b := range asst {
		id := b.r.messageID()
		if id == "" || done[id] {
			continue
		}
		done[id] = true
		rs := byMsg[id]
		if len(rs) == 0 {
			rs = []*fkNode{b}
		}
		inMsg := map[string]bool{}
		for _, x := range rs {
			inMsg[x.r.uuid] = true
		}
		var w, k, other []*fkNode
		for _, x := range rs {
			if !onChain[x.r.uuid] {
				w = append(w, x)
			}
		}
		q := map[string]bool{}
		for _, x := range rs {
			for _, c := range children[x.r.uuid] {
				if onChain[c.r.uuid] || q[c.r.uuid] {
					continue
				}
				q[c.r.uuid] = true
				if s, ok := fkStr(c.parent); ok && inMsg[s] {
					k = append(k, c)
				} else {
					other = append(other, c)
				}
			}
		}
		if len(other) > 0 {
			seen := make(map[string]bool, len(answered))
			for id := range answered {
				seen[id] = true
			}
			for _, c := range k {
				for _, id := range c.r.results {
					seen[id] = true
				}
			}
			sort.SliceStable(other, func(a, b int) bool { return at(other[a]) < at(other[b]) })
			for _, c := range other {
				hit := false
				for _, id := range c.r.results {
					if x := toolUse[id]; !seen[id] && x != nil && inMsg[x.r.uuid] {
						hit = true
						break
					}
				}
				if !hit {
					continue
				}
				for _, id := range c.r.results {
					seen[id] = true
				}
				k = append(k, c)
			}
		}
		if len(w) == 0 && len(k) == 0 {
			continue
		}
		byTime(w)
		byTime(k)
		all := append(w, k...)
		for _, x := range all {
			onChain[x.r.uuid] = true
		}
		total += len(all)
		a := chainByMsg[id]
		extra[a.r.uuid] = all
	}
	if total == 0 {
		return chain
	}
	out := make([]*fkNode, 0, len(chain)+total)
	for _, b := range chain {
		out = append(out, b)
		out = append(out, extra[b.r.uuid]...)
	}
	return out
}

// fkTimeKey is a row's timestamp for ordering ("" when absent or null).
// The SDK compares with localeCompare; for ISO-8601 timestamps of one
// format that is the byte order.
func fkTimeKey(n *fkNode) string {
	v := n.get("timestamp")
	if v == nil || fkIsNull(v) {
		return ""
	}
	if s, ok := fkStr(v); ok {
		return s
	}
	return string(v)
}

// ---------------------------------------------------------------------------
// Titles

// fkLastTyped is the SDK's tail search for a metadata value: from the end,
// the first line holding "key": and "type":"typ" (or "type": "typ") that
// parses with a string key; a line that does not parse is retried from
// its last {"type":"typ" when that does not follow ':', ',' or '['.
func fkLastTyped(text []byte, key, typ string) (string, bool) {
	want := []byte(`"` + key + `":`)
	t1 := []byte(`"type":"` + typ + `"`)
	t2 := []byte(`"type": "` + typ + `"`)
	retry := append([]byte{'{'}, t1...)
	for i := len(text); i > 0; {
		a := bytes.LastIndexByte(text[:i], '\n')
		l := text[a+1 : i]
		i = a
		if bytes.Contains(l, want) && (bytes.Contains(l, t1) || bytes.Contains(l, t2)) {
			v, st := fkTypedValue(l, key, typ)
			if st == fkParseFailed {
				if u := bytes.LastIndex(l, retry); u > 0 && !strings.ContainsRune(":,[", rune(l[u-1])) {
					v, st = fkTypedValue(l[u:], key, typ)
				}
			}
			if st == fkFoundString {
				return v, true
			}
		}
		if a < 0 {
			break
		}
	}
	return "", false
}

const (
	fkNotFound = iota
	fkFoundString
	fkParseFailed
)

func fkTypedValue(line []byte, key, typ string) (string, int) {
	if !core.ValidJSON(line) {
		return "", fkParseFailed
	}
	obj, ok := fkParseObj(line)
	if !ok || !fkStrIs(obj.get("type"), typ) {
		return "", fkNotFound
	}
	if s, ok := fkStr(obj.get(key)); ok {
		return s, fkFoundString
	}
	return "", fkNotFound
}

// fkFirstPrompt is the SDK's first prompt of a head as a fork shows it: the
// first line holding "type":"user" (and none of "tool_result",
// "isMeta":true, "isCompactSummary":true) whose prompt text survives the
// rules below; else the first <command-name> met on the way.
func fkFirstPrompt(head []byte) string {
	fallback := ""
	for n := 0; n < len(head); {
		var s []byte
		if o := bytes.IndexByte(head[n:], '\n'); o >= 0 {
			s, n = head[n:n+o], n+o+1
		} else {
			s, n = head[n:], len(head)
		}
		if !bytes.Contains(s, []byte(`"type":"user"`)) && !bytes.Contains(s, []byte(`"type": "user"`)) {
			continue
		}
		if bytes.Contains(s, []byte(`"tool_result"`)) ||
			bytes.Contains(s, []byte(`"isMeta":true`)) || bytes.Contains(s, []byte(`"isMeta": true`)) ||
			bytes.Contains(s, []byte(`"isCompactSummary":true`)) || bytes.Contains(s, []byte(`"isCompactSummary": true`)) {
			continue
		}
		if !core.ValidJSON(s) {
			continue
		}
		obj, ok := fkParseObj(s)
		if !ok {
			continue
		}
		if p, ok := fkPromptOf(obj, &fallback); ok {
			return p
		}
	}
	return fallback
}

var (
	fkCommandRE = regexp.MustCompile(`<command-name>([^\n\r\x{2028}\x{2029}]*?)</command-name>`)
	fkBashRE    = regexp.MustCompile(`(?s)<bash-input>(.*?)</bash-input>`)
	fkTagRE     = regexp.MustCompile(`^(?:` + fkJSSpaceClass + `*<[a-z][A-Za-z0-9_-]*(?:` + fkJSSpaceClass +
		`|>)|\[Request interrupted by user[^\]]*\])`)
)

// fkJSSpaceClass is JavaScript's \s.
const fkJSSpaceClass = `[\t\n\x0B\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}]`

func fkPromptOf(obj *fkObj, fallback *string) (string, bool) {
	if !fkStrIs(obj.get("type"), "user") || fkIsTrue(obj.get("isMeta")) || fkIsTrue(obj.get("isCompactSummary")) {
		return "", false
	}
	msg := obj.get("message")
	if !fkTruthy(msg) {
		return "", false
	}
	var content []byte
	if fkIsObj(msg) {
		content = fkField(msg, "content")
	}
	var texts []string
	shown := false
	if s, ok := fkStr(content); ok {
		if p, ok := fkPluginPrompt(s, obj.get("pluginPrompt")); ok {
			s, shown = p, true
		}
		texts = append(texts, s)
	} else if fkIsArr(content) {
		for _, el := range fkElems(content) {
			if !fkIsObj(el) {
				continue
			}
			t := fkField(el, "type")
			if fkStrIs(t, "tool_result") {
				return "", false
			}
			if fkStrIs(t, "text") {
				if s, ok := fkStr(fkField(el, "text")); ok {
					texts = append(texts, s)
				}
			}
		}
	}
	for _, l := range texts {
		c := JSTrim(strings.ReplaceAll(UnwrapPastedContent(l), "\n", " "))
		if c == "" {
			continue
		}
		if !shown {
			if m := fkCommandRE.FindStringSubmatch(c); m != nil {
				if *fallback == "" {
					*fallback = m[1]
				}
				continue
			}
			if m := fkBashRE.FindStringSubmatch(c); m != nil {
				return "! " + JSTrim(m[1]), true
			}
		}
		if fkTagRE.MatchString(c) {
			continue
		}
		if UTF16Len(c) > 200 {
			c = JSTrim(TruncateUTF16(c, 200)) + "…"
		}
		return c, true
	}
	return "", false
}

// fkPluginTrailer ends the text Claude Code puts in the user's place for a
// plugin's prompt.
const fkPluginTrailer = "\n\nThis is how Claude Code surfaces a prompt a plugin submits between " +
	"turns \u2014 it starts this turn in the user's place. Address the message above."

// fkPluginPrompt shows a plugin's prompt ("The X plugin sent a
// message:\n<text>" + fkPluginTrailer, with pluginPrompt.text = <text>)
// as "Prompt from the X plugin: <text>".
func fkPluginPrompt(s string, pp []byte) (string, bool) {
	const pre, suf = "The ", " plugin sent a message:\n"
	if !fkIsObj(pp) {
		return "", false
	}
	text, ok := fkStr(fkField(pp, "text"))
	if !ok || text == "" {
		return "", false
	}
	first := s[:strings.IndexByte(s, '\n')+1]
	if UTF16Len(first) <= 28 || !strings.HasPrefix(first, pre) || !strings.HasSuffix(first, suf) || s != first+text+fkPluginTrailer {
		return "", false
	}
	return "Prompt from the " + first[len(pre):len(first)-len(suf)] + " plugin: " + text, true
}

// ---------------------------------------------------------------------------
// JSON values, read and written with JavaScript's meaning

// fkObj is a JSON object as an ordered member list, edited the way a
// JavaScript object spread edits: set keeps a key's place or appends it;
// a nil value is undefined, kept in place but left out when written.
type fkObj struct {
	keys []string
	vals [][]byte
	at   map[string]int
}

func newFkObj() *fkObj { return &fkObj{at: map[string]int{}} }

// fkParseObj parses an object; a repeated key keeps its first place and
// its last value, as JSON.parse does.
func fkParseObj(b []byte) (*fkObj, bool) {
	o := newFkObj()
	if !core.JSONObjectEnd(b, func(k, v []byte) { o.set(string(k), v) }) {
		return nil, false
	}
	return o, true
}

func (o *fkObj) get(k string) []byte {
	if j, ok := o.at[k]; ok {
		return o.vals[j]
	}
	return nil
}

func (o *fkObj) set(k string, v []byte) {
	if j, ok := o.at[k]; ok {
		o.vals[j] = v
		return
	}
	o.at[k] = len(o.keys)
	o.keys = append(o.keys, k)
	o.vals = append(o.vals, v)
}

func (o *fkObj) clone() *fkObj {
	c := &fkObj{keys: append([]string(nil), o.keys...), vals: append([][]byte(nil), o.vals...), at: make(map[string]int, len(o.at))}
	for k, v := range o.at {
		c.at[k] = v
	}
	return c
}

// bytes writes the object as JSON.stringify would lay it out: array-index
// keys first in numeric order, then the others in order.
func (o *fkObj) bytes() []byte {
	n := 2
	for j, k := range o.keys {
		n += len(k) + len(o.vals[j]) + 4
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	count := 0
	emit := func(j int) {
		if o.vals[j] == nil {
			return
		}
		if count > 0 {
			b = append(b, ',')
		}
		count++
		b = core.AppendJSString(b, o.keys[j])
		b = append(b, ':')
		b = append(b, o.vals[j]...)
	}
	var index []int
	for j, k := range o.keys {
		if _, ok := fkArrayIndex(k); ok {
			index = append(index, j)
		}
	}
	if len(index) > 0 {
		sort.SliceStable(index, func(a, c int) bool {
			x, _ := fkArrayIndex(o.keys[index[a]])
			y, _ := fkArrayIndex(o.keys[index[c]])
			return x < y
		})
		for _, j := range index {
			emit(j)
		}
	}
	for j, k := range o.keys {
		if _, ok := fkArrayIndex(k); !ok {
			emit(j)
		}
	}
	return append(b, '}')
}

// fkArrayIndex reports a key JavaScript orders as an array index.
func fkArrayIndex(k string) (uint64, bool) {
	if k == "" || len(k) > 10 || (len(k) > 1 && k[0] == '0') {
		return 0, false
	}
	v, err := strconv.ParseUint(k, 10, 64)
	if err != nil || v > math.MaxUint32-1 {
		return 0, false
	}
	return v, true
}

func fkArray(els [][]byte) []byte {
	b := []byte{'['}
	for i, el := range els {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, el...)
	}
	return append(b, ']')
}

func fkIsStr(v []byte) bool  { return len(v) > 0 && v[0] == '"' }
func fkIsObj(v []byte) bool  { return len(v) > 0 && v[0] == '{' }
func fkIsArr(v []byte) bool  { return len(v) > 0 && v[0] == '[' }
func fkIsNull(v []byte) bool { return string(v) == "null" }
func fkIsTrue(v []byte) bool { return string(v) == "true" }

func fkStr(v []byte) (string, bool) { return core.JSONString(v) }

func fkStrIs(v []byte, want string) bool {
	s, ok := fkStr(v)
	return ok && s == want
}

func fkNum(v []byte) (float64, bool) {
	if len(v) == 0 || !(v[0] == '-' || v[0] >= '0' && v[0] <= '9') {
		return 0, false
	}
	x, err := strconv.ParseFloat(string(v), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return x, true
}

// fkTruthy is JavaScript's truthiness of a value (nil is undefined).
func fkTruthy(v []byte) bool {
	switch {
	case v == nil, fkIsNull(v), string(v) == "false", string(v) == `""`:
		return false
	}
	if x, ok := fkNum(v); ok {
		return x != 0
	}
	return true
}

// fkSame is JavaScript's === between two values: undefined equals
// undefined; objects and arrays are never equal.
func fkSame(a, b []byte) bool {
	switch {
	case a == nil || b == nil:
		return a == nil && b == nil
	case fkIsStr(a) || fkIsStr(b):
		x, xok := fkStr(a)
		y, yok := fkStr(b)
		return xok && yok && x == y
	case fkIsObj(a) || fkIsArr(a) || fkIsObj(b) || fkIsArr(b):
		return false
	}
	if x, ok := fkNum(a); ok {
		y, ok := fkNum(b)
		return ok && x == y
	}
	return string(a) == string(b)
}

// fkField is an object's member (the last one of that name), nil when v is
// not an object or has none.
func fkField(v []byte, key string) []byte {
	var out []byte
	if !core.JSONFields(v, func(k, val []byte) {
		if string(k) == key {
			out = val
		}
	}) {
		return nil
	}
	return out
}

// fkElems are an array's elements (nil when v is not an array).
func fkElems(v []byte) [][]byte { return core.JSONElems(v) }

// fkISOTime is Date.prototype.toISOString.
func fkISOTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// fkLossyUTF8 decodes b as a WHATWG UTF-8 decoder does (Node's
// Buffer.toString): each maximal invalid subpart becomes U+FFFD.
func fkLossyUTF8(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			out = append(out, b[i])
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			out = append(out, b[i:i+size]...)
			i += size
			continue
		}
		out = append(out, "\uFFFD"...)
		i += fkInvalidSpan(b[i:])
	}
	return out
}

// fkInvalidSpan is the length of the maximal subpart of an ill-formed
// sequence at b[0]: its lead byte and the continuation bytes that could
// still have completed it.
func fkInvalidSpan(b []byte) int {
	c := b[0]
	need := 0
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c == 0xED:
		need, hi = 2, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		need = 2
	case c == 0xF0:
		need, lo = 3, 0x90
	case c == 0xF4:
		need, hi = 3, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	default:
		return 1
	}
	n := 1
	for n <= need && n < len(b) && b[n] >= lo && b[n] <= hi {
		n++
		lo, hi = 0x80, 0xBF
	}
	return n
}
