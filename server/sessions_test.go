package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/server/wire"
)

// listed is GET /v1/sessions as a map of id to title.
func listed(t *testing.T, c *client, query string) map[string]string {
	t.Helper()
	r := c.do(http.MethodGet, "/v1/sessions"+query, nil)
	if r.code != http.StatusOK {
		t.Fatalf("GET /v1/sessions%s: %s", query, r)
	}
	var l wire.SessionList
	if err := json.Unmarshal(r.body, &l); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range l.Data {
		out[d.ID] = d.Title
	}
	return out
}

// The listing's titles follow the SDK's order: custom title, AI title, last
// prompt, summary line; a session with none of them has an empty title.
func TestSessionTitles(t *testing.T) {
	s := startServer(t, testConfig(t))
	c := newClient(t, s, tokACME)
	meta := func(sess, typ, key, v string) []byte {
		return []byte(`{"type":"` + typ + `","` + key + `":"` + v + `","sessionId":"` + sess + `"}`)
	}
	post := func(sess string, lines ...[]byte) {
		t.Helper()
		body := eventsBody(append([][]byte{chainEntry(sess, newUUID(), "", "hello")}, lines...)...)
		if res := c.postEvents(sess, body); res.Stored != len(lines)+1 {
			t.Fatalf("stored %+v, want %d", res, len(lines)+1)
		}
	}
	summary, prompt, ai, custom, none := newUUID(), newUUID(), newUUID(), newUUID(), newUUID()
	post(summary, []byte(`{"type":"summary","summary":"Fix the login bug","leafUuid":"`+newUUID()+`"}`))
	post(prompt, meta(prompt, "last-prompt", "lastPrompt", "make it faster"),
		[]byte(`{"type":"summary","summary":"older summary","leafUuid":"`+newUUID()+`"}`))
	post(ai, meta(ai, "ai-title", "aiTitle", "Speed up the parser"), meta(ai, "last-prompt", "lastPrompt", "p"))
	post(custom, meta(custom, "ai-title", "aiTitle", "generated"), meta(custom, "custom-title", "customTitle", "mine"),
		meta(custom, "ai-title", "aiTitle", "generated later"))
	post(none)
	got := listed(t, c, "")
	want := map[string]string{summary: "Fix the login bug", prompt: "make it faster", ai: "Speed up the parser",
		custom: "mine", none: ""}
	for id, title := range want {
		if got[id] != title {
			t.Errorf("session %s: title %q, want %q", id, got[id], title)
		}
	}
}

// id_prefix keeps the sessions whose id starts with it; a bad prefix is a
// 400.
func TestSessionsByPrefix(t *testing.T) {
	s := startServer(t, testConfig(t))
	c := newClient(t, s, tokACME)
	a := "abcd0000-0000-4000-8000-000000000001"
	b := "abcd0000-0000-4000-8000-000000000002"
	other := "ef000000-0000-4000-8000-000000000003"
	for _, id := range []string{a, b, other} {
		c.postEvents(id, eventsBody(chainEntry(id, newUUID(), "", "x")))
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{{"abcd", []string{a, b}}, {"ABCD0000-0000-4000-8000-000000000002", []string{b}}, {"ef", []string{other}}, {"0", nil}} {
		got := listed(t, c, "?id_prefix="+tc.prefix)
		if len(got) != len(tc.want) {
			t.Errorf("id_prefix=%s: %v, want %v", tc.prefix, got, tc.want)
		}
		for _, id := range tc.want {
			if _, ok := got[id]; !ok {
				t.Errorf("id_prefix=%s: %s missing from %v", tc.prefix, id, got)
			}
		}
	}
	if r := c.do(http.MethodGet, "/v1/sessions?id_prefix=zz", nil); r.code != http.StatusBadRequest {
		t.Errorf("id_prefix=zz: %s, want 400", r)
	}
}

// The embedded JetStream runs with the configured sync policy: always by
// default (every acknowledged write fsynced), or the given interval.
func TestSyncPolicy(t *testing.T) {
	for _, tc := range []struct {
		sync   string
		always bool
		every  time.Duration
		metric string
	}{
		{"", true, 0, "scribe_jetstream_sync_always 1"},
		{"always", true, 0, "scribe_jetstream_sync_always 1"},
		{"2m", false, 2 * time.Minute, "scribe_jetstream_sync_interval_seconds 120"},
		{"250ms", false, 250 * time.Millisecond, "scribe_jetstream_sync_always 0"},
	} {
		t.Run("sync="+tc.sync, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.Sync = tc.sync
			s := startServer(t, cfg)
			jc := s.ns.JetStreamConfig()
			if jc.SyncAlways != tc.always || (!tc.always && jc.SyncInterval != tc.every) {
				t.Fatalf("JetStream runs with sync_always=%v sync_interval=%v, want %v %v", jc.SyncAlways, jc.SyncInterval, tc.always, tc.every)
			}
			if r := newClient(t, s, tokACME).do(http.MethodGet, "/metrics", nil); !strings.Contains(string(r.body), tc.metric+"\n") {
				t.Errorf("/metrics has no %q:\n%s", tc.metric, r.body)
			}
		})
	}
	for _, bad := range []string{"sometimes", "1ms", "-1s"} {
		cfg := DefaultConfig()
		cfg.Sync = bad
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "sync") {
			t.Errorf("sync = %q: Validate = %v, want an error naming sync", bad, err)
		}
	}
}
