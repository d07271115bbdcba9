package layout

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The markers' names, checked against the SDK 0.3.337's deleteSession (the
// fixture session of the reference, sha256 of the lowercased keys as
// node's crypto computes them), and the real-path variant of a symlinked
// project folder.
func TestDeletionMarkerNames(t *testing.T) {
	const id = "9972daab-2c86-459f-9d78-3fe1be4e3280"
	root := t.TempDir()
	l := Layout{ConfigDir: filepath.Join(root, "config")}
	want := []string{
		"739a30be861b0384fb1016ecdb28b73287abd8ceb8ef1a90bcd0b31e02880589", // -home-alice-src-fixture/<id>.jsonl
		"f1e0e819dfd1e374b9eced9d356dbf5c49055ad898a41acfbb9d38922212ba44", // <id>.jsonl
	}
	if got := l.DeletionMarkers("-home-alice-src-fixture", id); !reflect.DeepEqual(got, want) {
		t.Fatalf("markers %v, want %v", got, want)
	}
	if got := l.DeletionMarkers("-HOME-alice-src-fixture", id); got[0] != want[0] {
		t.Fatalf("the key is not lowercased: %v", got)
	}
	// "-HOME-İ/x.jsonl".toLowerCase() in node: U+0130 becomes i + U+0307.
	if got := deletionMarkerName("-HOME-\u0130/x.jsonl"); got != "7f2a38bf079088be38069b04578190890b07560a480b5b0bc9358a9a697e8719" {
		t.Fatalf("U+0130 lowercased unlike JavaScript: %s", got)
	}
	// A project folder that is a symlink to a folder of another name: the
	// SDK adds the real name's marker.
	real := filepath.Join(root, "real-shop")
	if err := os.MkdirAll(real, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(l.ProjectsDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, l.ProjectFolder("-home-alice-src-fixture")); err != nil {
		t.Fatal(err)
	}
	want = append(want, "3778f779d5eaa2b3a1dc6d8d4d4d6727b2a8816e1fe5868c641e2e64badb27ff") // real-shop/<id>.jsonl
	if got := l.DeletionMarkers("-home-alice-src-fixture", id); !reflect.DeepEqual(got, want) {
		t.Fatalf("markers of a symlinked folder %v, want %v", got, want)
	}
}
