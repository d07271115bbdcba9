package guards

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/core"
)

func check(g core.Guard) error { return g.Check(context.Background(), &core.Entry{}) }

func TestEnvGuard(t *testing.T) {
	rules := EnvConfig{Rules: DefaultEnvRules()}
	for _, tc := range []struct {
		env    []string
		refuse string
	}{
		{nil, ""},
		{[]string{"NODE_ENV=production"}, ""},
		{[]string{"NODE_ENV=test"}, "NODE_ENV=test (set TEST_ENABLE_SESSION_PERSISTENCE to record anyway)"},
		{[]string{"NODE_ENV=test", "TEST_ENABLE_SESSION_PERSISTENCE=1"}, ""},
		{[]string{"NODE_ENV=test", "TEST_ENABLE_SESSION_PERSISTENCE="}, "NODE_ENV=test"},
		{[]string{"CLAUDE_CODE_SKIP_PROMPT_HISTORY=1"}, "CLAUDE_CODE_SKIP_PROMPT_HISTORY is set"},
		{[]string{"CLAUDE_CODE_SKIP_PROMPT_HISTORY="}, ""},
	} {
		err := check(NewEnv(rules, tc.env))
		switch {
		case tc.refuse == "" && err != nil:
			t.Errorf("%v: refused: %v", tc.env, err)
		case tc.refuse != "" && (!errors.Is(err, core.ErrPersistenceDisabled) || !strings.Contains(err.Error(), tc.refuse)):
			t.Errorf("%v: got %v, want a refusal saying %q", tc.env, err, tc.refuse)
		}
	}
}

func TestFlagGuard(t *testing.T) {
	cfg := FlagConfig{Flags: []string{"--no-session-persistence"}}
	for _, tc := range []struct {
		args   []string
		refuse bool
	}{
		{[]string{"record", "x.jsonl"}, false},
		{[]string{"record", "--no-session-persistence"}, true},
		{[]string{"record", "--no-session-persistence=true"}, true},
		{[]string{"record", "--no-session-persistence=false"}, false},
		{[]string{"record", "--", "--no-session-persistence"}, false},
	} {
		if err := check(NewFlag(cfg, tc.args)); (err != nil) != tc.refuse {
			t.Errorf("%v: got %v, want refusal=%v", tc.args, err, tc.refuse)
		}
	}
	bad := FlagConfig{Flags: []string{"no-dash"}}
	if err := bad.Validate(); err == nil {
		t.Error("a flag without -- was accepted")
	}
}

func TestConfigGuard(t *testing.T) {
	if err := check(NewConfig(0, "")); !errors.Is(err, core.ErrPersistenceDisabled) {
		t.Errorf("cleanup_period_days=0: %v", err)
	}
	if err := check(NewConfig(30, "scribe.hcl:3:23")); err != nil {
		t.Errorf("cleanup_period_days=30: %v", err)
	}
	// The refusal names where the 0 came from.
	for from, want := range map[string]string{
		"env SCRIBE_CLEANUP_PERIOD_DAYS": "cleanup_period_days = 0 (from env SCRIBE_CLEANUP_PERIOD_DAYS)",
		"/etc/scribe.hcl:3:23":           "cleanup_period_days = 0 (from /etc/scribe.hcl:3:23)",
		"":                               "cleanup_period_days = 0 (from the configuration)",
	} {
		if err := check(NewConfig(0, from)); err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("from %q: got %v, want a refusal ending %q", from, err, want)
		}
	}
}

func TestFactories(t *testing.T) {
	ctx := context.Background()
	set := core.Settings{ID: core.MustParseID("env/default"), Environ: []string{"NODE_ENV=test"}}
	f := EnvFactory()
	g, err := f.CreateGuard(ctx, set, f.DefaultConfig())
	if err != nil || check(g) == nil {
		t.Fatalf("env factory with defaults under NODE_ENV=test: %v, %v", g, err)
	}
	ff := FlagFactory()
	g, err = ff.CreateGuard(ctx, core.Settings{Args: []string{"--no-session-persistence"}}, ff.DefaultConfig())
	if err != nil || check(g) == nil {
		t.Fatalf("flag factory with defaults: %v", err)
	}
	cf := ConfigFactory()
	g, err = cf.CreateGuard(ctx, core.Settings{Host: core.HostInfo{CleanupPeriodDays: 0, CleanupPeriodDaysFrom: "flag --cleanup-period-days"}}, cf.DefaultConfig())
	if err != nil || check(g) == nil || !strings.Contains(check(g).Error(), "from flag --cleanup-period-days") {
		t.Fatalf("config factory: %v, %v", err, check(g))
	}
	if _, err := f.CreateGuard(ctx, set, &FlagConfig{}); err == nil {
		t.Error("env factory accepted a flag config")
	}
}
