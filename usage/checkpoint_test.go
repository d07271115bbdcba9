package usage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// statusRow is one assistant row of the status fixture.
type statusRow struct {
	at        time.Time
	id, req   string
	model     string
	in, out   int64
	cost      float64 // costUSD when > 0
	noUsage   bool
	noMsgID   bool
	fastMode  bool
	sidechain bool
}

func (r statusRow) line() string {
	if r.noUsage {
		return `{"type":"user","message":{"content":"hi"}}` + "\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `{"type":"assistant","isSidechain":%v,"timestamp":%q,"requestId":%q,`, r.sidechain, r.at.UTC().Format(time.RFC3339Nano), r.req)
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
	// A fixed now: the rows' times, the blocks (one active at now, the
	// chain of blocks from before the cut leading to it) and the days are
	// the same at every run.
	f.now = time.Date(2026, 3, 10, 11, 20, 0, 0, time.UTC)
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
		case 4: // above 200k tokens: the tiered prices
			r.in = 200000 + int64(f.r.IntN(90000))
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

// check is checkStatus on the fixture's files at its now.
func (f *statusFixture) check(what, why string, p *Pricer) *StatusRead {
	f.t.Helper()
	return checkStatus(f.t, f.files, f.cache, p, f.now, f.loc, what, why)
}

// anyReason is checkStatus's why for a checkpoint made for any reason.
const anyReason = "*"

// checkStatus reads the status of every session of files (and of one
// with no rows) through the checkpoint in cache, and compares it with
// StatusOf over every row read whole: the same figures, to the bit, and
// the same active block. The first call says why the checkpoint was made
// (why; "": it was used; anyReason: made, whatever the reason), the later
// ones use it.
func checkStatus(t *testing.T, files []File, cache string, p *Pricer, now time.Time, loc *time.Location, what, why string) *StatusRead {
	t.Helper()
	sc, err := Read(context.Background(), files, "")
	if err != nil {
		t.Fatal(err)
	}
	rows := sc.Rows()
	sessions := []string{"nobody"}
	for _, fl := range files {
		if !slices.Contains(sessions, fl.Session) {
			sessions = append(sessions, fl.Session)
		}
	}
	var first *StatusRead
	for _, s := range sessions {
		got, err := ReadStatus(context.Background(), func() ([]File, error) { return files, nil }, cache, p, s, now, loc)
		if err != nil {
			t.Fatal(err)
		}
		ref := StatusOf(rows, p, s, now, loc)
		if got.SessionCost != ref.SessionCost || got.TodayCost != ref.TodayCost || !reflect.DeepEqual(got.Block, ref.Block) {
			t.Fatalf("%s, session %s (checkpoint %s): through the checkpoint %v / %v / %+v\nevery row read:  %v / %v / %+v",
				what, s, got.Checkpoint, got.SessionCost, got.TodayCost, got.Block, ref.SessionCost, ref.TodayCost, ref.Block)
		}
		if first == nil {
			first = got
		} else if got.Checkpoint != "used" {
			t.Fatalf("%s: a second call did not use the checkpoint (%s)", what, got.Why)
		}
	}
	if got := first; (got.Why != why && (why != anyReason || got.Why == "")) || got.SaveError != "" || (why == "") != (got.Checkpoint == "used") {
		t.Fatalf("%s: checkpoint %s (%q, %s), want %q", what, got.Checkpoint, got.Why, got.SaveError, why)
	}
	return first
}

// TestReadStatusIsStatusOf: a status line read through the checkpoint
// gives, for every session, StatusOf's figures over every row, while it
// decodes only the files with rows after the cut; rows that change what
// the checkpoint covers (an old row added or changed, a message of before
// the cut seen again, a file gone, a new file with old rows, another day,
// other prices, a damaged checkpoint) make it again.
func TestReadStatusIsStatusOf(t *testing.T) {
	f := newStatusFixture(t)
	p := NewPricer(nil)
	f.check("cold", CheckpointMissing, p)
	time.Sleep(racyWindow) // the files' entries are no longer racy once read again
	f.check("racy entries checked", "", p)
	st := f.check("warm", "", p)
	recent := 0
	for _, fl := range f.files {
		if fl.Session != "old" {
			recent++
		}
	}
	if st.Decoded != recent || st.Cache.Files != len(f.files) || st.Block == nil || st.TodayCost == 0 {
		t.Fatalf("warm: %d of %d files decoded, want %d (the old session's not); block %v, today %v", st.Decoded, st.Cache.Files, recent, st.Block, st.TodayCost)
	}

	// New messages, streamed copies of them in another session's file, a
	// sidechain's replay of them in a subagent's file, a new session:
	// after the cut, so the checkpoint still holds.
	cut := statusCut(f.now, f.loc)
	main0, main1, agent0 := f.files[0].Path, filepath.Join(f.dir, "s1.jsonl"), f.files[1].Path
	fresh := f.rowsBetween(5, f.now.Add(-10*time.Minute), f.now)
	f.appendTo(main0, fresh...)
	copyOf := fresh[len(fresh)-1]
	copyOf.out += 1000
	f.appendTo(main1, copyOf)
	replay := fresh[0]
	replay.sidechain, replay.at = true, replay.at.Add(time.Second)
	f.appendTo(agent0, replay)
	f.add(filepath.Join(f.dir, "s7.jsonl"), "s7", f.rowsBetween(8, f.now.Add(-time.Hour), f.now))
	f.check("appended after the cut", "", p)

	// Messages whose rows straddle the cut, in one file: more tokens after
	// it; equal tokens with costUSD after it (which the daily report
	// keeps, the others keeping the first); fewer after it.
	straddle := func(seq int, later func(*statusRow)) []statusRow {
		a := statusRow{at: cut.Add(-time.Minute), id: fmt.Sprintf("x%d", seq), req: fmt.Sprintf("xr%d", seq), model: statusModels[0], in: 250000, out: 40}
		b := a
		b.at = cut.Add(time.Minute)
		later(&b)
		return []statusRow{a, b}
	}
	// A row of a model no other row names, at the time of a message's row
	// kept after the cut, and before it in the order rows are kept: the
	// block lists that model first.
	tie := f.now.Add(-2 * time.Minute)
	across := []statusRow{{at: tie, id: "t1", req: "t1", model: "claude-tie-1", in: 5}}
	across = append(across, straddle(4, func(r *statusRow) { r.at, r.model, r.out = tie, "claude-tie-2", r.out+1 })...)
	across = append(across, straddle(1, func(r *statusRow) { r.out += 500 })...)
	across = append(across, straddle(2, func(r *statusRow) { r.cost = 0.91 })...)
	across = append(across, straddle(3, func(r *statusRow) { r.out = 1 })...)
	f.add(filepath.Join(f.dir, "s8.jsonl"), "s8", across)
	f.check("messages across the cut", CheckpointChanged, p)
	f.check("then", "", p)

	// Rows after the cut of messages (of one row each so far) that have
	// one before it in another file: one with more tokens (which every
	// report keeps), one equal with costUSD (which the daily report
	// keeps).
	sc, _ := Read(context.Background(), f.files, "")
	rowsOf := map[string]int{}
	for _, r := range sc.Rows() {
		rowsOf[r.MessageID]++
	}
	var olds []*Row
	for _, r := range sc.Rows() {
		if r.Session == f.files[0].Session && rowsOf[r.MessageID] == 1 && !r.HasCost && r.Time.Before(cut) && r.ModelName() != "" {
			olds = append(olds, r)
		}
	}
	if len(olds) < 2 {
		t.Fatal("too few rows before the cut in the first file")
	}
	a, b := olds[0], olds[1]
	f.appendTo(main1, statusRow{at: f.now.Add(-time.Minute), id: a.MessageID, req: a.RequestID, model: statusModels[0], in: 99999, out: 9},
		statusRow{at: f.now.Add(-time.Minute), id: b.MessageID, req: b.RequestID, model: b.Model, in: b.Input, out: b.Output, cost: 0.77})
	f.check("old messages seen again", CheckpointChanged, p)
	f.check("then", "", p)

	// A row before the cut appended; an old row changed in place; a new
	// file of old rows; a file of old rows gone.
	f.appendTo(main0, f.rowsBetween(1, f.now.Add(-60*time.Hour), f.now.Add(-59*time.Hour))...)
	f.check("an old row appended", CheckpointChanged, p)
	f.rewriteOldRow(filepath.Join(f.dir, "old.jsonl"))
	f.check("an old row changed", CheckpointChanged, p)
	f.add(filepath.Join(f.dir, "s9.jsonl"), "s9", f.rowsBetween(3, f.now.Add(-70*time.Hour), f.now.Add(-69*time.Hour)))
	f.check("a new file of old rows", CheckpointChanged, p)
	if err := os.Remove(filepath.Join(f.dir, "old.jsonl")); err != nil {
		t.Fatal(err)
	}
	f.check("an old file gone", CheckpointChanged, p)

	// Other prices; the next day; another time zone.
	p = NewPricer(map[string]Price{"claude-unknown-9": {Input: 1e-6, Output: 2e-6}})
	f.check("other prices", CheckpointOtherCost, p)
	f.now = f.now.Add(24 * time.Hour)
	f.check("the next day", CheckpointOtherDay, p)
	f.now = f.now.Add(-24 * time.Hour)
	f.check("back to the day before", CheckpointOtherDay, p)
	f.loc = time.FixedZone("UTC-7", -7*3600)
	f.check("another time zone", CheckpointOtherDay, p)
}

// rewriteOldRow gives the first row of path priced by its tokens (a
// known model, no costUSD) other tokens; the file keeps its number of
// rows.
func (f *statusFixture) rewriteOldRow(path string) {
	f.t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		f.t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	for i, l := range lines {
		if strings.Contains(l, statusModels[0]) && !strings.Contains(l, "costUSD") {
			lines[i] = strings.Replace(l, `"cache_read_input_tokens":3`, `"cache_read_input_tokens":300000`, 1)
			if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
				f.t.Fatal(err)
			}
			return
		}
	}
	f.t.Fatal("no row to change")
}

// TestDamagedCheckpoint: a checkpoint file that is not one, cut short,
// flipped or written for another format is discarded (and said), the
// figures worked out from every row and the checkpoint made again.
func TestDamagedCheckpoint(t *testing.T) {
	f := newStatusFixture(t)
	p := NewPricer(nil)
	f.check("cold", CheckpointMissing, p)
	path := filepath.Join(f.cache, checkpointFile)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)/2] ^= 0x10
	version := append([]byte(nil), good...)
	version[8]++
	for name, data := range map[string][]byte{
		"not one": []byte("damaged"), "empty": nil, "cut short": good[:len(good)/2], "header only": good[:cacheHeader],
		"a byte flipped": flipped, "another version": version, "trailing bytes": append(append([]byte(nil), good...), 0),
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		st := f.check(name, CheckpointDiscarded, p)
		if !strings.HasPrefix(st.Discarded, checkpointFile+": ") {
			t.Fatalf("%s: discarded %q", name, st.Discarded)
		}
		f.check(name+", then", "", p)
	}
}

// TestDecodeCheckpointNeverPanics: every prefix of a checkpoint's payload,
// resealed so that its checksum holds, decodes to an error or to a
// checkpoint, never a panic.
func TestDecodeCheckpointNeverPanics(t *testing.T) {
	f := newStatusFixture(t)
	f.check("cold", CheckpointMissing, NewPricer(nil))
	good, err := os.ReadFile(filepath.Join(f.cache, checkpointFile))
	if err != nil {
		t.Fatal(err)
	}
	payload := good[cacheHeader:]
	if _, err := decodeCheckpoint(good); err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(payload); n += 1 + n/64 {
		if _, err := decodeCheckpoint(sealFile(checkpointMagic, checkpointVersion, payload[:n])); err == nil {
			t.Fatalf("a payload cut at %d of %d bytes decoded", n, len(payload))
		}
	}
}

// TestReadStatusOnTheCorpus: on the real transcripts of testdata/corpus,
// at times through their rows' span (so that the cut falls among them)
// and in two time zones, the status through the checkpoint is StatusOf's
// for every session.
func TestReadStatusOnTheCorpus(t *testing.T) {
	var files []File
	root := filepath.Join("..", "testdata", "corpus")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return err
		}
		session := strings.TrimSuffix(filepath.Base(path), ".jsonl")
		if dir := filepath.Dir(path); filepath.Base(dir) == "subagents" {
			session = filepath.Base(filepath.Dir(dir))
		}
		files = append(files, File{Path: path, Session: session})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Read(context.Background(), files, "")
	if err != nil {
		t.Fatal(err)
	}
	var times []time.Time
	for _, r := range sc.Rows() {
		times = append(times, r.Time)
	}
	if len(times) < 1000 {
		t.Fatalf("only %d rows in the corpus", len(times))
	}
	slices.SortFunc(times, time.Time.Compare)
	cache := filepath.Join(t.TempDir(), "cache")
	p := NewPricer(nil)
	for _, loc := range []*time.Location{time.UTC, time.FixedZone("UTC+5:30", 5*3600+1800)} {
		for _, q := range []int{10, 50, 90, 100} {
			now := times[(len(times)-1)*q/100].Add(2 * time.Hour)
			what := fmt.Sprintf("%s, at the rows' %d%%", loc, q)
			checkStatus(t, files, cache, p, now, loc, what, anyReason)
		}
	}
}

// TestStatusKeepsSmallGrowthOutOfTheCache: a status line call after a few
// rows were appended to a file parses them without rewriting the cache
// (the next call parses them again, with the same figures); once more
// than statusSaveSlack bytes were appended, the file's entry is saved and
// the next call finds it unchanged.
func TestStatusKeepsSmallGrowthOutOfTheCache(t *testing.T) {
	f, p := warmStatusFixture(t)
	buckets := func() string {
		paths, _ := filepath.Glob(filepath.Join(f.cache, "usage-*.bin"))
		var b strings.Builder
		for _, path := range paths {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(data)
		}
		return b.String()
	}
	before := buckets()
	main0 := f.files[0].Path
	f.appendTo(main0, f.rowsBetween(3, f.now.Add(-time.Minute), f.now)...)
	for _, what := range []string{"appended", "again"} {
		st := f.check(what, "", p)
		if st.Cache.Grown != 1 || st.Cache.Saved != 0 || buckets() != before {
			t.Fatalf("%s: %+v; the cache rewritten: %v", what, st.Cache, buckets() != before)
		}
	}
	for n := 0; n <= statusSaveSlack; n += len(statusRow{noUsage: true}.line()) {
		f.appendTo(main0, statusRow{noUsage: true})
	}
	if st := f.check("appended more than the slack", "", p); st.Cache.Grown != 1 || st.Cache.Saved != 1 {
		t.Fatalf("appended more than the slack: %+v", st.Cache)
	}
	if st := f.check("then", "", p); st.Cache.Grown != 0 || st.Cache.Bytes != 0 {
		t.Fatalf("then: %+v", st.Cache)
	}
}

// TestStatusWithDamagedSections: a status line reads only the heads of
// the cache files, and a section when it needs its rows: a damaged
// section it needs fails its checksum, and the file is read again (the
// figures stay StatusOf's); a report, which reads the files whole,
// discards the damaged files.
func TestStatusWithDamagedSections(t *testing.T) {
	f, p := warmStatusFixture(t)
	paths, _ := filepath.Glob(filepath.Join(f.cache, "usage-*.bin"))
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		data[len(data)-2] ^= 0x20 // in the last section
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st := f.check("damaged sections", anyReason, p)
	if st.Why != CheckpointBadEntry || st.Cache.Discarded != nil || st.Cache.Saved == 0 {
		t.Fatalf("damaged sections: checkpoint %q, cache %+v", st.Why, st.Cache)
	}
	for _, path := range paths {
		data, _ := os.ReadFile(path)
		data[len(data)-2] ^= 0x20
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sc, err := Read(context.Background(), f.files, f.cache)
	if err != nil || len(sc.Cache.Discarded) == 0 || !strings.Contains(strings.Join(sc.Cache.Discarded, " "), "section checksum mismatch") {
		t.Fatalf("a report over damaged sections: %+v, %v", sc.Cache, err)
	}
}

// warmStatusFixture is a status fixture whose checkpoint was made, and
// whose cache entries are no longer racy.
func warmStatusFixture(t *testing.T) (*statusFixture, *Pricer) {
	f := newStatusFixture(t)
	p := NewPricer(nil)
	f.check("cold", CheckpointMissing, p)
	time.Sleep(racyWindow)
	f.check("racy entries checked", "", p)
	return f, p
}
