package layout

// Deletion markers. Since Agent SDK 0.3.337 (Claude Code 2.1.337),
// deleteSession writes, before it deletes a transcript, empty files into
//
//	<config dir>/state/deleted-transcripts/<sha256 hex>
//
// named by the sha256 of, lowercased, "<project folder name>/<id>.jsonl"
// and "<id>.jsonl", and the first again with the name of the project
// folder's real path when that differs (a symlinked project folder). A
// running Claude Code that finds one stops saving that transcript, so that
// a deleted session is not written back; the SDK's repeat deleteSession
// finds them and removes a leftover <id>/ folder. rm writes the same
// markers; trash restore removes them, so the restored session can be
// written again.

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/sessions"
)

// DeletedTranscriptsDir is <config dir>/state/deleted-transcripts.
func (l Layout) DeletedTranscriptsDir() string {
	return filepath.Join(l.ConfigDir, "state", "deleted-transcripts")
}

// deletionMarkerName is the marker name for a key ("<folder>/<id>.jsonl"
// or "<id>.jsonl"): the sha256 of it lowercased as JavaScript's
// toLowerCase does.
func deletionMarkerName(key string) string {
	sum := sha256.Sum256([]byte(jsLower(key)))
	return hex.EncodeToString(sum[:])
}

// jsLower is String.prototype.toLowerCase for what project folder names
// and session ids hold: Unicode's simple lowercase mappings, with the one
// special mapping that is not context-dependent (U+0130 becomes "i" and a
// combining dot). The final-sigma rule is not applied (no folder name
// scribe or Claude Code makes holds a Σ).
func jsLower(s string) string {
	if !strings.ContainsRune(s, '\u0130') {
		return strings.ToLower(s)
	}
	return strings.ToLower(strings.ReplaceAll(s, "\u0130", "i\u0307"))
}

// DeletionMarkers returns the marker names for session id's transcript in
// project folder folder, as the SDK's deleteSession writes them.
func (l Layout) DeletionMarkers(folder, id string) []string {
	name := id + claudedir.TranscriptExt
	out := []string{deletionMarkerName(folder + "/" + name), deletionMarkerName(name)}
	if real, err := filepath.EvalSymlinks(l.ProjectFolder(folder)); err == nil {
		if rb := filepath.Base(real); rb != folder {
			out = append(out, deletionMarkerName(rb+"/"+name))
		}
	}
	return out
}

// WriteDeletionMarkers writes the markers of session id in folder when its
// transcript is there and not empty (as the SDK does), each an empty file
// (0600, its folder 0700); one already there gets a new mtime. It returns
// the markers' names.
func (l Layout) WriteDeletionMarkers(folder, id string) ([]string, error) {
	fi, err := os.Stat(claudedir.MainFile(l.ProjectFolder(folder), id))
	if err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
		return nil, nil
	}
	dir := l.DeletedTranscriptsDir()
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return nil, fmt.Errorf("deletion markers: %w", err)
	}
	now := time.Now()
	names := l.DeletionMarkers(folder, id)
	for _, m := range names {
		p := filepath.Join(dir, m)
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, FileMode)
		switch {
		case err == nil:
			err = f.Close()
		case errors.Is(err, os.ErrExist):
			err = os.Chtimes(p, now, now)
		}
		if err != nil {
			return nil, fmt.Errorf("deletion marker %s: %w", p, err)
		}
	}
	return names, nil
}

// RemoveDeletionMarkers removes the markers of a restored trash item
// (those its manifest lists and those its place names now, the ones there)
// and returns how many it removed.
func (l Layout) RemoveDeletionMarkers(it sessions.TrashItem) (int, error) {
	n := 0
	seen := map[string]bool{}
	for _, m := range append(append([]string(nil), it.DeletionMarkers...), l.DeletionMarkers(it.Project, it.SessionID)...) {
		if seen[m] || !isHexName(m) {
			continue
		}
		seen[m] = true
		err := os.Remove(filepath.Join(l.DeletedTranscriptsDir(), m))
		switch {
		case err == nil:
			n++
		case !errors.Is(err, os.ErrNotExist):
			return n, fmt.Errorf("remove deletion marker: %w", err)
		}
	}
	return n, nil
}

// isHexName reports whether m is a marker's name: 64 lowercase hex digits
// (a manifest is data: nothing else is removed on its word).
func isHexName(m string) bool {
	if len(m) != 64 {
		return false
	}
	for _, c := range m {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
