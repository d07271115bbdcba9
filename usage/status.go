package usage

import (
	"context"
	"runtime"
	"time"

	"github.com/e0dc0000/scribe/internal/durable"
)

// Status is what a status line shows: the cost of one session and of
// today, and the active 5-hour block, each as the reports count it.
type Status struct {
	// SessionCost is the session's totalCost in the session report.
	SessionCost float64
	// TodayCost is today's totalCost in the daily report (days in the
	// given time zone).
	TodayCost float64
	// Block is the active block of the blocks report, with its burn rate
	// and projection; nil when no block is active.
	Block *Block
}

// StatusOf works out the status at now from every row read (not yet
// deduplicated): each figure is the one its report gives for the same
// rows.
func StatusOf(rows []*Row, p *Pricer, session string, now time.Time, loc *time.Location) Status {
	var st Status
	today, tomorrow := dayOf(now, loc)
	kept, costFirst, _ := dedupeBoth(rows)
	for j, r := range kept {
		if r.Session == session && r.ModelName() != "" {
			cost, _ := p.Cost(r)
			st.SessionCost += cost
		}
		daily := r // the daily report's row of the message
		if cf, ok := costFirst[j]; ok {
			daily = cf
		}
		if !daily.Time.Before(today) && daily.Time.Before(tomorrow) && daily.ModelName() != "" {
			cost, _ := p.Cost(daily)
			st.TodayCost += cost
		}
	}
	for _, b := range BuildBlocks(kept, p, now) {
		if b.IsActive {
			st.Block = &b
		}
	}
	return st
}

// StatusRead is what ReadStatus gives: the status, what the cache did, and
// how the status was worked out.
type StatusRead struct {
	Status
	Cache CacheStats
	// Checkpoint says how the rows before the start of today less a
	// block's length were counted: "used" (through the checkpoint, only
	// the files with later rows decoded), "made" (every file's rows
	// decoded, the checkpoint made for the next calls), "none" (no cache).
	Checkpoint string
	// Why says why the checkpoint was made rather than used: one of the
	// Checkpoint* reasons, Discarded's when its file could not be used.
	Why string
	// Discarded says why the checkpoint's file was not used (corrupt,
	// cut short, written by another build): "" when it was, or was
	// missing.
	Discarded string
	// Decoded is the number of files whose rows were decoded or parsed.
	Decoded int
	// SaveError says why the checkpoint could not be saved ("": it was,
	// or it needed no saving).
	SaveError string
}

// statusSaveSlack is how many bytes appended to a file a status line
// parses again rather than rewrite the file's cache bucket for them (the
// cache's update): a few calls' worth of rows.
const statusSaveSlack = 64 << 10

// Why a checkpoint is made again rather than used.
const (
	CheckpointMissing   = "none yet"
	CheckpointDiscarded = "its file discarded"
	CheckpointOtherDay  = "made for another day or time zone"
	CheckpointOtherCost = "made with other prices"
	CheckpointChanged   = "the rows before the cut changed"
	CheckpointBadEntry  = "a cache entry's rows could not be decoded"
)

// ReadStatus is StatusOf(rows, p, session, now, loc) for the rows Read
// gives of the files list gives, through the cache in cacheDir, working
// out what comes before the start of today less a block's length from the
// checkpoint the cache folder holds (checkpoint.go): a call decodes only
// the rows of the files that have later rows. When the checkpoint is
// missing, unreadable, made for another day or prices, or its rows are no
// longer those of the files, every row is decoded and the checkpoint made
// again. The cache and the checkpoint are read while list runs. Without a
// cacheDir it is Read and StatusOf.
func ReadStatus(ctx context.Context, list func() ([]File, error), cacheDir string, p *Pricer, session string, now time.Time, loc *time.Location) (*StatusRead, error) {
	if cacheDir == "" {
		files, err := list()
		if err != nil {
			return nil, err
		}
		sc, err := Read(ctx, files, "")
		if err != nil {
			return nil, err
		}
		return &StatusRead{Status: StatusOf(sc.Rows(), p, session, now, loc), Cache: sc.Cache, Checkpoint: "none", Decoded: len(sc.Files)}, nil
	}
	type loaded struct {
		c   *cache
		ck  *checkpoint
		err error
	}
	done := make(chan loaded, 1)
	go func() {
		ck, err := loadCheckpoint(cacheDir)
		done <- loaded{loadCache(cacheDir, true), ck, err}
	}()
	files, err := list()
	ld := <-done
	defer ld.c.close()
	if err != nil {
		return nil, err
	}
	files, c, ck := sortFiles(files), ld.c, ld.ck
	results, err := scanAll(ctx, files, c, false)
	if err != nil {
		return nil, err
	}
	out := &StatusRead{Checkpoint: "used"}
	for _, r := range results {
		if r.e != nil {
			out.Cache.count(r)
		}
	}
	cut := statusCut(now, loc)
	if ld.err != nil {
		out.Discarded = ld.err.Error()
	}
	if out.Why = ck.unusable(cut, p, ld.err); out.Why == "" {
		var ok bool
		out.Status, ok, err = ck.status(results, p, session, now, loc)
		switch {
		case err != nil: // every file is read again below
			out.Why = CheckpointBadEntry
		case !ok:
			out.Why = CheckpointChanged
		}
	}
	if out.Why != "" {
		out.Checkpoint = "made"
		if err := loadAll(ctx, files, results); err != nil {
			return nil, err
		}
		if out.Status, err = remakeCheckpoint(results, cacheDir, p, session, now, loc); err != nil {
			out.SaveError = err.Error()
		}
	}
	for _, r := range results {
		if r.e != nil && r.e.loaded {
			out.Decoded++
		}
	}
	c.update(results, &out.Cache, statusSaveSlack)
	return out, nil
}

// unusable says why ck (nil when loadErr or none) cannot be used at cut
// with p's prices; "" when it can.
func (ck *checkpoint) unusable(cut time.Time, p *Pricer, loadErr error) string {
	switch {
	case loadErr != nil:
		return CheckpointDiscarded
	case ck == nil:
		return CheckpointMissing
	case !ck.cut.Equal(cut):
		return CheckpointOtherDay
	case ck.prices != p.fingerprint():
		return CheckpointOtherCost
	}
	return ""
}

// remakeCheckpoint works the status out from every file's rows (results
// loaded) and saves the checkpoint at now's cut; the error is why it
// could not be saved (the status stands).
func remakeCheckpoint(results []fileResult, cacheDir string, p *Pricer, session string, now time.Time, loc *time.Location) (Status, error) {
	var rows []*Row
	for i := range results {
		if results[i].e != nil {
			rows = append(rows, ptrs(results[i].rowsOf())...)
		}
	}
	st := StatusOf(rows, p, session, now, loc)
	ck, err := buildCheckpoint(results, p, statusCut(now, loc))
	if err == nil {
		err = ck.save(cacheDir)
	}
	return st, err
}

// loadAll decodes the rows of every file's entry, side by side; a file
// whose entry's rows cannot be decoded is read again whole.
func loadAll(ctx context.Context, files []File, results []fileResult) error {
	bufs := newBufs()
	return durable.Each(ctx, runtime.GOMAXPROCS(0), len(results), func(_ context.Context, i int) error {
		e := results[i].e
		if e == nil || e.load() == nil {
			return nil
		}
		r, err := scanFile(files[i], nil, time.Now(), bufs)
		results[i] = r
		return err
	})
}

// ptrs points at each of rows.
func ptrs(rows []Row) []*Row {
	out := make([]*Row, len(rows))
	for i := range rows {
		out[i] = &rows[i]
	}
	return out
}
