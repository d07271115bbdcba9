package usage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// statusRow is one assistant row of the status fixture.
type statusRow struct {
	at       time.Time
	id, req  string
	model    string
	in, out  int64
	cost     float64 // costUSD when > 0
	noUsage  bool
	noMsgID  bool
	fastMode bool
}

func (r statusRow) line() string {
	if r.noUsage {
		return `{"type":"user","message":{"content":"hi"}}` + "\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `{"type":"assistant","timestamp":%q,"requestId":%q,`, r.at.UTC().Format(time.RFC3339Nano), r.req)
	if r.cost > 0 {
		fmt.Fprintf(&b, `"costUSD":%v,`, r.cost)
	}
	b.WriteString(`"message":{`)
	if !r.noMsgID {
		fmt.Fprintf(&b, `"id":%q,`, r.id)
	}
	speed := ""
	if r.fastMode {
		speed = `,"speed":"fast"`
	}
	fmt.Fprintf(&b, `"model":%q,"usage":{"input_tokens":%d,"output_tokens":%d,"cache_read_input_tokens":3%s}}}`+"\n", r.model, r.in, r.out, speed)
	return b.String()
}

// statusFixture is a folder of sessions whose rows span the days before
// now: main files and subagents' files, streamed copies, the same
// messages in other sessions' files, ties with and without costUSD.
type statusFixture struct {
	t     *testing.T
	dir   string
	cache string
	files []File
	now   time.Time
	loc   *time.Location
	r     *rand.Rand
	seq   int
}

var statusModels = []string{"claude-sonnet-4-20250514", "claude-opus-4-1-20250805", "claude-unknown-9", Synthetic, "claude-haiku-4-5"}

func newStatusFixture(t *testing.T) *statusFixture {
	f := &statusFixture{t: t, dir: t.TempDir(), cache: filepath.Join(t.TempDir(), "cache"), loc: time.FixedZone("UTC+3", 3*3600),
		r: rand.New(rand.NewPCG(7, 9))}
	f.now = time.Now()
	for s := range 6 {
		id := fmt.Sprintf("s%d", s)
		f.add(filepath.Join(f.dir, id+".jsonl"), id, f.rows(60, 72*time.Hour))
		if s%2 == 0 { // a subagent's file: after its session's main file in path order
			f.add(filepath.Join(f.dir, id, "subagents", "agent-a.jsonl"), id, f.rows(20, 72*time.Hour))
		}
	}
	// A session all before the cut.
	f.add(filepath.Join(f.dir, "old.jsonl"), "old", f.rowsBetween(30, f.now.Add(-80*time.Hour), f.now.Add(-50*time.Hour)))
	return f
}

// rows are n rows within span before now, some of them streamed copies.
func (f *statusFixture) rows(n int, span time.Duration) []statusRow {
	return f.rowsBetween(n, f.now.Add(-span), f.now)
}

func (f *statusFixture) rowsBetween(n int, from, to time.Time) []statusRow {
	var out []statusRow
	for range n {
		f.seq++
		r := statusRow{at: from.Add(time.Duration(f.r.Int64N(int64(to.Sub(from))))), id: fmt.Sprintf("m%d", f.seq), req: fmt.Sprintf("r%d", f.seq),
			model: statusModels[f.r.IntN(len(statusModels))], in: int64(f.r.IntN(4)) * 1000, out: int64(f.r.IntN(3)) * 400}
		switch f.r.IntN(12) {
		case 0:
			r.cost = float64(f.r.IntN(90)+1) / 100
		case 1:
			r.noMsgID = true
		case 2:
			r.fastMode = true
		case 3:
			out = append(out, statusRow{noUsage: true})
		}
		out = append(out, r)
		if f.r.IntN(4) == 0 { // streamed: a copy of equal or fewer tokens, maybe with costUSD
			c := r
			c.at = c.at.Add(time.Second)
			c.out /= int64(1 + f.r.IntN(2))
			if f.r.IntN(2) == 0 {
				c.cost = 0.33
			}
			out = append(out, c)
		}
	}
	f.r.Shuffle(len(out)/4, func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func (f *statusFixture) add(path, session string, rows []statusRow) {
	f.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		f.t.Fatal(err)
	}
	f.files = append(f.files, File{Path: path, Session: session})
	f.write(path, rows, os.O_CREATE|os.O_TRUNC|os.O_WRONLY)
}

func (f *statusFixture) appendTo(path string, rows ...statusRow) {
	f.t.Helper()
	f.write(path, rows, os.O_APPEND|os.O_WRONLY)
}

func (f *statusFixture) write(path string, rows []statusRow, flag int) {
	f.t.Helper()
	fh, err := os.OpenFile(path, flag, 0o600)
	if err != nil {
		f.t.Fatal(err)
	}
	defer fh.Close()
	for _, r := range rows {
		if _, err := fh.WriteString(r.line()); err != nil {
			f.t.Fatal(err)
		}
	}
}

// check reads the status of every session through the checkpoint and
// compares it with StatusOf over every row read whole: the same figures,
// to the bit, and the same active block. The first call says how the
// checkpoint was used (want); the later ones use it.
func (f *statusFixture) check(what, want string, p *Pricer) *StatusRead {
	f.t.Helper()
	sc, err := Read(context.Background(), f.files, "")
	if err != nil {
		f.t.Fatal(err)
	}
	var first *StatusRead
	sessions := map[string]bool{"nobody": true}
	for _, fl := range f.files {
		sessions[fl.Session] = true
	}
	for s := range sessions {
		got, err := ReadStatus(context.Background(), f.files, f.cache, p, s, f.now, f.loc)
		if err != nil {
			f.t.Fatal(err)
		}
		if first == nil {
			first = got
			if got.Checkpoint != want || got.SaveError != "" {
				f.t.Fatalf("%s: checkpoint %q (%s), want %q", what, got.Checkpoint, got.SaveError, want)
			}
		} else if got.Checkpoint != "used" {
			f.t.Fatalf("%s: a second call did not use the checkpoint (%s)", what, got.Checkpoint)
		}
		ref := StatusOf(sc.Rows(), p, s, f.now, f.loc)
		if got.SessionCost != ref.SessionCost || got.TodayCost != ref.TodayCost || !reflect.DeepEqual(got.Block, ref.Block) {
			f.t.Fatalf("%s, session %s: through the checkpoint %v / %v / %+v\nevery row read:  %v / %v / %+v",
				what, s, got.SessionCost, got.TodayCost, got.Block, ref.SessionCost, ref.TodayCost, ref.Block)
		}
	}
	return first
}

// TestReadStatusIsStatusOf: a status line read through the checkpoint
// gives, for every session, StatusOf's figures over every row, while it
// decodes only the files with rows after the cut; rows that change what
// the checkpoint covers (an old row added, a message of before the cut
// seen again, a file gone, another day, other prices) make it again.
func TestReadStatusIsStatusOf(t *testing.T) {
	f := newStatusFixture(t)
	p := NewPricer(nil)
	f.check("cold", "made", p)
	time.Sleep(racyWindow) // the files' entries are no longer racy once read again
	f.check("racy entries checked", "used", p)
	st := f.check("warm", "used", p)
	recent := 0
	for _, fl := range f.files {
		if fl.Session != "old" {
			recent++
		}
	}
	if st.Decoded != recent || st.Cache.Files != len(f.files) || st.Block == nil {
		t.Fatalf("warm: %d of %d files decoded, want %d (the old session's not); block %v", st.Decoded, st.Cache.Files, recent, st.Block)
	}

	// New messages, streamed copies of them in another session's file, a
	// new session: after the cut, so the checkpoint still holds.
	main0, main1 := f.files[0].Path, filepath.Join(f.dir, "s1.jsonl")
	fresh := f.rowsBetween(5, f.now.Add(-10*time.Minute), f.now)
	f.appendTo(main0, fresh...)
	copyOf := fresh[len(fresh)-1]
	copyOf.out += 1000
	f.appendTo(main1, copyOf)
	f.add(filepath.Join(f.dir, "s7.jsonl"), "s7", f.rowsBetween(8, f.now.Add(-time.Hour), f.now))
	f.check("appended after the cut", "used", p)

	// Rows after the cut of messages that have one before it: one with
	// more tokens (which every report keeps), one equal with costUSD
	// (which the daily report keeps, the others keeping the first).
	sc, _ := Read(context.Background(), f.files[:1], "")
	var olds []*Row
	for _, r := range sc.Rows() {
		if r.MessageID != "" && !r.HasCost && r.CacheCreate == 0 && r.Time.Before(statusCut(f.now, f.loc)) {
			olds = append(olds, r)
		}
	}
	if len(olds) < 2 {
		t.Fatal("too few rows before the cut in the first file")
	}
	a, b := olds[0], olds[1]
	f.appendTo(main1, statusRow{at: f.now.Add(-time.Minute), id: a.MessageID, req: a.RequestID, model: statusModels[0], in: 99999, out: 9},
		statusRow{at: f.now.Add(-time.Minute), id: b.MessageID, req: b.RequestID, model: b.Model, in: b.Input, out: b.Output, cost: 0.77})
	f.check("old messages seen again", "made", p)
	f.check("then", "used", p)

	// A row before the cut appended; then a file of old rows gone.
	f.appendTo(main0, f.rowsBetween(1, f.now.Add(-60*time.Hour), f.now.Add(-59*time.Hour))...)
	f.check("an old row appended", "made", p)
	if err := os.Remove(filepath.Join(f.dir, "old.jsonl")); err != nil {
		t.Fatal(err)
	}
	f.files = f.files[:len(f.files)-2]
	f.files = append(f.files, File{Path: filepath.Join(f.dir, "s7.jsonl"), Session: "s7"})
	f.check("an old file gone", "made", p)

	// Other prices; the next day; a damaged checkpoint.
	p = NewPricer(map[string]Price{"claude-unknown-9": {Input: 1e-6, Output: 2e-6}})
	f.check("other prices", "made", p)
	f.now = f.now.Add(24 * time.Hour)
	f.check("the next day", "made", p)
	if err := os.WriteFile(filepath.Join(f.cache, checkpointFile), []byte("damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.check("damaged", "made", p)
}
