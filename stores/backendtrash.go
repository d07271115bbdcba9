package stores

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/backend"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// A backend's trash is a folder on this machine (the store's TrashDir):
// one folder per removed session, named as the local trash names its items,
// holding a copy of every subpath the session had (main.jsonl,
// lifecycle.jsonl, subagents/agent-<id>.jsonl, lines exactly as stored)
// and manifest.json (a sessions.TrashItem: Project is the project key,
// Files the copies with their sizes and SHA-256). rm writes the copy
// durably, and only then deletes the session from the store; restore
// writes the lines back through the store's sink and then removes the
// item.

const (
	trashManifest = "manifest.json"
	trashMain     = "main.jsonl"
	trashLife     = "lifecycle.jsonl"
)

// Trash copies every copy of session id into the trash, then deletes it
// from the store.
func (b *Backend) Trash(ctx context.Context, id string, opt sessions.TrashOptions) ([]sessions.TrashItem, error) {
	del, ok := b.loader.(backend.Deleter)
	if b.trash == "" || !ok {
		return nil, sessions.Unsupported(b, "remove sessions", "it has no trash or cannot delete")
	}
	now := time.Now
	if opt.Now != nil {
		now = opt.Now
	}
	var items []sessions.TrashItem
	cs, err := b.copies(ctx, id, true)
	if err != nil {
		return nil, err
	}
	for _, s := range cs {
		f, err := b.fetch(ctx, s)
		if err != nil {
			return items, err
		}
		it := b.trashItem(s, f, opt.Reason, now())
		if opt.DryRun {
			items = append(items, it)
			continue
		}
		if err := b.keep(&it, f); err != nil {
			return items, fmt.Errorf("keep %s in the trash: %w", s.SessionID, err)
		}
		if _, err := del.DeleteSession(ctx, s.ProjectKey, s.SessionID); err != nil {
			return items, fmt.Errorf("delete %s from %s (its copy is in the trash as %s): %w", s.SessionID, b.name, it.ID, err)
		}
		items = append(items, it)
	}
	b.forget()
	return items, nil
}

// trashItem describes what keep will write for a fetched session.
func (b *Backend) trashItem(s backend.Listed, f *fetched, reason string, at time.Time) sessions.TrashItem {
	it := sessions.TrashItem{Format: jsonl.TrashFormat, ID: at.UTC().Format("20060102T150405.000000000Z") + "-" + s.SessionID,
		SessionID: s.SessionID, Project: s.ProjectKey, Reason: reason, TrashedAt: at.UTC(), Entries: []string{""}}
	for i := range f.main {
		if it.Cwd == "" && f.main[i].CWD != "" {
			it.Cwd = f.main[i].CWD
		}
	}
	add := func(path string, es []core.Entry) {
		data := joinLines(es)
		sum := sha256.Sum256(data)
		it.Files = append(it.Files, sessions.TrashFile{Path: path, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), Mode: 0o600, ModTime: at.UTC()})
		it.Bytes += int64(len(data))
	}
	add(trashMain, f.main)
	if len(f.life) > 0 {
		add(trashLife, f.life)
		it.Entries = append(it.Entries, backend.LifecycleSubpath)
	}
	agents := make([]string, 0, len(f.agents))
	for a := range f.agents {
		agents = append(agents, a)
	}
	sort.Strings(agents)
	for _, a := range agents {
		add("subagents/agent-"+a+".jsonl", f.agents[a])
		it.Entries = append(it.Entries, "subagents/agent-"+a)
	}
	return it
}

// keep writes the item's files and then its manifest, each durably.
func (b *Backend) keep(it *sessions.TrashItem, f *fetched) error {
	dir := filepath.Join(b.trash, it.ID)
	data := map[string][]core.Entry{trashMain: f.main, trashLife: f.life}
	for a, es := range f.agents {
		data["subagents/agent-"+a+".jsonl"] = es
	}
	for _, tf := range it.Files {
		p := filepath.Join(dir, filepath.FromSlash(tf.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if err := durable.WriteFileNew(p, joinLines(data[tf.Path]), 0o600); err != nil {
			return err
		}
	}
	it.Complete = true
	mb, err := json.MarshalIndent(it, "", "  ")
	if err != nil {
		return err
	}
	return durable.WriteFileNew(filepath.Join(dir, trashManifest), append(mb, '\n'), 0o600)
}

// TrashItems lists the trash, oldest first.
func (b *Backend) TrashItems(context.Context) ([]sessions.TrashItem, []string, error) {
	if b.trash == "" {
		return nil, nil, nil
	}
	ents, err := os.ReadDir(b.trash)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var (
		items    []sessions.TrashItem
		problems []string
	)
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		var it sessions.TrashItem
		raw, err := os.ReadFile(filepath.Join(b.trash, e.Name(), trashManifest))
		if err == nil {
			err = json.Unmarshal(raw, &it)
		}
		if err != nil || it.ID != e.Name() {
			problems = append(problems, fmt.Sprintf("%s: unreadable manifest: %v", e.Name(), err))
			continue
		}
		items = append(items, it)
	}
	sort.Slice(items, func(i, j int) bool { return items[i].ID < items[j].ID })
	return items, problems, nil
}

// find resolves a trash id, a session id or a unique prefix of either.
func (b *Backend) find(ctx context.Context, ref string) (sessions.TrashItem, error) {
	items, _, err := b.TrashItems(ctx)
	if err != nil {
		return sessions.TrashItem{}, err
	}
	var hits []sessions.TrashItem
	for _, it := range items {
		if strings.EqualFold(it.ID, ref) {
			return it, nil
		}
		if prefixFold(it.ID, ref) || prefixFold(it.SessionID, ref) {
			hits = append(hits, it)
		}
	}
	switch len(hits) {
	case 0:
		return sessions.TrashItem{}, fmt.Errorf("%w: %q in the trash of %s", jsonl.ErrTrashNotFound, ref, b.name)
	case 1:
		return hits[0], nil
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	return sessions.TrashItem{}, fmt.Errorf("%q names %d trash items: %s", ref, len(hits), strings.Join(ids, ", "))
}

func prefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// Restore writes a trash item's lines back through the store's sink and
// removes the item. A session the store holds again is not overwritten.
func (b *Backend) Restore(ctx context.Context, ref string, _ sessions.RestoreOptions) (sessions.TrashItem, error) {
	if b.sink == nil {
		return sessions.TrashItem{}, sessions.Unsupported(b, "restore", "a loader block is read only: name the sink block")
	}
	it, err := b.find(ctx, ref)
	if err != nil {
		return it, fmt.Errorf("restore: %w", err)
	}
	if _, err := b.copies(ctx, it.SessionID, true); err == nil {
		return it, fmt.Errorf("restore %s: %w: %s holds session %s again", it.ID, jsonl.ErrSessionExists, b.name, it.SessionID)
	}
	dir := filepath.Join(b.trash, it.ID)
	var entries []core.Entry
	for _, tf := range it.Files {
		raw, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(tf.Path)))
		if err != nil {
			return it, fmt.Errorf("restore %s: %w", it.ID, err)
		}
		if sum := sha256.Sum256(raw); int64(len(raw)) != tf.Size || hex.EncodeToString(sum[:]) != tf.SHA256 {
			return it, fmt.Errorf("restore %s: %w: %s", it.ID, jsonl.ErrTrashDamaged, tf.Path)
		}
		agent := ""
		if a, ok := strings.CutPrefix(tf.Path, "subagents/agent-"); ok {
			agent = strings.TrimSuffix(a, ".jsonl")
		}
		for _, line := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
			if line == "" {
				continue
			}
			e, err := core.ParseEntry([]byte(line))
			if err != nil {
				return it, fmt.Errorf("restore %s: %s: %w", it.ID, tf.Path, err)
			}
			// Lines a store keys by their subpath (an agent's metadata)
			// carry neither the session nor the agent: give them back.
			if e.SessionID == "" {
				e.SessionID = it.SessionID
			}
			if agent != "" && e.AgentID == "" {
				e.AgentID = agent
			}
			entries = append(entries, e)
		}
	}
	if err := writeThrough(ctx, b.sink, entries); err != nil {
		return it, fmt.Errorf("restore %s into %s: %w", it.ID, b.name, err)
	}
	b.forget()
	return it, os.RemoveAll(dir)
}

// EmptyTrash deletes the items trashed more than olderThan ago.
func (b *Backend) EmptyTrash(ctx context.Context, olderThan time.Duration, dryRun bool, now time.Time) ([]sessions.TrashItem, error) {
	items, _, err := b.TrashItems(ctx)
	if err != nil {
		return nil, err
	}
	var out []sessions.TrashItem
	for _, it := range items {
		if olderThan > 0 && now.Sub(it.TrashedAt) < olderThan {
			continue
		}
		if !dryRun {
			if err := os.RemoveAll(filepath.Join(b.trash, it.ID)); err != nil {
				return out, err
			}
		}
		out = append(out, it)
	}
	return out, nil
}

// TrashDir is where the store keeps its trash.
func (b *Backend) TrashDir() string { return b.trash }
