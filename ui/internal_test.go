package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/sessions"
)

func TestSafeHref(t *testing.T) {
	for href, want := range map[string]bool{
		"https://example.com/a": true, "http://x": true, "mailto:a@b.c": true, "/sessions/x": true, "#m-1": true, "a/b:c": true,
		"javascript:alert(1)": false, " JavaScript:alert(1)": false, "java\tscript:alert(1)": false, "data:text/html,x": false,
		"vbscript:x": false, "file:///etc/passwd": false, "//evil.example/": false, "\\\\evil.example": false, "/\\evil.example": false, "": false,
	} {
		if got := safeHref(href); got != want {
			t.Errorf("safeHref(%q) = %v, want %v", href, got, want)
		}
	}
}

func TestLineDiff(t *testing.T) {
	got := lineDiff("a\nb\nc\nd\n", "a\nB\nc\nd\ne\n")
	want := []diffLine{{" ", "a"}, {"-", "b"}, {"+", "B"}, {" ", "c"}, {" ", "d"}, {"+", "e"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lineDiff = %v, want %v", got, want)
	}
	if got := chunks(lineDiff("", "x\ny\n")); len(got) != 1 || got[0].Text != "+ x\n+ y\n" {
		t.Errorf("a new file is one chunk: %v", got)
	}
}

func TestToolSummary(t *testing.T) {
	for _, c := range []struct{ name, input, want string }{
		{"Read", `{"file_path":"/src/a.go"}`, "/src/a.go"},
		{"Bash", `{"command":"go test ./...\necho done"}`, "go test ./... …"},
		{"Grep", `{"pattern":"func main","path":"cmd"}`, "func main in cmd"},
		{"Glob", `{"pattern":"**/*.go"}`, "**/*.go"},
		{"Task", `{"description":"find it","subagent_type":"Explore"}`, "Explore: find it"},
		{"Mystery", `{"url":"https://x"}`, "https://x"},
		{"TaskCreate", `{"subject":"Research plan mode","description":"long"}`, "Research plan mode"},
		{"TaskUpdate", `{"taskId":"1","status":"in_progress","owner":"alice"}`, "task 1: in_progress, alice"},
		{"TaskUpdate", `{"taskId":"2"}`, "task 2"},
		{"SendMessage", `{"to":"bob","summary":"round 2","message":"long"}`, "to bob: round 2"},
	} {
		if got := toolSummary(c.name, []byte(c.input)); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if got := toolSummary("Bash", []byte(`{"command":"`+strings.Repeat("x", 500)+`"}`)); len([]rune(got)) != maxSummary {
		t.Errorf("a long command is cut to %d runes: %d", maxSummary, len([]rune(got)))
	}
}

func TestMarkdownRawHTMLIsText(t *testing.T) {
	md := newMarkdown()
	got := string(md.render("hi <b onclick=x>there</b>\n\n<div>\n<script>x</script>\n</div>\n\n```go\nfunc main() {}\n```\n"))
	for _, want := range []string{"&lt;b onclick=x&gt;", "&lt;script&gt;x&lt;/script&gt;", `class="chroma"`} {
		if !strings.Contains(got, want) {
			t.Errorf("render lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "<b ") || strings.Contains(got, "<script") || strings.Contains(got, "<div>") {
		t.Errorf("raw HTML went through:\n%s", got)
	}
}

// A tool's input is shown field by field in its order, a string as its
// lines, anything else as JSON; an input that is not an object is not.
func TestInputFields(t *testing.T) {
	got := inputFields([]byte(`{"prompt":"line one\nline \"two\"","n":3,"opts":{"a":[1,2]}}`))
	want := []fieldView{{"prompt", "line one\nline \"two\""}, {"n", "3"}, {"opts", "{\n  \"a\": [\n    1,\n    2\n  ]\n}"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fields %q, want %q", got, want)
	}
	for _, raw := range []string{`[1,2]`, `"x"`, `{}`, `{"a":`, ``} {
		if f := inputFields([]byte(raw)); f != nil {
			t.Errorf("%s: fields %q", raw, f)
		}
	}
}

// A builder that indexes calls and results only as far from the window as
// a lookup needs renders every window as one that indexed the whole
// conversation first: results far after their call, calls far before a
// result shown alone, a call with no result, wherever the window starts.
func TestLazyBuilderRendersAsTheWholeIndex(t *testing.T) {
	var all []sessions.Message
	add := func(typ string, content string) {
		all = append(all, sessions.Message{Type: typ, UUID: fmt.Sprintf("u%03d", len(all)),
			Message: json.RawMessage(`{"role":"` + typ + `","content":` + content + `}`)})
	}
	use := func(id, name string) string {
		return `[{"type":"tool_use","id":"` + id + `","name":"` + name + `","input":{"command":"` + id + `"}}]`
	}
	res := func(id string) string {
		return `[{"type":"tool_result","tool_use_id":"` + id + `","content":"out of ` + id + `"}]`
	}
	for i := range 60 {
		switch {
		case i == 5:
			add("assistant", use("far", "Bash"))
		case i == 45:
			add("user", res("far"))
		case i == 20:
			add("assistant", use("never", "Read"))
		case i%2 == 0:
			add("assistant", use(fmt.Sprintf("c%d", i), "Grep"))
		default:
			add("user", res(fmt.Sprintf("c%d", i-1)))
		}
	}
	md := newMarkdown()
	whole := func(at int) *builder {
		b := newBuilder(md, all, at)
		for b.grow(true) {
		}
		return b
	}
	for _, w := range [][2]int{{0, 10}, {40, 50}, {15, 25}, {50, 60}, {0, 60}, {44, 46}} {
		lazy := newBuilder(md, all, w[0]).views(all[w[0]:w[1]], nil)
		eager := whole(w[0]).views(all[w[0]:w[1]], nil)
		if !reflect.DeepEqual(lazy, eager) {
			t.Errorf("window %v: lazy and whole index render differently", w)
		}
	}
	b := newBuilder(md, all, 50)
	if b.callOf("c48") != "Grep" || b.lo < 40 {
		t.Errorf("a near call: %q, indexed from %d", b.callOf("c48"), b.lo)
	}
	if b.callOf("far") != "Bash" || b.lo > 5 {
		t.Errorf("a far call: indexed from %d", b.lo)
	}
	if _, ok := b.resultOf("never"); ok || b.hi != len(all) {
		t.Errorf("a call with no result: found, or indexed to %d", b.hi)
	}
}

// A template that fails is answered 500 with its error, not with the page
// cut short where it failed.
func TestRenderFailureIsSaid(t *testing.T) {
	a, err := newAssets("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.tpl.New("boom").Parse(`<main>before{{.Missing}}after</main>`); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	a.render(rec, "boom", struct{}{})
	if rec.Code != http.StatusInternalServerError || strings.Contains(rec.Body.String(), "before") || !strings.Contains(rec.Body.String(), "could not be drawn") {
		t.Errorf("a failing template: %d %q", rec.Code, rec.Body.String())
	}
}
