package fork

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/transcript"
	"github.com/e0dc0000/scribe/transcript/internal/jsjson"
)

// The fork

type forker struct {
	src     string
	opt     Options
	newUUID func() string
	now     string
	sid     string

	// What the SDK's loader gathers from the whole source.
	transcript   []*row
	historySupp  bool
	atis         *string
	tools        []string
	toolsSet     bool
	flows        map[string]*dataFlow
	flowOrder    []string
	uncovered    map[string]bool
	derived      []derivation
	derivedSet   bool
	orgs         []string
	owner        *jsjson.Object
	replacements [][]byte
	relocated    string
	connectors   bool    // an isolation-latch row held the source to connectors
	routes       []route // distinct api-request-route rows, first seen first
}

// route is an api-request-route row's route, normalised as the SDK does.
type route struct{ provider, credential string }

// unrecorded is the route of a fork whose source records none.
var unrecorded = route{"unrecorded", "unrecorded"}

var (
	providers   = []string{"anthropic", "customEndpoint", "bedrock", "vertex", "foundry", "anthropicAws", "mantle", "gateway"}
	credentials = []string{"login", "key", "token", "cloud", "gateway", "none"}
)

// normRoute is the SDK's reading of an api-request-route row: provider
// and credential must both be strings; the unrecorded pair stays as it is;
// otherwise an unknown provider or credential becomes "other".
func normRoute(obj *jsjson.Object) (route, bool) {
	p, ok := stringOf(obj.Get("provider"))
	if !ok {
		return route{}, false
	}
	c, ok := stringOf(obj.Get("credential"))
	if !ok {
		return route{}, false
	}
	r := route{p, c}
	if r == unrecorded {
		return r, true
	}
	if !hasString(providers, p) {
		r.provider = "other"
	}
	if !hasString(credentials, c) {
		r.credential = "other"
	}
	return r, true
}

// dataFlow is the data-flow state of one session id: here only its
// "incomplete" codes (scribe refuses sources with data-flow records).
type dataFlow struct{ codes []int }

func (fl *dataFlow) add(codes ...int) {
	for _, c := range codes {
		if !hasInt(fl.codes, c) {
			fl.codes = append(fl.codes, c)
		}
	}
}

func hasInt(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// Data-flow "incomplete" codes the fork adds.
const (
	codeNotFlowed = 11 // a transcript row written without data-flow tracking
	codeLost      = 12 // derived-from sessions that could not be read
	codeUncovered = 13 // a compact boundary with no data-flow snapshot after it
)

func (f *forker) flow(sid string) *dataFlow {
	fl := f.flows[sid]
	if fl == nil {
		fl = &dataFlow{}
		f.flows[sid] = fl
		f.flowOrder = append(f.flowOrder, sid)
	}
	return fl
}

// take is the SDK loader's handling of one parsed line.
func (f *forker) take(obj *jsjson.Object) error {
	typ, typOK := stringOf(obj.Get("type"))
	if id, ok := stringOf(obj.Get("uuid")); ok && typOK && chainType(typ) {
		r := &row{obj: obj, uuid: id, typ: typ}
		f.transcript = append(f.transcript, r)
		if typ == core.TypeSystem && r.subtype() == core.SubtypeCompactBoundary && !isTrue(obj.Get("isSidechain")) {
			if sid, ok := stringOf(obj.Get("sessionId")); ok {
				f.uncovered[sid] = true
			}
		}
		if !isTrue(obj.Get("dataFlowOn")) && !truthy(obj.Get("isSidechain")) {
			for _, k := range f.flowOrder {
				f.flows[k].add(codeNotFlowed)
			}
		}
		return nil
	}
	if !typOK {
		return nil
	}
	sid, sidOK := stringOf(obj.Get("sessionId"))
	own := sidOK && sid == f.src
	switch {
	case typ == "history-suppression":
		f.historySupp = true
	case typ == "atis-latch" && own:
		if a, ok := stringOf(obj.Get("atis")); ok && visibleASCII(a) {
			f.atis = &a
		}
	case typ == "tools-used" && own && isArr(obj.Get("tools")):
		f.tools, f.toolsSet = nil, true
		for _, el := range elems(obj.Get("tools")) {
			if s, ok := stringOf(el); ok && s != "" {
				f.tools = append(f.tools, s)
			}
		}
	case (typ == "data-flow-records" || typ == "data-flow-incomplete") && sidOK && obj.Get("agentId") == nil:
		if typ == "data-flow-records" {
			return fmt.Errorf("%w: session %s has data-flow records, which scribe does not merge", ErrUnsupported, f.src)
		}
		f.flow(sid).add(flowCodes(obj.Get("codes"))...)
	case typ == "derived-from" && own:
		sessions, lost := derivedSessions(obj)
		if lost {
			f.derived = dedupSessions(append(f.derived, sessions...))
			f.flow(f.src).add(codeLost)
		} else {
			f.derived = sessions
		}
		f.derivedSet = true
	case typ == "hybrid-organization":
		if s, ok := stringOf(obj.Get("organizationUuid")); ok && core.IsUUID(s) {
			s = strings.ToLower(s)
			if !hasString(f.orgs, s) {
				f.orgs = append(f.orgs, s)
			}
		}
	case typ == "isolation-latch":
		if side := obj.Get("side"); truthy(side) && !strIs(side, "web") {
			f.connectors = true
		}
	case typ == "api-request-route":
		if r, ok := normRoute(obj); ok && !hasRoute(f.routes, r) {
			f.routes = append(f.routes, r)
		}
	case typ == "session-owner":
		if f.owner == nil {
			f.owner = restrictedOwner(obj)
		}
	case typ == "content-replacement" && own && isArr(obj.Get("replacements")):
		for _, el := range elems(obj.Get("replacements")) {
			if isObj(el) {
				f.replacements = append(f.replacements, el)
			}
		}
	case typ == "relocated" && own:
		if s, ok := stringOf(obj.Get("relocatedCwd")); ok && s != "" {
			f.relocated = s
		}
	}
	return nil
}

func hasRoute(list []route, r route) bool {
	for _, x := range list {
		if x == r {
			return true
		}
	}
	return false
}

func chainType(t string) bool {
	switch t {
	case core.TypeUser, core.TypeAssistant, core.TypeAttachment, core.TypeSystem, core.TypeProgress:
		return true
	}
	return false
}

func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// flowCodes reads a data-flow-incomplete row's codes: integers 1..255,
// anything else counting as 1, deduplicated; [1] when there are none.
func flowCodes(v []byte) []int {
	var out []int
	for _, el := range elems(v) {
		c := 1
		if x, ok := jsjson.Num(el); ok && x == math.Trunc(x) && x >= 1 && x <= 255 {
			c = int(x)
		}
		if !hasInt(out, c) {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return []int{1}
	}
	return out
}

// restrictedOwner is a session-owner row's owner when it is restricted, else nil.
func restrictedOwner(obj *jsjson.Object) *jsjson.Object {
	acct, ok := stringOf(obj.Get("accountUuid"))
	if !ok || acct == "" {
		return nil
	}
	restricted := false
	for _, el := range elems(obj.Get("restricted")) {
		if s, ok := stringOf(el); ok && s == "ldr" {
			restricted = true
		}
	}
	if !restricted {
		return nil
	}
	o := jsjson.New()
	o.Set("accountUuid", core.AppendJSString(nil, acct))
	if org, ok := stringOf(obj.Get("organizationUuid")); ok {
		o.Set("organizationUuid", core.AppendJSString(nil, org))
	}
	o.Set("restricted", []byte(`["ldr"]`))
	return o
}

// derivation is one entry of a derived-from row.
type derivation struct {
	typ, via, started string
	id                *string // nil for an "unknown" session's null id
}

func (s derivation) key() string {
	id := ""
	if s.id != nil {
		id = *s.id
	}
	return s.typ + "\n" + id + "\n" + s.via + "\n" + s.started
}

var (
	sessionTypes = []string{"claude_code_session", "unknown"}
	sessionVias  = []string{"clear", "fork", "branch", "background", "cloud", "teleport", "teammate", "launch",
		"subprocess", "resume", "import", "compact"}
)

// derivedSessions reads a derived-from row: its valid sessions, and
// whether any entry (or the whole list) was unreadable.
func derivedSessions(obj *jsjson.Object) ([]derivation, bool) {
	if v, ok := jsjson.Num(obj.Get("v")); !ok || v != 1 || !isArr(obj.Get("sessions")) {
		return nil, true
	}
	var out []derivation
	lost := false
	for _, el := range elems(obj.Get("sessions")) {
		s, ok := derivedSession(el)
		if !ok {
			lost = true
			continue
		}
		out = append(out, s)
	}
	return dedupSessions(out), lost
}

func derivedSession(v []byte) (derivation, bool) {
	if !isObj(v) {
		return derivation{}, false
	}
	typ, _ := stringOf(field(v, "type"))
	via, _ := stringOf(field(v, "via"))
	if !hasString(sessionTypes, typ) || !hasString(sessionVias, via) {
		return derivation{}, false
	}
	s := derivation{typ: typ, via: via}
	id := field(v, "id")
	if typ == "unknown" {
		if !isNull(id) {
			return derivation{}, false
		}
	} else {
		str, ok := stringOf(id)
		if !ok || !validID(str) {
			return derivation{}, false
		}
		s.id = &str
	}
	if st, ok := stringOf(field(v, "started")); ok && validID(st) {
		s.started = st
	}
	return s, true
}

// validID is the SDK's check for ids in provenance records: a string of
// 1 to 256 UTF-16 units without control characters.
func validID(s string) bool {
	if s == "" || transcript.UTF16Len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return false
		}
	}
	return true
}

func dedupSessions(list []derivation) []derivation {
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

func (s derivation) json() []byte {
	o := jsjson.New()
	o.Set("type", core.AppendJSString(nil, s.typ))
	if s.id == nil {
		o.Set("id", jsonNull)
	} else {
		o.Set("id", core.AppendJSString(nil, *s.id))
	}
	o.Set("via", core.AppendJSString(nil, s.via))
	if s.started != "" {
		o.Set("started", core.AppendJSString(nil, s.started))
	}
	return o.Bytes()
}

// fork builds the new file's lines.
func (f *forker) fork(source []core.Entry) ([][]byte, error) {
	var rows []*row
	for _, r := range f.transcript {
		if !truthy(r.obj.Get("isSidechain")) {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: session %s", ErrNoMessages, f.src)
	}
	if f.opt.UpTo != "" {
		var err error
		if rows, err = f.cut(rows, f.opt.UpTo); err != nil {
			return nil, err
		}
	}
	ids := f.drawUUIDs(rows)
	if len(ids.kept) == 0 {
		return nil, fmt.Errorf("%w: session %s", ErrNoMessages, f.src)
	}
	f.sid = f.opt.NewSessionID
	if f.sid == "" {
		f.sid = f.newUUID()
	}
	sid := core.AppendJSString(nil, f.sid)
	now := core.AppendJSString(nil, f.now)
	var out outLines
	f.headMeta(&out, sid, now)
	for g, r := range ids.kept {
		out = append(out, f.rewrite(r, g == len(ids.kept)-1, ids.newOf, ids.keptNew, ids.byUUID, sid, now))
	}
	if len(f.replacements) > 0 {
		out.meta("type", core.AppendJSString(nil, "content-replacement"), "sessionId", sid,
			"replacements", jsjson.Array(f.replacements), "uuid", core.AppendJSString(nil, f.newUUID()), "timestamp", now)
	}
	if f.atis != nil {
		out.meta("type", core.AppendJSString(nil, "atis-latch"), "sessionId", sid, "atis", core.AppendJSString(nil, *f.atis))
	}
	if f.toolsSet {
		tools := make([][]byte, len(f.tools))
		for i, t := range f.tools {
			tools[i] = core.AppendJSString(nil, t)
		}
		out.meta("type", core.AppendJSString(nil, "tools-used"), "sessionId", sid, "tools", jsjson.Array(tools))
	}
	f.provenanceMeta(&out, sid)
	if f.relocated != "" {
		out.meta("type", core.AppendJSString(nil, "relocated"), "sessionId", sid, "relocatedCwd", core.AppendJSString(nil, f.relocated))
	}
	out.meta("type", core.AppendJSString(nil, "custom-title"), "sessionId", sid, "customTitle", core.AppendJSString(nil, f.title(source)),
		"uuid", core.AppendJSString(nil, f.newUUID()), "timestamp", now)
	return out, nil
}

// outLines are the fork's lines.
type outLines [][]byte

// meta appends a metadata line of these key/value pairs (values are JSON).
func (out *outLines) meta(kv ...any) {
	o := jsjson.New()
	for i := 0; i+1 < len(kv); i += 2 {
		o.Set(kv[i].(string), kv[i+1].([]byte))
	}
	*out = append(*out, o.Bytes())
}

// rowIDs are the fork's uuids: new by old for every row, and the rows kept.
type rowIDs struct {
	newOf, keptNew map[string]string
	byUUID         map[string]*row
	kept           []*row
}

// drawUUIDs draws fresh uuids for every row, progress rows included (a
// repeated uuid gets the one drawn last), in the SDK's order.
func (f *forker) drawUUIDs(rows []*row) rowIDs {
	ids := rowIDs{newOf: make(map[string]string, len(rows)), byUUID: make(map[string]*row, len(rows))}
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
func (f *forker) headMeta(out *outLines, sid, now []byte) {
	if f.historySupp {
		out.meta("type", core.AppendJSString(nil, "history-suppression"), "sessionId", sid, "cause", core.AppendJSString(nil, "fork_inherit"), "ts", now)
	}
	for _, org := range f.orgs {
		out.meta("type", core.AppendJSString(nil, "hybrid-organization"), "sessionId", sid, "organizationUuid", core.AppendJSString(nil, org))
	}
	if f.owner != nil {
		o := jsjson.New()
		o.Set("type", core.AppendJSString(nil, "session-owner"))
		o.Set("sessionId", sid)
		for k, v := range f.owner.Members() {
			o.Set(k, v)
		}
		*out = append(*out, o.Bytes())
	}
	if f.connectors {
		out.meta("type", core.AppendJSString(nil, "isolation-latch"), "side", core.AppendJSString(nil, "connectors"), "sessionId", sid)
	}
	routes := f.routes
	if len(routes) == 0 {
		routes = []route{unrecorded}
	}
	for _, r := range routes {
		out.meta("type", core.AppendJSString(nil, "api-request-route"), "provider", core.AppendJSString(nil, r.provider),
			"credential", core.AppendJSString(nil, r.credential), "sessionId", sid)
	}
}

// provenanceMeta writes the data-flow and derived-from lines.
func (f *forker) provenanceMeta(out *outLines, sid []byte) {
	var flow *dataFlow
	if f.flows[f.src] != nil {
		// Every session's codes, merged in the order they were met.
		flow = &dataFlow{}
		for _, k := range f.flowOrder {
			flow.add(f.flows[k].codes...)
		}
		for _, k := range f.flowOrder {
			if f.uncovered[k] {
				flow.add(codeUncovered)
				break
			}
		}
		if len(flow.codes) > 0 {
			codes := make([][]byte, len(flow.codes))
			for i, c := range flow.codes {
				codes[i] = strconv.AppendInt(nil, int64(c), 10)
			}
			out.meta("type", core.AppendJSString(nil, "data-flow-incomplete"), "v", []byte("1"), "sessionId", sid, "codes", jsjson.Array(codes))
		}
		out.meta("type", core.AppendJSString(nil, "data-flow-records"), "v", []byte("1"), "sessionId", sid,
			"records", []byte("[]"), "snapshot", []byte("true"))
	}
	if flow == nil && !f.derivedSet {
		return
	}
	list := dedupSessions(f.derived)
	seen := map[string]bool{}
	for _, s := range list {
		if s.id != nil {
			seen[*s.id] = true
		}
	}
	for _, r := range f.transcript {
		ff := r.obj.Get("forkedFrom")
		if !isObj(ff) {
			continue
		}
		if id, ok := stringOf(field(ff, "sessionId")); ok && validID(id) && !seen[id] {
			seen[id] = true
			list = append(list, derivation{typ: "claude_code_session", id: &id, via: "fork"})
		}
	}
	src := f.src
	list = dedupSessions(append(list, derivation{typ: "claude_code_session", id: &src, via: "fork"}))
	els := make([][]byte, len(list))
	for i, s := range list {
		els[i] = s.json()
	}
	out.meta("type", core.AppendJSString(nil, "derived-from"), "v", []byte("1"), "sessionId", sid, "sessions", jsjson.Array(els))
}

// title is the fork's title: Options.Title, else "<source title> (fork)".
func (f *forker) title(source []core.Entry) string {
	if title := transcript.JSTrim(f.opt.Title); title != "" {
		return title
	}
	var src string
	if f.opt.SourceTitle != nil {
		src = f.opt.SourceTitle()
	} else {
		src = SourceTitle(joinLines(source), "")
	}
	if src == "" {
		src = "Forked session"
	}
	return src + " (fork)"
}

func joinLines(entries []core.Entry) []byte {
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

// removedKeys (the SDK's YJ) are the keys the fork removes from every row
// (isSidechain, also in the SDK's list, is set to false instead). Since
// 0.3.337 the list has entrypointInherited, nestedSession and askedToGoOn,
// and no longer rowsAheadOfPutBack (Claude Code 2.1.337 does not know it).
var removedKeys = []string{"teamName", "agentName", "sessionKind", "entrypointInherited", "nestedSession", "slug",
	"sourceToolAssistantUUID", "summarizedTurnPromptUuids", "droppedPromptUuids", "sentAsUuid", "turnAttributionKey",
	"askedToGoOn"}

// branchCleared are the keys Claude Code's /branch removes (KeepUUIDs).
var branchCleared = []string{"sessionKind", "entrypointInherited", "nestedSession"}

var (
	jsonNull  = []byte("null")
	jsonTrue  = []byte("true")
	jsonFalse = []byte("false")
)

// rewrite is one copied row.
func (f *forker) rewrite(r *row, last bool, newOf, keptNew map[string]string, byUUID map[string]*row, sid, now []byte) []byte {
	o := r.obj.Clone()
	keep := f.opt.KeepUUIDs

	// The parent: the nearest row above that is not a progress row.
	parent := jsonNull
	p := r.obj.Get("parentUuid")
	var seen map[string]bool
	for truthy(p) {
		ps, ok := stringOf(p)
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
		p = up.obj.Get("parentUuid")
	}

	if !keep {
		if r.typ == core.TypeSystem && r.subtype() == "model_refusal_fallback" {
			o.Set("neutralizedByFork", jsonTrue)
		}
		if v := mapAttachment(r, newOf); v != nil {
			o.Set("attachment", v)
		}
		if v := mapCompactMetadata(r, keptNew); v != nil {
			o.Set("compactMetadata", v)
		}
		if key, v := mapSourceUUID(r, newOf); v != nil {
			o.Set(key, v)
		}
	}

	var ts []byte
	if last && !keep {
		ts = now
	} else {
		ts = r.obj.Get("timestamp")
	}
	lp := r.obj.Get("logicalParentUuid")
	if !keep && lp != nil && !isNull(lp) {
		if s, ok := stringOf(lp); ok && newOf[s] != "" {
			lp = core.AppendJSString(nil, newOf[s])
		} else {
			lp = jsonNull
		}
	}
	o.Set("uuid", core.AppendJSString(nil, newOf[r.uuid]))
	o.Set("parentUuid", parent)
	o.Set("logicalParentUuid", lp)
	o.Set("sessionId", sid)
	o.Set("timestamp", ts)
	o.Set("isSidechain", jsonFalse)
	if keep {
		for _, k := range branchCleared {
			o.Set(k, nil)
		}
	} else {
		for _, k := range removedKeys {
			o.Set(k, nil)
		}
	}
	o.Set("requestSessionId", requestSession(r))
	ff := jsjson.New()
	ff.Set("sessionId", core.AppendJSString(nil, f.src))
	ff.Set("messageUuid", core.AppendJSString(nil, r.uuid))
	o.Set("forkedFrom", ff.Bytes())
	return o.Bytes()
}

// requestSession is the requestSessionId the fork gives a row: on
// assistant rows the row's own, else its forkedFrom.sessionId, else its
// sessionId; none on other rows.
func requestSession(r *row) []byte {
	if r.typ != core.TypeAssistant {
		return nil
	}
	if v := r.obj.Get("requestSessionId"); isStr(v) {
		return v
	}
	if ff := r.obj.Get("forkedFrom"); isObj(ff) {
		if v := field(ff, "sessionId"); isStr(v) {
			return v
		}
	}
	if v := r.obj.Get("sessionId"); isStr(v) {
		return v
	}
	return nil
}

// mapAttachment maps the uuids an attachment names to the fresh ones:
//   - deferred_tools_record: nameOnlyAnnouncements, dropping the ones not
//     copied;
//   - attachment_answer: a string rowUuid of a copied row (0.3.337);
//   - blocked_prompts_withdrawn, when prompts and rest are both arrays:
//     their elements, keeping those that name no copied row (0.3.337).
//
// nil when the row is none of these or nothing changes.
func mapAttachment(r *row, newOf map[string]string) []byte {
	att := r.obj.Get("attachment")
	if r.typ != core.TypeAttachment || !isObj(att) {
		return nil
	}
	mapped := func(el []byte) ([]byte, bool) {
		if s, ok := stringOf(el); ok && newOf[s] != "" {
			return core.AppendJSString(nil, newOf[s]), true
		}
		return el, false
	}
	typ, _ := stringOf(field(att, "type"))
	switch typ {
	case "deferred_tools_record":
		ann := field(att, "nameOnlyAnnouncements")
		if !isArr(ann) {
			return nil
		}
		els := [][]byte{}
		for _, el := range elems(ann) {
			if m, ok := mapped(el); ok {
				els = append(els, m)
			}
		}
		a, _ := jsjson.Parse(att)
		a.Set("nameOnlyAnnouncements", jsjson.Array(els))
		return a.Bytes()
	case "attachment_answer":
		m, ok := mapped(field(att, "rowUuid"))
		if !ok {
			return nil
		}
		a, _ := jsjson.Parse(att)
		a.Set("rowUuid", m)
		return a.Bytes()
	case "blocked_prompts_withdrawn":
		prompts, rest := field(att, "prompts"), field(att, "rest")
		if !isArr(prompts) || !isArr(rest) {
			return nil
		}
		mapAll := func(v []byte) []byte {
			els := elems(v)
			for i, el := range els {
				els[i], _ = mapped(el)
			}
			return jsjson.Array(els)
		}
		a, _ := jsjson.Parse(att)
		a.Set("prompts", mapAll(prompts))
		a.Set("rest", mapAll(rest))
		return a.Bytes()
	}
	return nil
}

// mapCompactMetadata rewrites a system row's compactMetadata when it has
// preservedMessages, preservedSegment or runningTurnSends: the last is
// dropped, the first two move to the end with their uuids mapped (uuids of
// progress rows and of rows not copied are left as they are).
func mapCompactMetadata(r *row, keptNew map[string]string) []byte {
	cm := r.obj.Get("compactMetadata")
	if r.typ != core.TypeSystem || !isObj(cm) {
		return nil
	}
	src, _ := jsjson.Parse(cm)
	pm, ps, rts := src.Get("preservedMessages"), src.Get("preservedSegment"), src.Get("runningTurnSends")
	if pm == nil && ps == nil && rts == nil {
		return nil
	}
	mapOne := func(v []byte) []byte {
		if s, ok := stringOf(v); ok && keptNew[s] != "" {
			return core.AppendJSString(nil, keptNew[s])
		}
		return v
	}
	mapIn := func(v []byte, keys ...string) []byte {
		if !isObj(v) {
			return v
		}
		obj, _ := jsjson.Parse(v)
		for _, k := range keys {
			x := obj.Get(k)
			if x == nil {
				continue
			}
			if isArr(x) {
				els := elems(x)
				for i, el := range els {
					els[i] = mapOne(el)
				}
				obj.Set(k, jsjson.Array(els))
			} else {
				obj.Set(k, mapOne(x))
			}
		}
		return obj.Bytes()
	}
	out := jsjson.New()
	for k, v := range src.Members() {
		switch k {
		case "preservedMessages", "preservedSegment", "runningTurnSends":
			continue
		}
		out.Set(k, v)
	}
	if pm != nil {
		out.Set("preservedMessages", mapIn(pm, "anchorUuid", "uuids", "allUuids"))
	}
	if ps != nil {
		out.Set("preservedSegment", mapIn(ps, "headUuid", "anchorUuid", "tailUuid"))
	}
	return out.Bytes()
}

// queued is the object holding a row's queued-command source_uuid: a
// queued_command attachment, or a voice_call_talk row's fold.command.
func queued(r *row) (holder []byte, voice bool) {
	if r.typ == core.TypeSystem && r.subtype() == "voice_call_talk" {
		fold := r.obj.Get("fold")
		if !isObj(fold) {
			return nil, false
		}
		cmd := field(fold, "command")
		if isObj(cmd) {
			return cmd, true
		}
		return nil, false
	}
	if r.typ == core.TypeAttachment {
		att := r.obj.Get("attachment")
		if isObj(att) && strIs(field(att, "type"), "queued_command") {
			return att, false
		}
	}
	return nil, false
}

// sourceUUID is a queued command's source_uuid ("" when none).
func sourceUUID(r *row) string {
	h, _ := queued(r)
	if h == nil {
		return ""
	}
	s, _ := stringOf(field(h, "source_uuid"))
	return s
}

// mapSourceUUID maps a queued command's source_uuid to its fresh uuid.
func mapSourceUUID(r *row, newOf map[string]string) (string, []byte) {
	s := sourceUUID(r)
	if s == "" || newOf[s] == "" {
		return "", nil
	}
	h, voice := queued(r)
	obj, _ := jsjson.Parse(h)
	obj.Set("source_uuid", core.AppendJSString(nil, newOf[s]))
	if !voice {
		return "attachment", obj.Bytes()
	}
	fold, _ := jsjson.Parse(r.obj.Get("fold"))
	fold.Set("command", obj.Bytes())
	return "fold", fold.Bytes()
}
