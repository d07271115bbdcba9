package usagecmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/stores"
	"github.com/e0dc0000/scribe/usage"
)

// usageInput is what a usage report counts: the rows read (those of
// --project's sessions when it is set) and the prices of the
// configuration.
type usageInput struct {
	scan   *usage.Scan
	rows   []*usage.Row
	pricer *usage.Pricer
}

// readUsage reads the usage rows of the store's sessions (the local
// folder, or --from), or of --project's, and the configuration's prices.
// It is the one place the usage commands read transcripts.
func readUsage(f *cmdutil.Factory, cmd *cobra.Command, uf usageFlags) (*usageInput, error) {
	lessGC()
	st, cfg, done, err := f.OpenStoreOf(cmd)
	if err != nil {
		return nil, err
	}
	defer done(nil)
	sc, err := Scan(cmd.Context(), st, uf.noCache)
	if err != nil {
		return nil, err
	}
	in := &usageInput{scan: sc, rows: sc.Rows(), pricer: usagePricer(cfg)}
	if uf.project != "" {
		if in.rows, err = onlyProject(cmd.Context(), st, uf.project, in.rows); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// lessGC collects at 4x the live heap instead of 2x (unless GOGC says):
// every row is held at once, and little of what is allocated on the way is
// garbage, so this takes a third of a warm report's time away.
func lessGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
}

// Scan reads the usage rows of every session of a store: a local folder
// through the usage cache (unless noCache), any other store (a sealed
// archive, PostgreSQL, S3, the team server) through the session-store
// contract.
func Scan(ctx context.Context, st sessions.Store, noCache bool) (*usage.Scan, error) {
	local, ok := st.(*stores.Local)
	if !ok {
		return storeScan(ctx, st)
	}
	l := local.Layout()
	cacheDir := ""
	if !noCache {
		if d, err := usageCacheDir(l); err == nil {
			cacheDir = d // else no cache folder: read every file
		}
	}
	return usageScan(ctx, l, cacheDir)
}

// SessionScan reads the usage rows of one session of a store (its main
// transcript and its subagents').
func SessionScan(ctx context.Context, st sessions.Store, id string) (*usage.Scan, error) {
	return transcriptsScan(ctx, st, []string{id})
}

// usageScan reads the usage rows of every session of l (its main file and
// its subagents') through the usage cache in cacheDir ("": none).
func usageScan(ctx context.Context, l jsonl.Layout, cacheDir string) (*usage.Scan, error) {
	listed, err := usageListing(l)
	if err != nil {
		return nil, err
	}
	return usage.Read(ctx, listed.Files, cacheDir)
}

// usageListing lists the transcripts of every session of l (its main file
// and its subagents', their rows counted under the session) and the
// folders the listing comes from.
func usageListing(l jsonl.Layout) (usage.Listing, error) {
	stored, folders, err := l.StoredTranscripts()
	if err != nil {
		return usage.Listing{}, fmt.Errorf("list sessions: %w", err)
	}
	out := usage.Listing{Folders: folders}
	for _, s := range stored {
		for _, p := range s.Paths {
			out.Files = append(out.Files, usage.File{Path: p, Session: s.ID})
		}
	}
	return out, nil
}

// usageCacheDir is where the usage cache of l's folder lives:
// $XDG_CACHE_HOME/scribe/usage/<a hash of the folder's path>, out of
// Claude Code's folder.
func usageCacheDir(l jsonl.Layout) (string, error) {
	base, err := config.XDGDir("XDG_CACHE_HOME")
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(l.ProjectsDir())
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(base, "scribe", "usage", hex.EncodeToString(sum[:8])), nil
}

// usagePricer prices with the built-in table and the configuration's
// overrides (USD per million tokens there, per token here).
func usagePricer(cfg *config.Config) *usage.Pricer {
	over := map[string]usage.Price{}
	for _, p := range cfg.Usage.Prices {
		over[p.Model] = usage.Price{Input: p.Input / 1e6, Output: p.Output / 1e6, CacheCreate: p.CacheWrite / 1e6, CacheRead: p.CacheRead / 1e6}
	}
	return usage.NewPricer(over)
}

// reportBadUsage says on stderr which rows were left out, and how many
// streamed rows were folded into their message.
func reportBadUsage(w io.Writer, bad map[string]int, dups int) {
	reasons := make([]string, 0, len(bad))
	for r := range bad {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(w, "scribe usage: %d row(s) with usage: %s\n", bad[r], r)
	}
	if dups > 0 {
		fmt.Fprintf(w, "scribe usage: %d streamed row(s) folded into their message (counted once)\n", dups)
	}
}

// cacheLine says what the usage cache did.
func cacheLine(st usage.CacheStats, noCache bool) string {
	s := fmt.Sprintf("%d transcript(s): %d unchanged, %d grown (only the new lines read), %d read whole; %s parsed",
		st.Files, st.Unchanged, st.Grown, st.Read, cmdutil.HumanBytes(st.Bytes))
	switch {
	case noCache:
		s = "no cache (--no-cache): " + s
	case st.SaveError != "":
		s = "cache: " + s + "; not saved: " + st.SaveError
	default:
		s = "cache: " + s
	}
	if st.Dropped > 0 {
		s += fmt.Sprintf("; %d entry(ies) of files gone dropped", st.Dropped)
	}
	for _, d := range st.Discarded {
		s += "; rebuilt " + d
	}
	return s
}

// storeScan reads the usage rows of every session a store lists (its main
// transcript and its subagents'), in session id order.
func storeScan(ctx context.Context, st sessions.Store) (*usage.Scan, error) {
	infos, err := st.List(ctx, sessions.ListOptions{IncludeProgrammatic: true, IncludeWorktrees: true, SkipLastEntryTail: true})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(infos))
	for i := range infos {
		ids[i] = infos[i].SessionID
	}
	sort.Strings(ids)
	return transcriptsScan(ctx, st, ids)
}

// transcriptsScan reads the usage rows of sessions ids of a store.
func transcriptsScan(ctx context.Context, st sessions.Store, ids []string) (*usage.Scan, error) {
	var ts []usage.Lines
	add := func(id string, t *sessions.Transcript) {
		ls := usage.Lines{Session: id, Lines: make([][]byte, len(t.Entries))}
		for i := range t.Entries {
			ls.Lines[i] = t.Entries[i].Raw
		}
		ts = append(ts, ls)
	}
	for _, id := range ids {
		t, err := st.Transcript(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("session %s: %w", id, err)
		}
		add(id, t)
		agents, err := st.Subagents(ctx, id)
		if err != nil {
			return nil, err
		}
		for _, a := range agents {
			at, err := st.AgentTranscript(ctx, id, a)
			if err != nil {
				return nil, fmt.Errorf("agent %s of session %s: %w", a, id, err)
			}
			add(id, at)
		}
	}
	return usage.ReadLines(ts), nil
}

// PricerOf is the price table the configuration makes: the built-in one,
// with its usage { price ... } overrides.
func PricerOf(cfg *config.Config) *usage.Pricer { return usagePricer(cfg) }
