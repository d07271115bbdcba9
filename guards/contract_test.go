package guards

import (
	"context"
	"testing"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
)

const contractSession = "0565a3a4-0000-4000-8000-000000000001"

// fromFactory returns a NewFor that creates the guard through its factory
// with its default configuration, as the host does.
func fromFactory(f core.GuardFactory) func(t *testing.T, set core.Settings) core.Guard {
	return func(t *testing.T, set core.Settings) core.Guard {
		set.ID = core.ID{Type: f.Type(), Name: "default"}
		g, err := f.CreateGuard(context.Background(), set, f.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
}

// The env, flag and config guards hold to the guard contract, each created
// through its factory from the settings of every case.
func TestGuardContracts(t *testing.T) {
	line := coretest.Line("user", contractSession, "u-1", "")
	env := func(kv ...string) core.Settings { return core.Settings{Environ: kv} }
	args := func(a ...string) core.Settings { return core.Settings{Args: a} }
	days := func(n int) core.Settings { return core.Settings{Host: core.HostInfo{CleanupPeriodDays: n}} }
	for _, tc := range []struct {
		name  string
		f     core.GuardFactory
		cases []coretest.GuardCase
	}{
		{"env", EnvFactory(), []coretest.GuardCase{
			{Name: "empty environment", Settings: env(), Allow: true},
			{Name: "production", Settings: env("NODE_ENV=production"), Allow: true},
			{Name: "test", Settings: env("NODE_ENV=test"), Allow: false},
			{Name: "test, persistence enabled", Settings: env("NODE_ENV=test", "TEST_ENABLE_SESSION_PERSISTENCE=1"), Allow: true},
			{Name: "skip prompt history", Settings: env("CLAUDE_CODE_SKIP_PROMPT_HISTORY=1"), Allow: false},
			{Name: "skip prompt history empty", Settings: env("CLAUDE_CODE_SKIP_PROMPT_HISTORY="), Allow: true},
		}},
		{"flag", FlagFactory(), []coretest.GuardCase{
			{Name: "no flag", Settings: args("record", "--json"), Allow: true},
			{Name: "flag", Settings: args("record", "--no-session-persistence"), Allow: false},
			{Name: "flag=true", Settings: args("record", "--no-session-persistence=true"), Allow: false},
			{Name: "flag=false", Settings: args("record", "--no-session-persistence=false"), Allow: true},
			{Name: "after --", Settings: args("record", "--", "--no-session-persistence"), Allow: true},
		}},
		{"config", ConfigFactory(), []coretest.GuardCase{
			{Name: "30 days", Settings: days(30), Allow: true},
			{Name: "0 days", Settings: days(0), Allow: false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.cases {
				tc.cases[i].Line = line
			}
			coretest.RunGuardContract(t, coretest.GuardHarness{NewFor: fromFactory(tc.f), Cases: tc.cases})
		})
	}
}
