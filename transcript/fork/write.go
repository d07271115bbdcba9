package transcript

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/e0dc0000/scribe/core"
)

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
	connectors   bool      // an isolation-latch row held the source to connectors
	routes       []fkRoute // distinct api-request-route rows, first seen first
}

// fkRoute is an api-request-route row's route, normalised as the SDK does.
type fkRoute struct{ provider, credential string }

// fkUnrecorded is the route of a fork whose source records none.
var fkUnrecorded = fkRoute{"unrecorded", "unrecorded"}

var (
	fkProviders   = []string{"anthropic", "customEndpoint", "bedrock", "vertex", "foundry", "anthropicAws", "mantle", "gateway"}
	fkCredentials = []string{"login", "key", "token", "cloud", "gateway", "none"}
)

// fkNormRoute is the SDK's reading of an api-request-route row: provider
// and credential must both be strings; the unrecorded pair stays as it is;
// otherwise an unknown provider or credential becomes "other".
func fkNormRoute(obj *fkObj) (fkRoute, bool) {
	p, ok := fkStr(obj.get("provider"))
	if !ok {
		return fkRoute{}, false
	}
	c, ok := fkStr(obj.get("credential"))
	if !ok {
		return fkRoute{}, false
	}
	r := fkRoute{p, c}
	if r == fkUnrecorded {
		return r, true
	}
	if !fkHasString(fkProviders, p) {
		r.provider = "other"
	}
	if !fkHasString(fkCredentials, c) {
		r.credential = "other"
	}
	return r, true
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
		if typ == core.TypeSystem && r.subtype() == core.SubtypeCompactBoundary && !fkIsTrue(obj.get("isSidechain")) {
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
		if s, ok := fkStr(obj.get("organizationUuid")); ok && core.IsUUID(s) {
			s = strings.ToLower(s)
			if !fkHasString(f.orgs, s) {
				f.orgs = append(f.orgs, s)
			}
		}
	case typ == "isolation-latch":
		if side := obj.get("side"); fkTruthy(side) && !fkStrIs(side, "web") {
			f.connectors = true
		}
	case typ == "api-request-route":
		if r, ok := fkNormRoute(obj); ok && !fkHasRoute(f.routes, r) {
			f.routes = append(f.routes, r)
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

func fkHasRoute(list []fkRoute, r fkRoute) bool {
	for _, x := range list {
		if x == r {
			return true
		}
	}
	return false
}

func fkChainType(t string) bool {
	switch t {
	case core.TypeUser, core.TypeAssistant, core.TypeAttachment, core.TypeSystem, core.TypeProgress:
		return true
	}
	return false
}

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
	ids := f.drawUUIDs(rows)
	if len(ids.kept) == 0 {
		return nil, fmt.Errorf("%w: session %s", ErrNothingToFork, f.src)
	}
	f.sid = f.opt.NewSessionID
	if f.sid == "" {
		f.sid = f.newUUID()
	}
	sid := core.AppendJSString(nil, f.sid)
	now := core.AppendJSString(nil, f.now)
	var out fkLines
	f.headMeta(&out, sid, now)
	for g, r := range ids.kept {
		out = append(out, f.rewrite(r, g == len(ids.kept)-1, ids.newOf, ids.keptNew, ids.byUUID, sid, now))
	}
	if len(f.replacements) > 0 {
		out.meta("type", core.AppendJSString(nil, "content-replacement"), "sessionId", sid,
			"replacements", fkArray(f.replacements), "uuid", core.AppendJSString(nil, f.newUUID()), "timestamp", now)
	}
	if f.atis != nil {
		out.meta("type", core.AppendJSString(nil, "atis-latch"), "sessionId", sid, "atis", core.AppendJSString(nil, *f.atis))
	}
	if f.toolsSet {
		tools := make([][]byte, len(f.tools))
		for i, t := range f.tools {
			tools[i] = core.AppendJSString(nil, t)
		}
		out.meta("type", core.AppendJSString(nil, "tools-used"), "sessionId", sid, "tools", fkArray(tools))
	}
	f.provenanceMeta(&out, sid)
	if f.relocated != "" {
		out.meta("type", core.AppendJSString(nil, "relocated"), "sessionId", sid, "relocatedCwd", core.AppendJSString(nil, f.relocated))
	}
	out.meta("type", core.AppendJSString(nil, "custom-title"), "sessionId", sid, "customTitle", core.AppendJSString(nil, f.title(source)),
		"uuid", core.AppendJSString(nil, f.newUUID()), "timestamp", now)
	return out, nil
}

// fkLines are the fork's lines.
type fkLines [][]byte

// meta appends a metadata line of these key/value pairs (values are JSON).
func (out *fkLines) meta(kv ...any) {
	o := newFkObj()
	for i := 0; i+1 < len(kv); i += 2 {
		o.set(kv[i].(string), kv[i+1].([]byte))
	}
	*out = append(*out, o.bytes())
}

// fkIDs are the fork's uuids: new by old for every row, and the rows kept.
type fkIDs struct {
	newOf, keptNew map[string]string
	byUUID         map[string]*fkRow
	kept           []*fkRow
}

// drawUUIDs draws fresh uuids for every row, progress rows included (a
// repeated uuid gets the one drawn last), in the SDK's order.
func (f *forker) drawUUIDs(rows []*fkRow) fkIDs {
	ids := fkIDs{newOf: make(map[string]string, len(rows)), byUUID: make(map[string]*fkRow, len(rows))}
	for _, r := range rows {
		if f.opt.KeepUUIDs {
			ids.newOf[r.uuid] = r.uuid
		} else {
			ids.newOf[r.uuid] = f.newUUID()
		}
		ids.byUUID[r.uuid] = r
		if r.typ != core.TypeProgress {
			ids.kept = append(ids.kept, r)
		}
	}
	ids.keptNew = make(map[string]string, len(ids.kept))
	for _, r := range ids.kept {
		ids.keptNew[r.uuid] = ids.newOf[r.uuid]
	}
	return ids
}

// headMeta writes the metadata lines that go before the rows.
func (f *forker) headMeta(out *fkLines, sid, now []byte) {
	if f.historySupp {
		out.meta("type", core.AppendJSString(nil, "history-suppression"), "sessionId", sid, "cause", core.AppendJSString(nil, "fork_inherit"), "ts", now)
	}
	for _, org := range f.orgs {
		out.meta("type", core.AppendJSString(nil, "hybrid-organization"), "sessionId", sid, "organizationUuid", core.AppendJSString(nil, org))
	}
	if f.owner != nil {
		o := newFkObj()
		o.set("type", core.AppendJSString(nil, "session-owner"))
		o.set("sessionId", sid)
		for j, k := range f.owner.keys {
			o.set(k, f.owner.vals[j])
		}
		*out = append(*out, o.bytes())
	}
	if f.connectors {
		out.meta("type", core.AppendJSString(nil, "isolation-latch"), "side", core.AppendJSString(nil, "connectors"), "sessionId", sid)
	}
	routes := f.routes
	if len(routes) == 0 {
		routes = []fkRoute{fkUnrecorded}
	}
	for _, r := range routes {
		out.meta("type", core.AppendJSString(nil, "api-request-route"), "provider", core.AppendJSString(nil, r.provider),
			"credential", core.AppendJSString(nil, r.credential), "sessionId", sid)
	}
}

// provenanceMeta writes the data-flow and derived-from lines.
func (f *forker) provenanceMeta(out *fkLines, sid []byte) {
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
			out.meta("type", core.AppendJSString(nil, "data-flow-incomplete"), "v", []byte("1"), "sessionId", sid, "codes", fkArray(codes))
		}
		out.meta("type", core.AppendJSString(nil, "data-flow-records"), "v", []byte("1"), "sessionId", sid,
			"records", []byte("[]"), "snapshot", []byte("true"))
	}
	if flow == nil && !f.derivedSet {
		return
	}
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
	out.meta("type", core.AppendJSString(nil, "derived-from"), "v", []byte("1"), "sessionId", sid, "sessions", fkArray(els))
}

// title is the fork's title: ForkOptions.Title, else "<source title> (fork)".
func (f *forker) title(source []core.Entry) string {
	if title := JSTrim(f.opt.Title); title != "" {
		return title
	}
	var src string
	if f.opt.SourceTitle != nil {
		src = f.opt.SourceTitle()
	} else {
		src = ForkSourceTitle(fkJoinLines(source), "")
	}
	if src == "" {
		src = "Forked session"
	}
	return src + " (fork)"
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
// the SDK's list, is set to false instead). Since 0.3.337 the list has
// entrypointInherited, nestedSession and askedToGoOn, and no longer
// rowsAheadOfPutBack (Claude Code 2.1.337 does not know it).
var fkYJ = []string{"teamName", "agentName", "sessionKind", "entrypointInherited", "nestedSession", "slug",
	"sourceToolAssistantUUID", "summarizedTurnPromptUuids", "droppedPromptUuids", "sentAsUuid", "turnAttributionKey",
	"askedToGoOn"}

// fkBranchCleared are the keys Claude Code's /branch removes (KeepUUIDs).
var fkBranchCleared = []string{"sessionKind", "entrypointInherited", "nestedSession"}

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
		if v := fkMapAttachment(r, newOf); v != nil {
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
		for _, k := range fkBranchCleared {
			o.set(k, nil)
		}
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

// fkMapAttachment maps the uuids an attachment names to the fresh ones:
//   - deferred_tools_record: nameOnlyAnnouncements, dropping the ones not
//     copied;
//   - attachment_answer: a string rowUuid of a copied row (0.3.337);
//   - blocked_prompts_withdrawn, when prompts and rest are both arrays:
//     their elements, keeping those that name no copied row (0.3.337).
//
// nil when the row is none of these or nothing changes.
func fkMapAttachment(r *fkRow, newOf map[string]string) []byte {
	att := r.obj.get("attachment")
	if r.typ != core.TypeAttachment || !fkIsObj(att) {
		return nil
	}
	mapped := func(el []byte) ([]byte, bool) {
		if s, ok := fkStr(el); ok && newOf[s] != "" {
			return core.AppendJSString(nil, newOf[s]), true
		}
		return el, false
	}
	typ, _ := fkStr(fkField(att, "type"))
	switch typ {
	case "deferred_tools_record":
		ann := fkField(att, "nameOnlyAnnouncements")
		if !fkIsArr(ann) {
			return nil
		}
		els := [][]byte{}
		for _, el := range fkElems(ann) {
			if m, ok := mapped(el); ok {
				els = append(els, m)
			}
		}
		a, _ := fkParseObj(att)
		a.set("nameOnlyAnnouncements", fkArray(els))
		return a.bytes()
	case "attachment_answer":
		m, ok := mapped(fkField(att, "rowUuid"))
		if !ok {
			return nil
		}
		a, _ := fkParseObj(att)
		a.set("rowUuid", m)
		return a.bytes()
	case "blocked_prompts_withdrawn":
		prompts, rest := fkField(att, "prompts"), fkField(att, "rest")
		if !fkIsArr(prompts) || !fkIsArr(rest) {
			return nil
		}
		mapAll := func(v []byte) []byte {
			els := fkElems(v)
			for i, el := range els {
				els[i], _ = mapped(el)
			}
			return fkArray(els)
		}
		a, _ := fkParseObj(att)
		a.set("prompts", mapAll(prompts))
		a.set("rest", mapAll(rest))
		return a.bytes()
	}
	return nil
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
