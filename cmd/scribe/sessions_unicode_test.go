package main_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/transcript"
)

// tag and rename write, for tricky Unicode, exactly what the SDK's
// tagSession (through its Unicode sanitizer) and renameSession write: each
// value runs through the SDK's function on one copy of a session and
// through scribe on another; the files must be byte-identical and
// listSessions equal. (NUL cannot be carried by argv, nor a lone surrogate
// by a Go string: neither reaches either side from a shell.)
func TestTagAndRenameUnicodeMatchTheSDK(t *testing.T) {
	t.Parallel() // a long, self-contained run: it overlaps the others
	p := peer.Find(t)
	sdkDir, ourDir := t.TempDir(), t.TempDir()
	ids := p.GenFixture(t, sdkDir, "/home/alice/src/shop")
	copyTree(t, sdkDir, ourDir)
	id := ids["withSummaryAndSubagent"]
	values := []string{
		"e\u0301cole a\u0308\u0304 \u1100\u1161\u11A8",                                      // combining marks, conjoining jamo
		"👩\u200D💻 dev 👨\u200D👩\u200D👧 \u2764\uFE0F",                                         // emoji ZWJ sequences, variation selector
		"\u200Fabc\u202Edef\u2066x\u2069 \u061C\u200E",                                      // RTL marks and isolates
		"re\u200Blease\uFEFF\u2060-\u00AD1",                                                 // zero-width characters, soft hyphen
		"é\x01b\x1f\x7f\u0085c",                                                             // C0, DEL and C1 controls (Cc is kept)
		"tab\there\x01",                                                                     // ASCII: left as it is
		"ｒｅｌｅａｓｅ－１ ﬁx ①② ㍿ ℌ ｶﾞ",                                                            // full-width, ligatures, compatibility forms
		"\uE000private\U000F0000 x\U000E0080y",                                              // private use, unassigned
		"🏴\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F",                     // tag characters (Cf)
		"\u3000wide space\u3000 \u2028",                                                     // trimmed only after NFKC
		"a" + strings.Repeat("\u0301", 25) + "b",                                            // a run of marks under 30
		"x\u0323\u0307 q\u0307\u0323",                                                       // canonical reordering
		strings.Repeat("ñ", 150) + strings.Repeat("🎉", 80) + strings.Repeat("e\u0301", 150), // long: the SDK normalizes in chunks
	}
	// Each step on both sides, the folders copied after it: the SDK's steps
	// in one process, then what the SDK sees of every pair of copies in one.
	snaps := t.TempDir()
	var steps []peer.MutateStep
	var groups []peer.ViewGroup
	var whats []string
	for i, v := range values {
		for _, op := range []string{"tag", "rename"} {
			n := len(steps)
			sdkSnap, ourSnap := filepath.Join(snaps, fmt.Sprint("sdk-", n)), filepath.Join(snaps, fmt.Sprint("ours-", n))
			steps = append(steps, peer.MutateStep{Op: op, Session: id, Value: v, Snapshot: sdkSnap})
			cpOK(t, nil, "", op, id, v, "--config-dir", ourDir)
			copyTree(t, ourDir, ourSnap)
			groups = append(groups, peer.ViewGroup{Dirs: []string{sdkSnap, ourSnap}})
			whats = append(whats, op+" #"+string(rune('a'+i)))
		}
	}
	p.MutateSteps(t, sdkDir, steps)
	for i, vs := range p.Views(t, groups) {
		sameProjects(t, whats[i], groups[i].Dirs[0], groups[i].Dirs[1])
		sameLists(t, whats[i], vs[0].List, vs[1].List)
	}
	// What scribe cannot reproduce it refuses as a usage error, writing
	// nothing; a tag that sanitizes to nothing is refused as the SDK does.
	main := filepath.Join(ourDir, "projects", "-home-alice-src-shop", id+".jsonl")
	before := readFile(t, main)
	for _, tag := range []string{
		"new \U0001FAE9 face",              // newer than Go's Unicode tables
		"a" + strings.Repeat("\u0301", 31), // more than 30 marks: Go's NFKC is stream-safe
		"\u200B\u200D\uFEFF",               // nothing left
		"bad \xff utf-8",                   // not UTF-8
	} {
		if _, errs, code := cpScribe(t, "", "tag", id, tag, "--config-dir", ourDir); code != 2 {
			t.Errorf("scribe tag %q: exit %d, want 2\n%s", tag, code, errs)
		}
	}
	if readFile(t, main) != before {
		t.Fatal("a refused tag changed the transcript")
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// trickyRanges are the blocks random tags are drawn from: whatever NFKC,
// canonical ordering or the removal of format, private and unassigned code
// points touches, beside plain text.
var trickyRanges = [][2]rune{
	{0x00, 0x7F}, {0x80, 0xFF}, {0x300, 0x36F}, {0x340, 0x345}, {0x386, 0x3CE}, {0x591, 0x5C7},
	{0x600, 0x605}, {0x61C, 0x61C}, {0x900, 0x97F}, {0xF71, 0xF81}, {0x1100, 0x11FF}, {0x1AB0, 0x1ACE},
	{0x1DC0, 0x1DFF}, {0x1E00, 0x1EFF}, {0x2000, 0x206F}, {0x20D0, 0x20F0}, {0x2100, 0x218B},
	{0x2460, 0x24FF}, {0x2FF0, 0x2FFB}, {0x3000, 0x303F}, {0x3099, 0x309C}, {0x3131, 0x318E},
	{0x3200, 0x33FF}, {0xAC00, 0xAC40}, {0xE000, 0xE010}, {0xF900, 0xFAFF}, {0xFB00, 0xFB4F},
	{0xFB50, 0xFDFF}, {0xFE00, 0xFE6F}, {0xFE70, 0xFEFF}, {0xFF00, 0xFFEF}, {0xFFF0, 0xFFFD},
	{0x1D400, 0x1D7FF}, {0x1F000, 0x1F02F}, {0x1F1E6, 0x1F1FF}, {0x1F300, 0x1F64F}, {0x1F3FB, 0x1F3FF},
	{0x2F800, 0x2FA1D}, {0xE0000, 0xE01EF}, {0xF0000, 0xF0010}, {0x10FFF0, 0x10FFFF},
}

// transcript.SanitizeJSTag and the SDK's tagSession agree on thousands of random
// tags drawn from tricky blocks (NUL included: JSON carries it to the SDK);
// tags scribe refuses as unreproducible are counted, and must be few.
func TestSanitizeJSTagMatchesTheSDKOnRandomTags(t *testing.T) {
	p := peer.Find(t)
	dir := t.TempDir()
	ids := p.GenFixture(t, dir, "/home/alice/src/shop")
	id := ids["withSummaryAndSubagent"]
	main := filepath.Join(dir, "projects", "-home-alice-src-shop", id+".jsonl")
	rng := rand.New(rand.NewPCG(13, 2026))
	var tags []string
	for len(tags) < 3000 {
		var b strings.Builder
		for n := 1 + rng.IntN(24); n > 0; n-- {
			rg := trickyRanges[rng.IntN(len(trickyRanges))]
			r := rg[0] + rune(rng.IntN(int(rg[1]-rg[0]+1)))
			if rng.IntN(12) == 0 { // a run of one combining mark
				b.WriteString(strings.Repeat("\u0301", rng.IntN(8)))
			}
			b.WriteRune(r)
		}
		tags = append(tags, b.String())
	}
	before := len(strings.Split(readFile(t, main), "\n"))
	res := p.TagMany(t, dir, id, tags)
	lines := strings.Split(readFile(t, main), "\n")[before-1:]
	var written []string
	for _, l := range lines {
		var e struct {
			Type string `json:"type"`
			Tag  string `json:"tag"`
		}
		if json.Unmarshal([]byte(l), &e) == nil && e.Type == "tag" {
			written = append(written, e.Tag)
		}
	}
	refused, compared, k := 0, 0, 0
	for i, tag := range tags {
		want, sdkOK := "", res[i].OK
		if sdkOK {
			if k >= len(written) {
				t.Fatalf("the SDK accepted more tags than it wrote lines (%d)", len(written))
			}
			want, k = written[k], k+1
		}
		clean, err := transcript.SanitizeJSTag(tag)
		if errors.Is(err, transcript.ErrUnreproducibleUnicode) {
			refused++
			continue
		}
		if err != nil {
			t.Fatalf("SanitizeJSTag(%+q): %v", tag, err)
		}
		got := transcript.JSTrim(clean)
		compared++
		if (got != "") != sdkOK || got != want {
			t.Errorf("tag %+q: scribe %+q, the SDK %+q (ok %v, %s)", tag, got, want, sdkOK, res[i].Error)
		}
	}
	t.Logf("%d random tags: %d compared, %d refused as unreproducible", len(tags), compared, refused)
	if refused > len(tags)/20 {
		t.Errorf("%d of %d tags refused as unreproducible", refused, len(tags))
	}
}
