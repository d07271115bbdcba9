package fork

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/jsonv"
)

// The SDK's own output for these rules is compared line by line in
// sinks/jsonl's fork tests; these pin them without the SDK.

const (
	forkTestSrc = "5e550000-0000-4000-8000-000000000000"
	forkTestNew = "fe000000-0000-4000-8000-000000000000"
)

var forkTestNow = time.Date(2026, 3, 4, 5, 6, 7, 890e6, time.UTC)

func forkTestEntries(t *testing.T, lines ...string) []core.Entry {
	t.Helper()
	var out []core.Entry
	for _, l := range lines {
		e, err := core.ParseEntry([]byte(l))
		if err != nil {
			t.Fatalf("parse %s: %v", l, err)
		}
		out = append(out, e)
	}
	return out
}

// forkTestUUIDs draws n-1, n-2, ... so the SDK's call order shows.
func forkTestUUIDs() func() string {
	n := 0
	return func() string {
		n++
		return fmt.Sprintf("n-%d", n)
	}
}

func forkTestRun(t *testing.T, opt Options, lines ...string) []string {
	t.Helper()
	if opt.NewUUID == nil {
		opt.NewUUID = forkTestUUIDs()
	}
	if opt.Now.IsZero() {
		opt.Now = forkTestNow
	}
	res, err := Fork(forkTestEntries(t, lines...), forkTestSrc, opt)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range res.Entries {
		out = append(out, string(e.Raw))
	}
	return out
}

func forkTestSame(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestForkRewritesRows(t *testing.T) {
	got := forkTestRun(t, Options{},
		`{"parentUuid":null,"isSidechain":false,"promptId":"p","type":"user","message":{"role":"user","content":"Fix it"},"uuid":"u1","timestamp":"T1","cwd":"/w","sessionId":"`+forkTestSrc+`","slug":"s","sessionKind":"k","entrypointInherited":true,"nestedSession":true,"askedToGoOn":true,"rowsAheadOfPutBack":2}`,
		`{"parentUuid":"u1","isSidechain":false,"type":"progress","data":{},"uuid":"p1","timestamp":"T2","sessionId":"`+forkTestSrc+`"}`,
		`{"parentUuid":"p1","isSidechain":false,"teamName":"t","message":{"id":"m","role":"assistant","content":[]},"type":"assistant","uuid":"a1","timestamp":"T3","sessionId":"old"}`,
		`{"parentUuid":null,"isSidechain":true,"agentId":"x","type":"user","message":{"role":"user","content":"side"},"uuid":"s1","timestamp":"T4","sessionId":"`+forkTestSrc+`"}`,
		`{"parentUuid":"s1","type":"user","message":{"role":"user","content":"more"},"uuid":"u2","requestSessionId":"gone","sessionId":"`+forkTestSrc+`"}`,
		`{"type":"tag","tag":"x","sessionId":"`+forkTestSrc+`"}`,
		`{"type":"last-prompt","lastPrompt":"more","sessionId":"`+forkTestSrc+`"}`,
	)
	// n-1..n-4 are the rows' uuids (the progress row's included), n-5 the
	// session, n-6 the title row. Since SDK 0.3.337 entrypointInherited,
	// nestedSession and askedToGoOn go, and rowsAheadOfPutBack stays.
	forkTestSame(t, got, []string{
		`{"type":"api-request-route","provider":"unrecorded","credential":"unrecorded","sessionId":"n-5"}`,
		`{"parentUuid":null,"isSidechain":false,"promptId":"p","type":"user","message":{"role":"user","content":"Fix it"},"uuid":"n-1","timestamp":"T1","cwd":"/w","sessionId":"n-5","rowsAheadOfPutBack":2,"forkedFrom":{"sessionId":"` + forkTestSrc + `","messageUuid":"u1"}}`,
		`{"parentUuid":"n-1","isSidechain":false,"message":{"id":"m","role":"assistant","content":[]},"type":"assistant","uuid":"n-3","timestamp":"T3","sessionId":"n-5","requestSessionId":"old","forkedFrom":{"sessionId":"` + forkTestSrc + `","messageUuid":"a1"}}`,
		`{"parentUuid":null,"type":"user","message":{"role":"user","content":"more"},"uuid":"n-4","sessionId":"n-5","timestamp":"2026-03-04T05:06:07.890Z","isSidechain":false,"forkedFrom":{"sessionId":"` + forkTestSrc + `","messageUuid":"u2"}}`,
		`{"type":"custom-title","sessionId":"n-5","customTitle":"Fix it (fork)","uuid":"n-6","timestamp":"2026-03-04T05:06:07.890Z"}`,
	})
}

func TestForkKeepsBytesOfUntouchedValues(t *testing.T) {
	got := forkTestRun(t, Options{NewSessionID: forkTestNew, Title: "t"},
		`{ "parentUuid" : null , "type":"user","message": {"role": "user", "content": "caf\u00e9 <&>"},"uuid":"u1","timestamp":"T","sessionId":"s","2":1,"10":2,"dup":1,"dup":2}`)
	forkTestSame(t, got, []string{
		`{"type":"api-request-route","provider":"unrecorded","credential":"unrecorded","sessionId":"` + forkTestNew + `"}`,
		`{"2":1,"10":2,"parentUuid":null,"type":"user","message":{"role": "user", "content": "caf\u00e9 <&>"},"uuid":"n-1","timestamp":"2026-03-04T05:06:07.890Z","sessionId":"` + forkTestNew + `","dup":2,"isSidechain":false,"forkedFrom":{"sessionId":"` + forkTestSrc + `","messageUuid":"u1"}}`,
		`{"type":"custom-title","sessionId":"` + forkTestNew + `","customTitle":"t","uuid":"n-2","timestamp":"2026-03-04T05:06:07.890Z"}`,
	})
}

func TestForkCarriesMetadata(t *testing.T) {
	s := forkTestSrc
	got := forkTestRun(t, Options{NewSessionID: forkTestNew, Title: "t"},
		`{"type":"history-suppression","sessionId":"x"}`,
		`{"type":"session-owner","accountUuid":"acc","restricted":["ldr"]}`,
		`{"type":"hybrid-organization","organizationUuid":"ABCDEF00-0000-4000-8000-000000000000"}`,
		`{"type":"isolation-latch","side":"web","sessionId":"`+s+`"}`,
		`{"type":"isolation-latch","side":1,"sessionId":"`+s+`"}`,
		`{"type":"api-request-route","provider":"bedrock","credential":"cloud","sessionId":"`+s+`"}`,
		`{"type":"api-request-route","provider":"anthropicFoo","credential":"login","sessionId":"x"}`,
		`{"type":"api-request-route","provider":"unrecorded","credential":"unrecorded","sessionId":"`+s+`"}`,
		`{"type":"api-request-route","provider":"bedrock","credential":"cloud","sessionId":"`+s+`"}`,
		`{"type":"api-request-route","provider":"unrecorded","credential":"key","sessionId":"`+s+`"}`,
		`{"type":"api-request-route","provider":"vertex","sessionId":"`+s+`"}`,
		`{"parentUuid":null,"type":"user","message":{"role":"user","content":"hi"},"uuid":"u1","timestamp":"T","sessionId":"`+s+`"}`,
		`{"type":"content-replacement","sessionId":"`+s+`","replacements":[{"a":1},2]}`,
		`{"type":"content-replacement","sessionId":"other","replacements":[{"b":1}]}`,
		`{"type":"tools-used","sessionId":"`+s+`","tools":["Bash","",1]}`,
		`{"type":"atis-latch","sessionId":"`+s+`","atis":"ok"}`,
		`{"type":"derived-from","v":1,"sessionId":"`+s+`","sessions":[{"type":"claude_code_session","id":"prev","via":"resume"}]}`,
		`{"type":"relocated","sessionId":"`+s+`","relocatedCwd":"/new"}`,
		`{"type":"file-history-snapshot","messageId":"u1","snapshot":{}}`,
		`{"type":"custom-title","customTitle":"old","sessionId":"`+s+`"}`,
		`{"type":"queue-operation","operation":"enqueue","sessionId":"`+s+`"}`,
	)
	n := forkTestNew
	forkTestSame(t, got, []string{
		`{"type":"history-suppression","sessionId":"` + n + `","cause":"fork_inherit","ts":"2026-03-04T05:06:07.890Z"}`,
		`{"type":"hybrid-organization","sessionId":"` + n + `","organizationUuid":"abcdef00-0000-4000-8000-000000000000"}`,
		`{"type":"session-owner","sessionId":"` + n + `","accountUuid":"acc","restricted":["ldr"]}`,
		`{"type":"isolation-latch","side":"connectors","sessionId":"` + n + `"}`,
		`{"type":"api-request-route","provider":"bedrock","credential":"cloud","sessionId":"` + n + `"}`,
		`{"type":"api-request-route","provider":"other","credential":"login","sessionId":"` + n + `"}`,
		`{"type":"api-request-route","provider":"unrecorded","credential":"unrecorded","sessionId":"` + n + `"}`,
		`{"type":"api-request-route","provider":"other","credential":"key","sessionId":"` + n + `"}`,
		`{"parentUuid":null,"type":"user","message":{"role":"user","content":"hi"},"uuid":"n-1","timestamp":"2026-03-04T05:06:07.890Z","sessionId":"` + n + `","isSidechain":false,"forkedFrom":{"sessionId":"` + s + `","messageUuid":"u1"}}`,
		`{"type":"content-replacement","sessionId":"` + n + `","replacements":[{"a":1}],"uuid":"n-2","timestamp":"2026-03-04T05:06:07.890Z"}`,
		`{"type":"atis-latch","sessionId":"` + n + `","atis":"ok"}`,
		`{"type":"tools-used","sessionId":"` + n + `","tools":["Bash"]}`,
		`{"type":"derived-from","v":1,"sessionId":"` + n + `","sessions":[{"type":"claude_code_session","id":"prev","via":"resume"},{"type":"claude_code_session","id":"` + s + `","via":"fork"}]}`,
		`{"type":"relocated","sessionId":"` + n + `","relocatedCwd":"/new"}`,
		`{"type":"custom-title","sessionId":"` + n + `","customTitle":"t","uuid":"n-3","timestamp":"2026-03-04T05:06:07.890Z"}`,
	})
}

func TestForkMapsUUIDsInsideRows(t *testing.T) {
	got := forkTestRun(t, Options{NewSessionID: forkTestNew, Title: "t"},
		`{"parentUuid":null,"type":"user","message":{"role":"user","content":"a"},"uuid":"u1","timestamp":"T1","sessionId":"s"}`,
		`{"parentUuid":"u1","type":"progress","uuid":"p1","timestamp":"T2","sessionId":"s"}`,
		`{"parentUuid":null,"logicalParentUuid":"p1","type":"system","subtype":"compact_boundary","compactMetadata":{"preservedSegment":{"headUuid":"u1","tailUuid":"zz"},"trigger":"auto","runningTurnSends":[1]},"uuid":"b1","timestamp":"T3","sessionId":"s"}`,
		`{"parentUuid":"b1","type":"attachment","attachment":{"type":"queued_command","source_uuid":"u1"},"uuid":"q1","timestamp":"T4","sessionId":"s"}`,
		`{"parentUuid":"q1","type":"attachment","attachment":{"type":"deferred_tools_record","nameOnlyAnnouncements":["p1","u1","x"]},"uuid":"d1","timestamp":"T5","sessionId":"s"}`,
		`{"parentUuid":"d1","type":"system","subtype":"model_refusal_fallback","uuid":"m1","timestamp":"T6","sessionId":"s"}`,
		`{"parentUuid":"m1","type":"attachment","attachment":{"type":"attachment_answer","rowUuid":"p1","x":1},"uuid":"aa1","timestamp":"T7","sessionId":"s"}`,
		`{"parentUuid":"aa1","type":"attachment","attachment":{"type":"attachment_answer","rowUuid":"nope"},"uuid":"aa2","timestamp":"T8","sessionId":"s"}`,
		`{"parentUuid":"aa2","type":"attachment","attachment":{"type":"blocked_prompts_withdrawn","prompts":["u1",7,"zz"],"rest":["aa1"]},"uuid":"bw1","timestamp":"T9","sessionId":"s"}`,
		`{"parentUuid":"bw1","type":"attachment","attachment":{"type":"blocked_prompts_withdrawn","prompts":["u1"],"rest":"aa1"},"uuid":"bw2","timestamp":"T10","sessionId":"s"}`,
	)
	want := []string{
		`{"type":"api-request-route","provider":"unrecorded","credential":"unrecorded","sessionId":"X"}`,
		`{"parentUuid":null,"type":"user","message":{"role":"user","content":"a"},"uuid":"n-1","timestamp":"T1","sessionId":"X","isSidechain":false,"forkedFrom":{"sessionId":"S","messageUuid":"u1"}}`,
		// logicalParentUuid may name a progress row; compactMetadata's
		// preserved uuids map only to copied rows; runningTurnSends goes.
		`{"parentUuid":null,"logicalParentUuid":"n-2","type":"system","subtype":"compact_boundary","compactMetadata":{"trigger":"auto","preservedSegment":{"headUuid":"n-1","tailUuid":"zz"}},"uuid":"n-3","timestamp":"T3","sessionId":"X","isSidechain":false,"forkedFrom":{"sessionId":"S","messageUuid":"b1"}}`,
		`{"parentUuid":"n-3","type":"attachment","attachment":{"type":"queued_command","source_uuid":"n-1"},"uuid":"n-4","timestamp":"T4","sessionId":"X","isSidechain":false,"forkedFrom":{"sessionId":"S","messageUuid":"q1"}}`,
		`{"parentUuid":"n-4","type":"attachment","attachment":{"type":"deferred_tools_record","nameOnlyAnnouncements":["n-2","n-1"]},"uuid":"n-5","timestamp":"T5","sessionId":"X","isSidechain":false,"forkedFrom":{"sessionId":"S","messageUuid":"d1"}}`,
		`{"parentUuid":"n-5","type":"system","subtype":"model_refusal_fallback","uuid":"n-6","timestamp":"T6","sessionId":"X","neutralizedByFork":true,"isSidechain":false,"forkedFrom":{"sessionId":"S","messageUuid":"m1"}}`,
		// SDK 0.3.337: attachment_answer's rowUuid and the elements of
		// blocked_prompts_withdrawn's prompts and rest (both arrays) map.
		`{"parentUuid":"n-6","type":"attachment","attachment":{"type":"attachment_answer","rowUuid":"n-2","x":1},"uuid":"n-7","timestamp":"T7","sessionId":"X","isSidechain":false,"forkedFrom":{"sessionId":"S","messageUuid":"aa1"}}`,
		`{"parentUuid":"n-7","type":"attachment","attachment":{"type":"attachment_answer","rowUuid":"nope"},"uuid":"n-8","timestamp":"T8","sessionId":"X","isSidechain":false,"forkedFrom":{"sessionId":"S","messageUuid":"aa2"}}`,
		`{"parentUuid":"n-8","type":"attachment","attachment":{"type":"blocked_prompts_withdrawn","prompts":["n-1",7,"zz"],"rest":["n-7"]},"uuid":"n-9","timestamp":"T9","sessionId":"X","isSidechain":false,"forkedFrom":{"sessionId":"S","messageUuid":"bw1"}}`,
		`{"parentUuid":"n-9","type":"attachment","attachment":{"type":"blocked_prompts_withdrawn","prompts":["u1"],"rest":"aa1"},"uuid":"n-10","timestamp":"2026-03-04T05:06:07.890Z","sessionId":"X","isSidechain":false,"forkedFrom":{"sessionId":"S","messageUuid":"bw2"}}`,
		`{"type":"custom-title","sessionId":"X","customTitle":"t","uuid":"n-11","timestamp":"2026-03-04T05:06:07.890Z"}`,
	}
	for i := range want {
		want[i] = strings.NewReplacer(`"X"`, `"`+forkTestNew+`"`, `"S"`, `"`+forkTestSrc+`"`).Replace(want[i])
	}
	forkTestSame(t, got, want)
}

func TestForkUpTo(t *testing.T) {
	rows := []string{
		`{"parentUuid":null,"type":"user","message":{"role":"user","content":"one"},"uuid":"u1","timestamp":"T1","sessionId":"s"}`,
		`{"parentUuid":"u1","type":"assistant","message":{"role":"assistant","content":[]},"uuid":"a1","timestamp":"T2","sessionId":"s"}`,
		`{"parentUuid":null,"logicalParentUuid":"a1","type":"system","subtype":"compact_boundary","compactMetadata":{},"uuid":"b1","timestamp":"T3","sessionId":"s"}`,
		`{"parentUuid":"b1","type":"attachment","attachment":{"type":"queued_command","source_uuid":"src-1"},"uuid":"q1","timestamp":"T4","sessionId":"s"}`,
		`{"parentUuid":"q1","type":"user","message":{"role":"user","content":"two"},"uuid":"u2","timestamp":"T5","sessionId":"s"}`,
	}
	origins := func(lines []string) []string {
		var out []string
		for _, l := range lines {
			if i := strings.Index(l, `"messageUuid":"`); i >= 0 {
				out = append(out, strings.SplitN(l[i+len(`"messageUuid":"`):], `"`, 2)[0])
			}
		}
		return out
	}
	for _, c := range []struct {
		upTo string
		want []string
	}{
		{"u1", []string{"u1"}},
		{"a1", []string{"u1", "a1"}},
		// A compact boundary after the cut's last message is dropped.
		{"b1", []string{"u1", "a1"}},
		{"q1", []string{"u1", "a1"}},
		// A queued command is also named by its source_uuid.
		{"src-1", []string{"u1", "a1"}},
		{"u2", []string{"u1", "a1", "b1", "q1", "u2"}},
	} {
		got := origins(forkTestRun(t, Options{UpTo: c.upTo}, rows...))
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("UpTo %s: rows %v, want %v", c.upTo, got, c.want)
		}
	}
	// SDK 0.3.337: plugin state rows (system, content "", pluginRow.name
	// "state:kept") after the cut that hang off the kept chain, through
	// other non-message rows, come along, parented on the fork's last row.
	state := func(id, parent, name string) string {
		return `{"parentUuid":"` + parent + `","type":"system","content":"","pluginRow":{"name":"` + name + `"},"uuid":"` + id + `","timestamp":"T9","sessionId":"s"}`
	}
	kept := append(append([]string(nil), rows[:2]...),
		state("k1", "a1", "state:kept"),
		`{"parentUuid":"k1","type":"attachment","attachment":{"type":"x"},"uuid":"x1","timestamp":"T9","sessionId":"s"}`,
		state("k2", "x1", "state:kept"),
		state("k3", "a1", "state:other"),
		state("k4", "u9", "state:kept"),
		`{"parentUuid":"a1","type":"user","message":{"role":"user","content":"later"},"uuid":"u3","timestamp":"T9","sessionId":"s"}`,
		state("k5", "u3", "state:kept"),
	)
	lines := forkTestRun(t, Options{UpTo: "a1"}, kept...)
	if got := origins(lines); strings.Join(got, ",") != "u1,a1,k1,k2" {
		t.Errorf("UpTo a1 with state rows: rows %v, want u1,a1,k1,k2", got)
	}
	// k1 hangs on a1's copy (n-3; n-1 went to the cut's probe row), k2 on
	// k1's (n-4).
	if len(lines) < 5 || !strings.Contains(lines[3], `"parentUuid":"n-3"`) || !strings.Contains(lines[4], `"parentUuid":"n-4"`) {
		t.Errorf("state rows not parented on the fork's last row:\n%s", strings.Join(lines, "\n"))
	}
	_, err := Fork(forkTestEntries(t, rows...), forkTestSrc, Options{UpTo: "nowhere-1234"})
	if !errors.Is(err, core.ErrMessageNotFound) || !strings.Contains(err.Error(), "nowhere-1234") {
		t.Errorf("unknown UpTo: %v", err)
	}
}

func TestForkDropsBranchesCutOffByCompaction(t *testing.T) {
	// The user compacted, then rewound to before the compaction: a fork at
	// the rewound reply leaves the compacted branch out.
	got := forkTestRun(t, Options{UpTo: "a2b"},
		`{"parentUuid":null,"type":"user","message":{"role":"user","content":"one"},"uuid":"u1","timestamp":"T1","sessionId":"s"}`,
		`{"parentUuid":"u1","type":"assistant","message":{"role":"assistant","content":[]},"uuid":"a1","timestamp":"T2","sessionId":"s"}`,
		`{"parentUuid":null,"logicalParentUuid":"a1","type":"system","subtype":"compact_boundary","compactMetadata":{},"uuid":"b1","timestamp":"T3","sessionId":"s"}`,
		`{"parentUuid":"b1","type":"user","message":{"role":"user","content":"summary"},"isCompactSummary":true,"uuid":"s1","timestamp":"T4","sessionId":"s"}`,
		`{"parentUuid":"s1","type":"user","message":{"role":"user","content":"two"},"uuid":"u2","timestamp":"T5","sessionId":"s"}`,
		`{"parentUuid":"a1","type":"user","message":{"role":"user","content":"two again"},"uuid":"u2b","timestamp":"T6","sessionId":"s"}`,
		`{"parentUuid":"u2b","type":"assistant","message":{"role":"assistant","content":[]},"uuid":"a2b","timestamp":"T7","sessionId":"s"}`,
	)
	var origins []string
	for _, l := range got {
		if i := strings.Index(l, `"messageUuid":"`); i >= 0 {
			origins = append(origins, strings.SplitN(l[i+len(`"messageUuid":"`):], `"`, 2)[0])
		}
	}
	if want := "u1,a1,u2b,a2b"; strings.Join(origins, ",") != want {
		t.Errorf("rows %v, want %s", origins, want)
	}
}

func TestForkKeepUUIDs(t *testing.T) {
	got := forkTestRun(t, Options{KeepUUIDs: true, NewSessionID: forkTestNew, Title: "b"},
		`{"parentUuid":null,"type":"user","message":{"role":"user","content":"a"},"uuid":"u1","timestamp":"T1","sessionId":"s","slug":"keep","sessionKind":"k","entrypointInherited":true,"nestedSession":true,"askedToGoOn":true}`,
		`{"parentUuid":"u1","type":"progress","uuid":"p1","timestamp":"T2","sessionId":"s"}`,
		`{"parentUuid":"p1","type":"assistant","message":{"role":"assistant","content":[]},"uuid":"a1","timestamp":"T3","sessionId":"s","teamName":"keep"}`,
	)
	n, s := forkTestNew, forkTestSrc
	// /branch clears sessionKind, entrypointInherited and nestedSession only.
	forkTestSame(t, got, []string{
		`{"type":"api-request-route","provider":"unrecorded","credential":"unrecorded","sessionId":"` + n + `"}`,
		`{"parentUuid":null,"type":"user","message":{"role":"user","content":"a"},"uuid":"u1","timestamp":"T1","sessionId":"` + n + `","slug":"keep","askedToGoOn":true,"isSidechain":false,"forkedFrom":{"sessionId":"` + s + `","messageUuid":"u1"}}`,
		`{"parentUuid":"u1","type":"assistant","message":{"role":"assistant","content":[]},"uuid":"a1","timestamp":"T3","sessionId":"` + n + `","teamName":"keep","isSidechain":false,"requestSessionId":"s","forkedFrom":{"sessionId":"` + s + `","messageUuid":"a1"}}`,
		`{"type":"custom-title","sessionId":"` + n + `","customTitle":"b","uuid":"n-1","timestamp":"2026-03-04T05:06:07.890Z"}`,
	})
}

func TestForkErrors(t *testing.T) {
	side := `{"parentUuid":null,"isSidechain":true,"type":"user","message":{"role":"user","content":"a"},"uuid":"u1","sessionId":"s"}`
	prog := `{"parentUuid":null,"type":"progress","uuid":"p1","sessionId":"s"}`
	for name, lines := range map[string][]string{"sidechain only": {side}, "progress only": {prog}, "metadata only": {`{"type":"tag","tag":"x"}`}} {
		if _, err := Fork(forkTestEntries(t, lines...), forkTestSrc, Options{}); !errors.Is(err, ErrNoMessages) {
			t.Errorf("%s: %v, want ErrNoMessages", name, err)
		}
	}
	flow := `{"type":"data-flow-records","v":1,"sessionId":"x","records":[]}`
	user := `{"parentUuid":null,"type":"user","message":{"role":"user","content":"a"},"uuid":"u1","sessionId":"s"}`
	if _, err := Fork(forkTestEntries(t, user, flow), forkTestSrc, Options{}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("data-flow records: %v, want ErrUnsupported", err)
	}
	bad := `{"parentUuid":null,"type":"system","subtype":"compact_boundary","compactMetadata":{"preservedMessages":{"anchorUuid":"u1"}},"uuid":"b1","sessionId":"s"}`
	if _, err := Fork(forkTestEntries(t, user, bad), forkTestSrc, Options{UpTo: "u1"}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("preservedMessages without uuids: %v, want ErrUnsupported", err)
	}
	// Without a cut the SDK never rebuilds the chain, so that is fine.
	if _, err := Fork(forkTestEntries(t, user, bad), forkTestSrc, Options{}); err != nil {
		t.Errorf("whole fork: %v", err)
	}
}

func TestForkTitles(t *testing.T) {
	user := func(content string, extra string) string {
		return `{"parentUuid":null,"type":"user","message":{"role":"user","content":` + content + `},"uuid":"u1","sessionId":"s"` + extra + `}`
	}
	title := func(opt Options, lines ...string) string {
		got := forkTestRun(t, opt, lines...)
		last := got[len(got)-1]
		i := strings.Index(last, `"customTitle":"`)
		return strings.SplitN(last[i+len(`"customTitle":"`):], `","uuid"`, 2)[0]
	}
	plugin := `"The foo plugin sent a message:\nDo it` + strings.ReplaceAll(pluginTrailer, "\n", `\n`) + `"`
	long := strings.Repeat("ab ", 80)
	for _, c := range []struct {
		name  string
		opt   Options
		lines []string
		want  string
	}{
		{"given, trimmed", Options{Title: "\u00a0 Mine\u2028"}, []string{user(`"x"`, "")}, "Mine"},
		{"custom title", Options{}, []string{user(`"x"`, ""), `{"type":"custom-title","customTitle":"Named","sessionId":"s"}`}, "Named (fork)"},
		{"empty custom title falls to ai-title", Options{SourceTitle: nil},
			[]string{`{"type":"ai-title","aiTitle":"AI","sessionId":"s"}`, user(`"x"`, ""), `{"type":"custom-title","customTitle":"","sessionId":"s"}`}, "AI (fork)"},
		{"first prompt", Options{}, []string{user(`"  Fix\nthe bug  "`, "")}, "Fix the bug (fork)"},
		{"command fallback", Options{}, []string{user(`"<command-name>/init</command-name>"`, "")}, "/init (fork)"},
		{"bash input", Options{}, []string{user(`"<bash-input> ls </bash-input>"`, "")}, "! ls (fork)"},
		{"interrupted skipped", Options{}, []string{user(`[{"type":"text","text":"[Request interrupted by user]"},{"type":"text","text":"real"}]`, "")}, "real (fork)"},
		{"tool result stops", Options{}, []string{user(`[{"type":"text","text":"no"},{"type":"tool_result"}]`, "")}, "Forked session (fork)"},
		{"plugin prompt", Options{}, []string{user(plugin, `,"pluginPrompt":{"text":"Do it"}`)}, "Prompt from the foo plugin: Do it (fork)"},
		{"pasted content", Options{}, []string{user(`"see\n<pasted_content id=\"00af\">\nbody\n</pasted_content id=\"00af\">\n\nend"`, "")}, "seebodyend (fork)"},
		{"long", Options{}, []string{user(`"`+long+`"`, "")}, strings.TrimSpace(long[:200]) + "… (fork)"},
		{"meta skipped", Options{}, []string{user(`"hidden"`, `,"isMeta":true`)}, "Forked session (fork)"},
		{"store's title", Options{SourceTitle: func() string { return "From store" }}, []string{user(`"x"`, "")}, "From store (fork)"},
	} {
		if got := title(c.opt, c.lines...); got != c.want {
			t.Errorf("%s: title %q, want %q", c.name, got, c.want)
		}
	}
	// The tail's custom title, even empty, beats the sidecar; then the
	// sidecar beats the head's.
	head := `{"type":"custom-title","customTitle":"Head","sessionId":"s"}` + "\n" + strings.Repeat(`{"type":"x"}`+"\n", 7000)
	if got := SourceTitle([]byte(head), "Side"); got != "Side" {
		t.Errorf("sidecar: %q", got)
	}
	if got := SourceTitle([]byte(head), ""); got != "Head" {
		t.Errorf("head title: %q", got)
	}
	if got := SourceTitle([]byte(head+`{"type":"custom-title","customTitle":"","sessionId":"s"}`+"\n"), "Side"); got != "" {
		t.Errorf("empty tail title: %q", got)
	}
	// A line cut by the window is retried from its last {"type":"custom-title".
	torn := `{"a":"b` + `{"type":"custom-title","customTitle":"Torn"}` + "\n"
	if got := SourceTitle([]byte(torn), ""); got != "Torn" {
		t.Errorf("torn line: %q", got)
	}
}

func TestForkLossyUTF8(t *testing.T) {
	for in, want := range map[string]string{
		"ok":                   "ok",
		"a\xffb":               "a\uFFFDb",
		"\xe2\x82":             "\uFFFD",             // a truncated sequence is one subpart
		"\xe2\x82x":            "\uFFFDx",            //
		"\xed\xa0\x80":         "\uFFFD\uFFFD\uFFFD", // a surrogate: each byte
		"\xf0\x90\x80":         "\uFFFD",
		"\xf4\x90\x80\x80":     "\uFFFD\uFFFD\uFFFD\uFFFD",
		"\xc0\xaf":             "\uFFFD\uFFFD",
		"caf\xc3\xa9\xc3":      "café\uFFFD",
		"\xe0\x9f\x80":         "\uFFFD\uFFFD\uFFFD",
		"\xe1\x80\x80\xe1\x80": "\u1000\uFFFD",
	} {
		if got := string(lossyUTF8([]byte(in))); got != want {
			t.Errorf("lossyUTF8(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestForkJSValues(t *testing.T) {
	cases := map[string]bool{"": false, "null": false, "false": false, `""`: false, "0": false, "-0": false, "0.0e5": false,
		"true": true, `"0"`: true, "1": true, "[]": true, "{}": true}
	for v, want := range cases {
		var b []byte
		if v != "" {
			b = []byte(v)
		}
		if got := truthy(b); got != want {
			t.Errorf("truthy(%s) = %v", v, got)
		}
	}
	if !strictEq(nil, nil) || strictEq(nil, []byte("null")) || !strictEq([]byte(`"a"`), []byte(`"\u0061"`)) ||
		!strictEq([]byte("1"), []byte("1.0")) || strictEq([]byte("{}"), []byte("{}")) {
		t.Error("strictEq disagrees with ===")
	}
	if got := string(core.AppendJSString(nil, "a\"\\\n\x01<>&\u2028é")); got != `"a\"\\\n\u0001<>&`+"\u2028é\"" {
		t.Errorf("AppendJSString: %s", got)
	}
}

func FuzzFork(f *testing.F) {
	f.Add(`{"parentUuid":null,"type":"user","message":{"role":"user","content":"a"},"uuid":"u1","sessionId":"s"}`+"\n"+
		`{"parentUuid":"u1","type":"progress","uuid":"p1"}`+"\n"+
		`{"parentUuid":null,"logicalParentUuid":"u1","type":"system","subtype":"compact_boundary","compactMetadata":{"preservedSegment":{"headUuid":"u1","anchorUuid":"p1","tailUuid":"u1"}},"uuid":"b1"}`, "b1")
	f.Add(`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t"}]},"uuid":"a","parentUuid":"a"}`+"\n"+
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t"}]},"uuid":"r","parentUuid":"x","sourceToolAssistantUUID":"a"}`, "r")
	f.Fuzz(func(t *testing.T, file, upTo string) {
		var entries []core.Entry
		for _, l := range strings.Split(file, "\n") {
			if e, err := core.ParseEntry([]byte(l)); err == nil {
				entries = append(entries, e)
			}
		}
		res, err := Fork(entries, "s", Options{UpTo: upTo, NewUUID: forkTestUUIDs(), Now: forkTestNow})
		if err != nil {
			return
		}
		for _, e := range res.Entries {
			if !jsonv.Valid(e.Raw) {
				t.Fatalf("invalid line %s", e.Raw)
			}
		}
	})
}

// forkBenchEntries is a session of n rows of about 1 KiB: user and
// assistant turns with a progress row in each, and a rewind every 50 rows.
func forkBenchEntries(b *testing.B, n int) []core.Entry {
	b.Helper()
	pad := strings.Repeat("x", 900)
	var out []core.Entry
	parent := "null"
	for i := 0; i < n; i++ {
		typ := []string{"user", "progress", "assistant"}[i%3]
		id := fmt.Sprintf("r-%d", i)
		line := fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"type":%q,"message":{"role":%q,"id":"m%d","content":[{"type":"text","text":%q}]},"uuid":%q,"timestamp":"2026-01-10T11:00:00.000Z","cwd":"/w","sessionId":"s"}`,
			parent, typ, typ, i, pad, id)
		e, err := core.ParseEntry([]byte(line))
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, e)
		parent = fmt.Sprintf("%q", id)
		if i%50 == 49 {
			parent = fmt.Sprintf(`"r-%d"`, i-10)
		}
	}
	return out
}

func BenchmarkFork(b *testing.B) {
	entries := forkBenchEntries(b, 10000)
	for _, c := range []struct {
		name string
		upTo string
	}{{"whole", ""}, {"upto-middle", "r-5000"}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := Fork(entries, "s", Options{UpTo: c.upTo, Title: "t"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
