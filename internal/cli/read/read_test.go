package read

import (
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/internal/cli/cmdtest"
)

// taskSession is the fixture's session whose Task call a subagent
// answered (a second subagent file has no call naming it).
const taskSession = "a3370003-0000-4000-8000-000000000003"

// A bad --color is a usage error: exit 2, the reason and ls's usage line
// on stderr, nothing on stdout.
func TestLsColorIsAUsageError(t *testing.T) {
	s := cmdtest.New(t, NewCmdLs)
	out, errs, code := s.Run("ls", "--all", "--config-dir", cmdtest.Fixture(t), "--color=sometimes")
	want := "scribe: --color \"sometimes\": want auto, always or never\n" +
		"Usage: scribe ls [flags]\nRun 'scribe ls --help' for more.\n"
	if code != 2 || out != "" || errs != want {
		t.Fatalf("ls --color=sometimes: exit %d, stdout %q, stderr:\n%s\nwant exit 2, stderr:\n%s", code, out, errs, want)
	}
}

// show wants exactly one id: none is a usage error (exit 2, its usage
// line), so is a format it does not know.
func TestShowUsageErrors(t *testing.T) {
	s := cmdtest.New(t, NewCmdShow)
	dir := cmdtest.Fixture(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"show", "--config-dir", dir}, "scribe: accepts 1 arg(s), received 0\n"},
		{[]string{"show", "--config-dir", dir, taskSession, "--format", "html"}, "scribe: --format \"html\": want text or md\n"},
	} {
		out, errs, code := s.Run(c.args...)
		want := c.want + "Usage: scribe show ID [flags]\nRun 'scribe show --help' for more.\n"
		if code != 2 || out != "" || errs != want {
			t.Errorf("%v: exit %d, stdout %q, stderr:\n%s\nwant exit 2, stderr:\n%s", c.args, code, out, errs, want)
		}
	}
}

// show --format md is export's Markdown document: with --subagents byte
// for byte what export --format md prints, for every session of the
// fixture; without, the same document less the subagents' conversations.
// The text format stays show's own.
func TestShowMarkdownIsTheExportDocument(t *testing.T) {
	s := cmdtest.New(t, NewCmdShow, NewCmdExport)
	dir := cmdtest.Fixture(t)
	ids := []string{taskSession, "a3370001-0000-4000-8000-000000000001", "a3370008-0000-4000-8000-000000000008"}
	for _, id := range ids {
		export := mustRun(t, s, "export", id, "--format", "md", "--config-dir", dir)
		if show := mustRun(t, s, "show", id, "--format", "md", "--subagents", "--config-dir", dir); show != export {
			t.Errorf("%s: show --format md --subagents differs from export --format md:\n%s\n---\n%s", id, show, export)
		}
	}
	export := mustRun(t, s, "export", taskSession, "--format", "md", "--config-dir", dir)
	show := mustRun(t, s, "show", taskSession, "--format", "md", "--config-dir", dir)
	for _, want := range []string{"# Ask an agent to look around\n", "- **session**: `" + taskSession + "`\n", "<details><summary>Tool call: Task</summary>"} {
		if !strings.Contains(show, want) {
			t.Errorf("show --format md lacks %q:\n%s", want, show)
		}
	}
	if !strings.Contains(export, "<summary>Subagent conversation</summary>") || !strings.Contains(export, "<summary>Subagent d4e5f6</summary>") {
		t.Fatalf("the fixture's export has no subagent conversation to leave out:\n%s", export)
	}
	if got, want := show, dropFolds(export, "Subagent "); got != want {
		t.Errorf("show --format md is not export's document less its subagents:\n%s\n---\n%s", got, want)
	}
	text := mustRun(t, s, "show", taskSession, "--config-dir", dir)
	if !strings.HasPrefix(text, "── user · ") || strings.Contains(text, "<details>") {
		t.Errorf("show's text changed:\n%s", text)
	}
}

// mustRun runs s with args, failing the test unless it exits 0.
func mustRun(t *testing.T, s *cmdtest.Scribe, args ...string) string {
	t.Helper()
	out, errs, code := s.Run(args...)
	if code != 0 {
		t.Fatalf("scribe %v: exit %d\n%s", args, code, errs)
	}
	return out
}

// dropFolds removes from a Markdown document every fold whose summary
// starts with prefix, with what it holds (nested folds included).
func dropFolds(doc, prefix string) string {
	const open, end = "<details><summary>", "</details>\n\n"
	var b strings.Builder
	for {
		i := strings.Index(doc, open+prefix)
		if i < 0 {
			return b.String() + doc
		}
		b.WriteString(doc[:i])
		depth, j := 0, i
		for {
			o, c := strings.Index(doc[j:], open), strings.Index(doc[j:], end)
			if o >= 0 && o < c {
				depth++
				j += o + len(open)
				continue
			}
			depth--
			j += c + len(end)
			if depth == 0 {
				break
			}
		}
		doc = doc[j:]
	}
}
