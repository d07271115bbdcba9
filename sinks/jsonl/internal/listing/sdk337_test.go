package listing

import (
	"context"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/jsonltest"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// The hand-made sessions of testdata/sdk-0.3.337 (see its README.md) carry
// every field and row that changed between SDK 0.3.332 and 0.3.337. Each
// test of these files (sdk337_*_test.go) lays them into fresh config folders and compares scribe's
// answers with the pinned SDK's: when the pin moves, what the next
// release changes shows up here as a failure.

func TestSDK337FixturesListing(t *testing.T) {
	p := peer.Find(t)
	cfg := jsonltest.SDK337Config(t)
	ids := map[string]string{}
	for _, id := range jsonltest.SDK337Sessions(t, cfg) {
		ids[id] = jsonltest.SDK337Cwd
	}
	compareWithSDK(t, p, cfg, queriesFor([]string{jsonltest.SDK337Cwd}, ids))

	// The rules themselves, so that a listing that agrees with the SDK for
	// another reason does not pass unnoticed.
	l := Layout{Layout: layout.Layout{ConfigDir: cfg}}
	infos, err := l.List(context.Background(), sessions.ListOptions{IncludeWorktrees: true})
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]sessions.Info{}
	for _, in := range infos {
		shown[in.SessionID] = in
	}
	// nestedSession after "userType": on the first and the last row: hidden.
	for _, id := range []string{"a3370004-0000-4000-8000-000000000004", "a3370013-0000-4000-8000-000000000013",
		"a3370015-0000-4000-8000-000000000015"} {
		if _, ok := shown[id]; ok {
			t.Errorf("nested session %s is listed with includeProgrammatic false", id)
		}
	}
	for _, id := range []string{"a3370005-0000-4000-8000-000000000005", "a3370006-0000-4000-8000-000000000006",
		"a3370007-0000-4000-8000-000000000007", "a3370014-0000-4000-8000-000000000014"} {
		if _, ok := shown[id]; !ok {
			t.Errorf("%s is hidden with includeProgrammatic false", id)
		}
	}
	for id, want := range map[string]string{
		"a3370008-0000-4000-8000-000000000008": "Family 👨\u200d👩\u200d👧 trip   plan",
		"a3370009-0000-4000-8000-000000000009": "می\u200cخواهم   بروم",
		"a3370010-0000-4000-8000-000000000010": strings.Repeat("x", 50),
	} {
		if got := shown[id].CustomTitle; got != want {
			t.Errorf("%s: sidecar title %q, want %q", id, got, want)
		}
	}
}
