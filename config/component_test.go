package config

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/core"
)

type testRule struct {
	Var    string `json:"var"`
	Equals string `json:"equals,omitempty"`
}

type testBase struct {
	Shared string `json:"shared"`
}

type testConfig struct {
	testBase
	Mode   string            `json:"mode"`
	Count  int               `json:"count"`
	Rules  []testRule        `json:"rules"`
	Tags   map[string]string `json:"tags"`
	Ignore string            `json:"-"`
}

var errBadMode = errors.New("mode must be fast or safe")

func (c *testConfig) Validate() error {
	if c.Mode != "fast" && c.Mode != "safe" {
		return errBadMode
	}
	return nil
}

func defaults() *testConfig {
	return &testConfig{testBase: testBase{Shared: "s"}, Mode: "safe", Count: 3, Rules: []testRule{{Var: "DEFAULT"}}}
}

// loadComponent loads a file holding one sink "test" "Main" block whose
// body is given, and returns the block.
func loadComponent(t *testing.T, body string) (Component, string) {
	t.Helper()
	dir := t.TempDir()
	path := writeFile(t, dir, "c.hcl", "sink \"test\" \"Main\" {\n"+body+"}\n")
	cfg, err := Load(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := cfg.Lookup(core.KindSink, core.MustParseID("test/Main"))
	if !ok {
		t.Fatal("sink test/Main is not in the configuration")
	}
	return c, dir + string(filepath.Separator)
}

func TestComponentDecode(t *testing.T) {
	const valid = "valid: shared, mode, count, rules, tags"
	tests := []struct {
		name    string
		body    string
		want    *testConfig // nil: an error is expected
		wantErr string
	}{
		{name: "empty keeps defaults", body: "", want: defaults()},
		{
			name: "values",
			body: "  mode = \"fast\"\n  count = 7\n  shared = \"x\"\n  rules = [{ var = \"A\", equals = \"1\" }, { var = \"B\" }]\n  tags = { a = \"b\" }\n",
			want: &testConfig{testBase: testBase{Shared: "x"}, Mode: "fast", Count: 7,
				Rules: []testRule{{Var: "A", Equals: "1"}, {Var: "B"}}, Tags: map[string]string{"a": "b"}},
		},
		{name: "null keeps the default", body: "  count = null\n", want: defaults()},
		{
			name:    "unknown option",
			body:    "  mode = \"fast\"\n  moed = \"fast\"\n",
			wantErr: `c.hcl:3:3: sink "test/Main": unknown option "moed" (` + valid + `)`,
		},
		{
			name:    "ignored field is unknown",
			body:    "  Ignore = \"x\"\n",
			wantErr: `c.hcl:2:3: sink "test/Main": unknown option "Ignore" (` + valid + `)`,
		},
		{
			name:    "unknown nested option",
			body:    "  rules = [\n    { var = \"A\" },\n    { var = \"B\", equal = \"1\" },\n  ]\n",
			wantErr: `c.hcl:4:18: sink "test/Main": unknown option "rules[1].equal" (valid: var, equals)`,
		},
		{
			name:    "wrong type",
			body:    "  mode = \"fast\"\n  count = \"many\"\n",
			wantErr: `c.hcl:3:3: sink "test/Main": option "count": want a whole number, got string`,
		},
		{
			name:    "wrong type, fraction",
			body:    "  count = 1.5\n",
			wantErr: `c.hcl:2:3: sink "test/Main": option "count": want a whole number, got number 1.5`,
		},
		{
			name:    "wrong nested type",
			body:    "  rules = [\n    { var = \"A\" },\n    { var = 3 },\n  ]\n",
			wantErr: `c.hcl:4:7: sink "test/Main": option "rules[1].var": want a string, got number`,
		},
		{
			name:    "wrong type in a list",
			body:    "  rules = [{ var = \"A\" }, \"B\"]\n",
			wantErr: `c.hcl:2:28: sink "test/Main": option "rules[1]": want an object, got string`,
		},
		{
			name:    "wrong type in a map",
			body:    "  tags = { a = \"x\", b = false }\n",
			wantErr: `c.hcl:2:21: sink "test/Main": option "tags.b": want a string, got bool`,
		},
		{
			name:    "wrong type, embedded field",
			body:    "  shared = [1]\n",
			wantErr: `c.hcl:2:3: sink "test/Main": option "shared": want a string, got array`,
		},
		{
			name:    "validate",
			body:    "  mode = \"slow\"\n",
			wantErr: `c.hcl:2:3: sink "test/Main": mode must be fast or safe`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, dir := loadComponent(t, tt.body)
			dst := defaults()
			err := c.Decode(dst)
			if tt.want != nil {
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(dst, tt.want) {
					t.Errorf("got  %+v\nwant %+v", dst, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; got %+v", dst)
			}
			if got := strings.ReplaceAll(err.Error(), dir, ""); got != tt.wantErr {
				t.Errorf("got  %s\nwant %s", got, tt.wantErr)
			}
		})
	}
}

func TestComponentDecodeValidateWraps(t *testing.T) {
	c, _ := loadComponent(t, "  mode = \"slow\"\n")
	if err := c.Decode(defaults()); !errors.Is(err, errBadMode) {
		t.Errorf("errors.Is(%v, errBadMode) = false", err)
	}
}

func TestComponentDecodeBadDst(t *testing.T) {
	c, _ := loadComponent(t, "")
	for _, dst := range []any{nil, testConfig{}, (*testConfig)(nil)} {
		if err := c.Decode(dst); err == nil {
			t.Errorf("Decode(%#v) did not fail", dst)
		}
	}
}

// A zero Component (no Body) decodes to the defaults.
func TestComponentDecodeZero(t *testing.T) {
	dst := defaults()
	c := Component{Kind: core.KindSink, ID: core.MustParseID("a/b")}
	if err := c.Decode(dst); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(dst, defaults()) {
		t.Errorf("got %+v", dst)
	}
}
