package usage

// The status line's checkpoint: what a status needs of the rows before a
// cut (a day's start less a block's length: no row before it is today's
// or in the active block), worked out once from every row and kept in the
// cache folder, so that a status line call decodes only the rows of the
// files that changed since the cut. The figures stay exactly those of the
// reports (the same rows, summed in the same order); the checkpoint is
// used only while the rows it covers are those it was made from.
//
// A row belongs with the checkpoint (is "old") when it comes before the
// cut or is one of a message (message and request id) that has a row
// before it; every other row, and so every other message, is "fresh": all
// its rows come after the cut, in the files the status line decodes. The
// checkpoint holds:
//
//   - the cut, the prices' fingerprint, and the number and the sum of the
//     hashes of the old rows (summary.go): a call sums up the old rows it
//     sees (a file whose rows all come before the cut by its cached
//     summary, undecoded) and uses the checkpoint only when both agree;
//   - the hashes of the messages with a row before the cut (old keys);
//   - for each session, the cost of each old message it keeps, with the
//     place of the message's first row (the order rows are kept in), so
//     that its total adds the fresh ones in the same order;
//   - the rows old messages keep after the cut (the ones the session and
//     blocks reports keep, and the ones the daily report keeps), placed;
//   - the state of the 5-hour blocks' chain at the cut: the start and the
//     last row of the block it was in.
//
// File, little-endian: magic "SCRIBEUS", format version u32, code stamp
// (16 bytes), payload length u64, crc32c(payload) u32, payload.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"
	"unsafe"

	"github.com/e0dc0000/scribe/internal/bincodec"
	"github.com/e0dc0000/scribe/internal/durable"
)

const (
	checkpointFile    = "status.bin"
	checkpointMagic   = "SCRIBEUS"
	checkpointVersion = 1
)

// pos is where a row is in the order of all rows: its file's path and its
// index among the file's rows (its whole lines', then its last line's).
type pos struct {
	path string
	idx  int
}

func (a pos) before(b pos) bool { return a.path < b.path || a.path == b.path && a.idx < b.idx }

// placed is a row kept for its message, at the place of the message's
// first row: kept rows are in that order.
type placed struct {
	r     *Row
	first pos
}

// costAt is the cost of a row kept, at the place of its message's first
// row.
type costAt struct {
	first pos
	cost  float64
}

// Which reports keep a later row (an old message's row after the cut).
const (
	laterBlocks = 1 << iota // the session and blocks reports
	laterDaily              // the daily report
)

type laterRow struct {
	placed
	flags uint64
}

// chainState is where the blocks' chain stands at the cut: the start and
// the last row of its current block, when it has one.
type chainState struct {
	has         bool
	start, last time.Time
}

type checkpoint struct {
	cut    time.Time
	prices uint64
	hash   uint64 // the sum of the old rows' hashes
	rows   int    // and their number
	chain  chainState
	keys   keySet
	later  []laterRow
	// sessions is the sessions' section, decoded one session at a time;
	// paths the paths the places point into (a sorted table).
	sessions string
	paths    []string
}

// keySet is a sorted run of distinct 8-byte little-endian hashes.
type keySet string

func makeKeySet(hs []uint64) keySet {
	slices.Sort(hs)
	hs = slices.Compact(hs)
	b := make([]byte, 0, 8*len(hs))
	for _, h := range hs {
		b = binary.LittleEndian.AppendUint64(b, h)
	}
	return keySet(b)
}

func (k keySet) has(h uint64) bool {
	n := len(k) / 8
	i := sort.Search(n, func(i int) bool { return le64(string(k[8*i:])) >= h })
	return i < n && le64(string(k[8*i:])) == h
}

// old says whether r belongs with the checkpoint.
func (ck *checkpoint) old(r *Row) bool {
	return r.Time.Before(ck.cut) || r.MessageID != "" && ck.keys.has(keyHash(r))
}

// statusCut is the cut of a status at now: the start of today less a
// block's length.
func statusCut(now time.Time, loc *time.Location) time.Time {
	today, _ := dayOf(now, loc)
	return today.Add(-BlockLength)
}

// dayOf is the start of now's day in loc, and of the next.
func dayOf(now time.Time, loc *time.Location) (today, tomorrow time.Time) {
	y, m, d := now.In(loc).Date()
	today = time.Date(y, m, d, 0, 0, 0, 0, loc)
	return today, today.AddDate(0, 0, 1)
}

// rowsOf is a file's rows: its entry's (loaded), then its last line's.
func (r *fileResult) rowsOf() []Row {
	if len(r.tailRows) == 0 {
		return r.e.Rows
	}
	return append(r.e.Rows[:len(r.e.Rows):len(r.e.Rows)], r.tailRows...)
}

// split goes through the files' rows: the old ones are summed up (their
// hashes and their number), the fresh ones given with their places, in
// order. A file whose rows all come before cut (by its summary) is summed
// up from its summary, its rows left undecoded.
func split(results []fileResult, old func(*Row) bool, cut time.Time) (hash uint64, n int, fresh []*Row, places []pos, err error) {
	for i := range results {
		r := &results[i]
		if r.e == nil {
			continue
		}
		if sum := r.e.summary(); len(r.tailRows) == 0 && sum.latest.Before(cut) {
			hash, n = hash+sum.hash, n+sum.rows
			continue
		}
		if err := r.e.load(); err != nil {
			return 0, 0, nil, nil, err
		}
		file, rows := pathHash(r.e.Path), r.rowsOf()
		for j := range rows {
			if old(&rows[j]) {
				hash, n = hash+rowHash(file, j, &rows[j]), n+1
				continue
			}
			fresh, places = append(fresh, &rows[j]), append(places, pos{r.e.Path, j})
		}
	}
	return hash, n, fresh, places, nil
}

// buildCheckpoint works the checkpoint at cut out from every file's rows
// (results with their entries loaded).
func buildCheckpoint(results []fileResult, p *Pricer, cut time.Time) (*checkpoint, error) {
	var hs []uint64
	var all []*Row
	var places []pos
	for i := range results {
		if results[i].e == nil {
			continue
		}
		rows := results[i].rowsOf()
		for j := range rows {
			if r := &rows[j]; r.MessageID != "" && r.Time.Before(cut) {
				hs = append(hs, keyHash(r))
			}
			all, places = append(all, &rows[j]), append(places, pos{results[i].e.Path, j})
		}
	}
	ck := &checkpoint{cut: cut, prices: p.fingerprint(), keys: makeKeySet(hs)}
	var err error
	if ck.hash, ck.rows, _, _, err = split(results, ck.old, cut); err != nil {
		return nil, err
	}
	var first []int
	kept, costFirst, _ := dedupeFirst(all, &first)
	sessions := map[string][]costAt{}
	var before []*Row
	for j, r := range kept {
		if !ck.old(r) {
			continue
		}
		at := places[first[j]]
		if r.ModelName() != "" {
			cost, _ := p.Cost(r)
			sessions[r.Session] = append(sessions[r.Session], costAt{at, cost})
		}
		ck.later = append(ck.later, laterOf(r, costFirst[j], at, cut)...)
		if r.Time.Before(cut) {
			before = append(before, r)
		}
	}
	ch := newBlockChain(p, cut, BlockLength)
	ch.addAll(before)
	if ch.cur != nil {
		ck.chain = chainState{has: true, start: ch.cur.start, last: ch.cur.last}
	}
	ck.sessions, ck.paths = encodeSessions(sessions, ck.later)
	return ck, nil
}

// laterOf are the rows an old message keeps after cut: r (the session and
// blocks reports') and daily (the daily report's, when another row).
func laterOf(r, daily *Row, at pos, cut time.Time) []laterRow {
	var out []laterRow
	if daily == nil {
		daily = r
	}
	if !r.Time.Before(cut) {
		out = append(out, laterRow{placed{r, at}, laterBlocks})
	}
	if !daily.Time.Before(cut) {
		if len(out) == 1 && daily == r {
			out[0].flags |= laterDaily
		} else {
			out = append(out, laterRow{placed{daily, at}, laterDaily})
		}
	}
	return out
}

// status is StatusOf at now from the files' rows, through the checkpoint;
// ok is false when the old rows are not those it was made from.
func (ck *checkpoint) status(results []fileResult, p *Pricer, session string, now time.Time, loc *time.Location) (st Status, ok bool, err error) {
	hash, n, fresh, places, err := split(results, ck.old, ck.cut)
	if err != nil || hash != ck.hash || n != ck.rows {
		return st, false, err
	}
	var first []int
	kept, costFirst, _ := dedupeFirst(fresh, &first)
	olds, err := ck.session(session)
	if err != nil {
		return st, false, err
	}
	i := 0
	for j, r := range kept {
		if r.Session != session || r.ModelName() == "" {
			continue
		}
		for ; i < len(olds) && olds[i].first.before(places[first[j]]); i++ {
			st.SessionCost += olds[i].cost
		}
		cost, _ := p.Cost(r)
		st.SessionCost += cost
	}
	for ; i < len(olds); i++ {
		st.SessionCost += olds[i].cost
	}
	daily, blocks := make([]placed, len(kept)), make([]placed, len(kept))
	for j, r := range kept {
		d := r
		if cf, ok := costFirst[j]; ok {
			d = cf
		}
		daily[j], blocks[j] = placed{d, places[first[j]]}, placed{r, places[first[j]]}
	}
	today, tomorrow := dayOf(now, loc)
	for _, x := range ck.merge(daily, laterDaily) {
		if !x.r.Time.Before(today) && x.r.Time.Before(tomorrow) && x.r.ModelName() != "" {
			cost, _ := p.Cost(x.r)
			st.TodayCost += cost
		}
	}
	st.Block = ck.activeBlock(ck.merge(blocks, laterBlocks), p, now)
	return st, true, nil
}

// merge merges fresh kept rows (in order) with the later rows of flag.
func (ck *checkpoint) merge(fresh []placed, flag uint64) []placed {
	out := make([]placed, 0, len(fresh)+len(ck.later))
	for _, l := range ck.later {
		if l.flags&flag == 0 {
			continue
		}
		for len(fresh) > 0 && fresh[0].first.before(l.first) {
			out, fresh = append(out, fresh[0]), fresh[1:]
		}
		out = append(out, l.placed)
	}
	return append(out, fresh...)
}

// activeBlock is the active block of the rows kept after the cut (in the
// order kept), the chain going on from where it stood at the cut.
func (ck *checkpoint) activeBlock(rows []placed, p *Pricer, now time.Time) *Block {
	ch := newBlockChain(p, now, BlockLength)
	if c := ck.chain; c.has {
		ch.cur = &Block{Models: []string{}, start: c.start, end: c.start.Add(BlockLength), first: c.last, last: c.last, byModel: map[string]*ModelBreakdown{}}
	}
	rs := make([]*Row, len(rows))
	for i := range rows {
		rs[i] = rows[i].r
	}
	ch.addAll(rs)
	var active *Block
	for _, b := range ch.close() {
		if b.IsActive {
			active = &b
		}
	}
	return active
}

// encodeSessions writes the sessions' section (sorted by session, each's
// costs in order), and the table of the paths it and later point into.
func encodeSessions(sessions map[string][]costAt, later []laterRow) (string, []string) {
	index := map[string]uint64{}
	for _, cs := range sessions {
		for _, c := range cs {
			index[c.first.path] = 0
		}
	}
	for _, l := range later {
		index[l.first.path] = 0
	}
	paths := make([]string, 0, len(index))
	for p := range index {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for i, p := range paths {
		index[p] = uint64(i)
	}
	ids := make([]string, 0, len(sessions))
	for id := range sessions {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var e bincodec.Enc
	for _, id := range ids {
		var one bincodec.Enc
		one.Uv(uint64(len(sessions[id])))
		for _, c := range sessions[id] {
			one.Uv(index[c.first.path])
			one.Uv(uint64(c.first.idx))
			one.B = binary.LittleEndian.AppendUint64(one.B, math.Float64bits(c.cost))
		}
		e.Str(id)
		e.Bytes(one.B)
	}
	return string(e.B), paths
}

// session is the costs of the old messages session keeps, in order.
func (ck *checkpoint) session(id string) ([]costAt, error) {
	d := &bincodec.Dec{S: ck.sessions}
	for d.Off < d.Len() && d.Err == nil {
		name, section := d.Str(), d.Str()
		if name != id || d.Err != nil {
			continue
		}
		d = &bincodec.Dec{S: section}
		out := make([]costAt, d.Count())
		for i := range out {
			at := ck.place(d)
			if d.Off+8 > d.Len() {
				d.Fail("short cost")
				break
			}
			out[i] = costAt{at, math.Float64frombits(le64(d.S[d.Off:]))}
			d.Off += 8
		}
		if d.Err != nil {
			return nil, fmt.Errorf("usage status checkpoint: session %s: %w", id, d.Err)
		}
		return out, nil
	}
	return nil, d.Err
}

// place reads a place: an index into the paths and a row's index.
func (ck *checkpoint) place(d *bincodec.Dec) pos {
	i, idx := d.Uv(), d.Uv()
	if i >= uint64(len(ck.paths)) {
		d.Fail("bad path index")
		return pos{}
	}
	return pos{ck.paths[i], int(idx)}
}

// encode writes the checkpoint's file.
func (ck *checkpoint) encode() []byte {
	var e bincodec.Enc
	e.V(ck.cut.Unix())
	e.Uv(uint64(ck.cut.Nanosecond()))
	e.B = binary.LittleEndian.AppendUint64(e.B, ck.prices)
	e.B = binary.LittleEndian.AppendUint64(e.B, ck.hash)
	e.Uv(uint64(ck.rows))
	if ck.chain.has {
		e.Uv(1)
		for _, t := range []time.Time{ck.chain.start, ck.chain.last} {
			e.V(t.Unix())
			e.Uv(uint64(t.Nanosecond()))
		}
	} else {
		e.Uv(0)
	}
	e.Str(string(ck.keys))
	e.Uv(uint64(len(ck.paths)))
	for _, p := range ck.paths {
		e.Str(p)
	}
	index := make(map[string]uint64, len(ck.paths))
	for i, p := range ck.paths {
		index[p] = uint64(i)
	}
	e.Uv(uint64(len(ck.later)))
	for _, l := range ck.later {
		e.Uv(l.flags)
		e.Uv(index[l.first.path])
		e.Uv(uint64(l.first.idx))
		e.Str(l.r.Session)
		var row bincodec.Enc
		encodeRows(&row, []Row{*l.r})
		e.Bytes(row.B)
	}
	e.Str(ck.sessions)
	return sealFile(checkpointMagic, checkpointVersion, e.B)
}

// decodeCheckpoint reads a checkpoint's file.
func decodeCheckpoint(data []byte) (*checkpoint, error) {
	payload, err := unsealFile(data, checkpointMagic, checkpointVersion)
	if err != nil {
		return nil, err
	}
	d := &bincodec.Dec{S: unsafe.String(unsafe.SliceData(payload), len(payload))}
	ck := &checkpoint{}
	sec, nsec := d.V(), d.Uv()
	ck.cut = timeOf(sec, nsec, d)
	if d.Off+16 > d.Len() {
		return nil, errors.New("cut short")
	}
	ck.prices, ck.hash = le64(d.S[d.Off:]), le64(d.S[d.Off+8:])
	d.Off += 16
	ck.rows = int(d.Uv())
	if d.Uv() == 1 {
		ck.chain.has = true
		for _, t := range []*time.Time{&ck.chain.start, &ck.chain.last} {
			sec, nsec := d.V(), d.Uv()
			*t = timeOf(sec, nsec, d)
		}
	}
	ck.keys = keySet(d.Str())
	ck.paths = make([]string, d.Count())
	for i := range ck.paths {
		ck.paths[i] = d.Str()
	}
	ck.later = make([]laterRow, d.Count())
	for i := range ck.later {
		l := &ck.later[i]
		l.flags = d.Uv()
		l.first = ck.place(d)
		en := &entry{Session: d.Str(), sum: rowSummary{rows: 1}}
		en.section = d.Str()
		if d.Err != nil {
			break
		}
		if err := en.load(); err != nil {
			return nil, err
		}
		l.r = &en.Rows[0]
	}
	ck.sessions = d.Str()
	if d.Err == nil && (d.Off != d.Len() || len(ck.keys)%8 != 0) {
		d.Fail("trailing bytes")
	}
	if d.Err != nil {
		return nil, d.Err
	}
	return ck, nil
}

// loadCheckpoint reads the checkpoint in cacheDir: nil and no error when
// there is none, an error when its file cannot be used (it is then made
// again).
func loadCheckpoint(cacheDir string) (*checkpoint, error) {
	data, err := os.ReadFile(filepath.Join(cacheDir, checkpointFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ck, err := decodeCheckpoint(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", checkpointFile, err)
	}
	return ck, nil
}

// save writes the checkpoint into cacheDir, atomically but without fsync
// (a damaged one fails its checksum and is made again).
func (ck *checkpoint) save(cacheDir string) error {
	if err := os.MkdirAll(cacheDir, 0o700); err != nil {
		return err
	}
	data := ck.encode()
	_, err := durable.Replace(filepath.Join(cacheDir, checkpointFile), durable.Options{NoSync: true}, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	return err
}

// sealFile is a cache file: magic, version, the code stamp, the payload's
// length and checksum, the payload.
func sealFile(magic string, version uint32, payload []byte) []byte {
	out := make([]byte, cacheHeader, cacheHeader+len(payload))
	copy(out, magic)
	binary.LittleEndian.PutUint32(out[8:], version)
	stamp := cacheStamp()
	copy(out[12:28], stamp[:])
	binary.LittleEndian.PutUint64(out[28:], uint64(len(payload)))
	binary.LittleEndian.PutUint32(out[36:], crc32.Checksum(payload, castagnoli))
	return append(out, payload...)
}

// unsealFile checks a cache file sealFile wrote and gives its payload.
func unsealFile(data []byte, magic string, version uint32) ([]byte, error) {
	n, err := unsealHeader(data, magic, version)
	if err != nil {
		return nil, err
	}
	payload := data[cacheHeader:]
	if n != uint64(len(payload)) {
		return nil, fmt.Errorf("payload of %d bytes, header says %d", len(payload), n)
	}
	return payload, checkPayload(data, payload)
}

// unsealHeader checks the header of a cache file sealFile wrote (data
// holds at least its cacheHeader bytes) and gives the payload's length.
func unsealHeader(data []byte, magic string, version uint32) (uint64, error) {
	if len(data) < cacheHeader || string(data[:8]) != magic {
		return 0, errors.New("not a usage cache file")
	}
	if v := binary.LittleEndian.Uint32(data[8:]); v != version {
		return 0, fmt.Errorf("format version %d, want %d", v, version)
	}
	if stamp := cacheStamp(); string(data[12:28]) != string(stamp[:]) {
		return 0, errors.New("written by another build")
	}
	return binary.LittleEndian.Uint64(data[28:]), nil
}

// checkPayload checks payload against the checksum in header.
func checkPayload(header, payload []byte) error {
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(header[36:]) {
		return errors.New("checksum mismatch")
	}
	return nil
}
