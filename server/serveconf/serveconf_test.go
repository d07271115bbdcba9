package serveconf

import (
	"strings"
	"testing"
)

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
		{"trash in days", func(c *Config) { c.TrashRetention = "30d" }, ""},
		{"trash kept", func(c *Config) { c.TrashRetention = "0" }, ""},
		{"bad trash retention", func(c *Config) { c.TrashRetention = "a month" }, "trash_retention"},
		{"tiny trash retention", func(c *Config) { c.TrashRetention = "1s" }, "trash_retention"},
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
