package usage

import (
	"math"
	"time"
)

// The rows' summaries and hashes the status line's fast path works with
// (see checkpoint.go). A row's hash covers everything a report reads of
// it and its place (its file's path and its index among the file's rows),
// so that sums of hashes tell whether a set of rows, and their order, is
// what it was. The hashes run splitmix64's mixer over 64-bit words: stable
// from one run, build and machine to the next.

// rowSummary is what the cache keeps of a file's rows besides the rows:
// their number, the latest row's time (zero when none) and the sum of
// their hashes.
type rowSummary struct {
	rows   int
	latest time.Time
	hash   uint64
}

// summary is the summary of the entry's rows. An entry from the cache has
// it as read (its rows need not be loaded); one whose rows were parsed in
// this run has it worked out from them, from where its old summary
// stopped when the file only grew.
func (en *entry) summary() rowSummary {
	if en.summed {
		return en.sum
	}
	file := pathHash(en.Path)
	for i := en.sum.rows; i < len(en.Rows); i++ {
		r := &en.Rows[i]
		en.sum.hash += rowHash(file, i, r)
		if r.Time.After(en.sum.latest) {
			en.sum.latest = r.Time
		}
	}
	en.sum.rows, en.summed = len(en.Rows), true
	return en.sum
}

// hashSeed starts every hash.
const hashSeed = 0x243f6a8885a308d3

// hashWord takes one more 64-bit word into the hash h: a bijective mixer
// over their sum, so that every bit of each word moves every bit of what
// follows.
func hashWord(h, w uint64) uint64 { return mix(h + w + 0x9e3779b97f4a7c15) }

// hashString takes s into h: its length, then its bytes 8 at a time.
func hashString(h uint64, s string) uint64 {
	h = hashWord(h, uint64(len(s)))
	for ; len(s) >= 8; s = s[8:] {
		h = hashWord(h, le64(s))
	}
	if len(s) > 0 {
		var w uint64
		for i := len(s) - 1; i >= 0; i-- {
			w = w<<8 | uint64(s[i])
		}
		h = hashWord(h, w)
	}
	return h
}

// mix is splitmix64's finalizer: every bit of v moves every bit of the
// result.
func mix(v uint64) uint64 {
	v ^= v >> 30
	v *= 0xbf58476d1ce4e5b9
	v ^= v >> 27
	v *= 0x94d049bb133111eb
	return v ^ v>>31
}

// pathHash is the hash of a file's path, which its rows' hashes start
// from.
func pathHash(path string) uint64 { return hashString(hashSeed, path) }

// rowHash is the hash of r, the idx-th row of the file whose pathHash is
// file.
func rowHash(file uint64, idx int, r *Row) uint64 {
	h := hashWord(file, uint64(idx))
	for _, s := range []string{r.Session, r.Model, r.Speed, r.MessageID, r.RequestID} {
		h = hashString(h, s)
	}
	hasCost := uint64(0)
	if r.HasCost {
		hasCost = 1
	}
	for _, v := range []uint64{uint64(r.Time.Unix()), uint64(r.Time.Nanosecond()), uint64(r.Input), uint64(r.Output),
		uint64(r.CacheCreate), uint64(r.CacheRead), uint64(r.CacheCreate1h), hasCost, math.Float64bits(r.CostUSD)} {
		h = hashWord(h, v)
	}
	return h
}

// keyHash is the hash of a row's message (its message id and request id).
func keyHash(r *Row) uint64 {
	return hashString(hashString(hashSeed, r.MessageID), r.RequestID)
}
