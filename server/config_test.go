package server

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/config"
)

// The server block of the built-in configuration (example.hcl) states the
// defaults of DefaultConfig.
func TestDefaultBlockIsDefaultConfig(t *testing.T) {
	cfg, err := config.Load("", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server == nil {
		t.Fatal("the built-in configuration has no server block")
	}
	got := &Config{}
	if err := cfg.Server.Decode(got); err != nil {
		t.Fatal(err)
	}
	if want := DefaultConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("server block decodes to\n%+v\nDefaultConfig is\n%+v", got, want)
	}
}

func TestConfigValidate(t *testing.T) {
	good := Token{SHA256: HashToken("x"), Tenant: "acme", Scopes: []string{ScopeRead}}
	tests := []struct {
		name string
		edit func(c *Config)
		want string // "" = valid
	}{
		{"defaults", func(c *Config) {}, ""},
		{"a token", func(c *Config) { c.Tokens = []Token{good} }, ""},
		{"upper-case hash", func(c *Config) {
			c.Tokens = []Token{{SHA256: strings.ToUpper(good.SHA256), Tenant: "acme", Scopes: []string{"write"}}}
		}, ""},
		{"short hash", func(c *Config) { c.Tokens = []Token{{SHA256: "abc", Tenant: "acme", Scopes: []string{"read"}}} }, "tokens[0].sha256"},
		{"same hash twice", func(c *Config) { c.Tokens = []Token{good, good} }, "the same token hash as tokens[0]"},
		{"bad tenant", func(c *Config) {
			c.Tokens = []Token{{SHA256: good.SHA256, Tenant: "Acme.Corp", Scopes: []string{"read"}}}
		}, `tenant "Acme.Corp"`},
		{"no scopes", func(c *Config) { c.Tokens = []Token{{SHA256: good.SHA256, Tenant: "a"}} }, "tokens[0].scopes"},
		{"bad scope", func(c *Config) {
			c.Tokens = []Token{{SHA256: good.SHA256, Tenant: "a", Scopes: []string{"admin"}}}
		}, `unknown scope "admin"`},
		{"replicas 0", func(c *Config) { c.Replicas = 0 }, "replicas 0"},
		{"replicas without a cluster", func(c *Config) { c.Replicas = 3 }, "needs a JetStream cluster"},
		{"replicas with a cluster", func(c *Config) { c.Replicas = 3; c.NatsURL = "nats://127.0.0.1:4222" }, ""},
		{"creds without url", func(c *Config) { c.NatsCreds = "/x.creds" }, "nats_creds"},
		{"tiny body", func(c *Config) { c.MaxBodyBytes = 10 }, "max_body_bytes"},
		{"bad window", func(c *Config) { c.DuplicateWindow = "soon" }, "duplicate_window"},
		{"tiny window", func(c *Config) { c.DuplicateWindow = "1ms" }, "duplicate_window"},
	}
	for _, tt := range tests {
		c := DefaultConfig()
		tt.edit(c)
		err := c.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

func TestDataDirInUse(t *testing.T) {
	cfg := testConfig(t)
	startServer(t, cfg)
	second, err := New(cfg, testLogger(t, "second"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = second.Start(ctx)
	if err == nil || !strings.Contains(err.Error(), "is in use") {
		t.Fatalf("second server on the same data_dir: %v", err)
	}
	if err := second.Shutdown(ctx); err != nil {
		t.Error(err)
	}
}

func TestHashToken(t *testing.T) {
	// sha256("abc")
	if got := HashToken("abc"); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("HashToken = %s", got)
	}
}
