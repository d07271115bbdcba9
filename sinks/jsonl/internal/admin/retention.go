package admin

// What Claude Code's own retention sweep is about to delete. At startup
// Claude Code unlinks every transcript whose file mtime is older than
// cleanupPeriodDays (settings.json; 30 by default, at least 1), with its
// <id>/ folder and sidecars, without a trash. scribe doctor shows the
// sessions that sweep would take, so that a user can move or gc them
// first.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// DefaultCleanupPeriodDays is Claude Code's default retention.
const DefaultCleanupPeriodDays = 30

// CleanupSetting is cleanupPeriodDays as Claude Code reads it.
type CleanupSetting struct {
	Days int `json:"days"`
	// Source is the settings file that set it, or "default".
	Source string `json:"source"`
}

// ReadCleanupSetting reads cleanupPeriodDays from <config dir>/settings.json.
// A missing file or key is the default; a value Claude Code rejects
// (below 1, not a number) is an error, as Claude Code then skips the sweep.
func (l Layout) ReadCleanupSetting() (CleanupSetting, error) {
	p := filepath.Join(l.ConfigDir, "settings.json")
	raw, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return CleanupSetting{Days: DefaultCleanupPeriodDays, Source: "default"}, nil
	}
	if err != nil {
		return CleanupSetting{}, fmt.Errorf("read %s: %w", p, err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return CleanupSetting{}, fmt.Errorf("parse %s: %w", p, err)
	}
	v, ok := doc["cleanupPeriodDays"]
	if !ok {
		return CleanupSetting{Days: DefaultCleanupPeriodDays, Source: "default"}, nil
	}
	var days float64
	if err := json.Unmarshal(v, &days); err != nil || days < 1 || days != float64(int(days)) {
		return CleanupSetting{}, fmt.Errorf("%s: cleanupPeriodDays %s is not a whole number of at least 1 (Claude Code rejects it)", p, v)
	}
	return CleanupSetting{Days: int(days), Source: p}, nil
}

// CleanupVictim is a session the sweep would delete.
type CleanupVictim struct {
	SessionID string    `json:"sessionId"`
	Project   string    `json:"project"`
	ModTime   time.Time `json:"mtime"`
	Bytes     int64     `json:"bytes"`
	// LastActivity is the newest timestamp inside it, when it has one: a
	// recent one means the mtime is misleading (cc#62250).
	LastActivity *time.Time `json:"lastActivity,omitempty"`
}

// CleanupForecast lists the sessions whose transcript mtime is older than
// days before now: what Claude Code's next start deletes.
func (l Layout) CleanupForecast(days int, now time.Time) ([]CleanupVictim, error) {
	cutoff := now.Add(-time.Duration(days) * 24 * time.Hour)
	var out []CleanupVictim
	err := l.EachTranscript("", func(folder, dir, id string, fi os.FileInfo) error {
		if !fi.ModTime().Before(cutoff) {
			return nil
		}
		v := CleanupVictim{SessionID: id, Project: folder, ModTime: fi.ModTime().UTC()}
		v.Bytes, _ = SessionBytes(dir, id)
		if t, ok, _ := LastActivity(filepath.Join(dir, id+".jsonl")); ok {
			v.LastActivity = &t
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("cleanup forecast: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ModTime.Before(out[j].ModTime) })
	return out, nil
}
