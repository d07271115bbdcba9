package index

// The sessions index: the encoding of its sections A and B (see index.go).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/e0dc0000/scribe/core"
)

// Entry flags.
const (
	flagSideDir = 1 << iota
	flagListed
	flagRecFound
	flagCreatedAt
	flagArchived
	flagArchivedTrue
	flagNested // SessionInfo.Nested (format version 3)
	flagForked // SessionInfo.Forked (format version 4)
)

// Lifecycle flags.
const (
	lifeLastTS = 1 << iota
	lifeConvTS
	lifeTail
)

var (
	classes = []core.Interruption{core.InterruptionNone, core.InterruptedPrompt, core.InterruptedTurn}
	states  = []core.State{core.StateIdle, core.StateRunning, core.StateRequiresAction}
)

type encoder struct{ b []byte }

func (e *encoder) uv(v uint64)    { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) v(v int64)      { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) str(s string)   { e.uv(uint64(len(s))); e.b = append(e.b, s...) }
func (e *encoder) bytes(b []byte) { e.uv(uint64(len(b))); e.b = append(e.b, b...) }
func (e *encoder) key(k fileKey) {
	e.v(k.size)
	e.v(k.mtime)
	e.v(k.ctime)
	e.uv(k.ino)
}

// encode writes the two sections: folders and files in name order,
// racy entries and listed entries without a lifecycle part left out.
func encode(x *memIndex) (a, b []byte, n int) {
	var ea, eb encoder
	folders := make([]string, 0, len(x.folders))
	for f, m := range x.folders {
		if len(m) > 0 {
			folders = append(folders, f)
		}
	}
	sort.Strings(folders)
	ea.uv(uint64(len(folders)))
	for _, folder := range folders {
		m := x.folders[folder]
		names := make([]string, 0, len(m))
		for name, e := range m {
			if !e.racy && (!e.listed || e.life != nil) {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		ea.str(folder)
		ea.uv(uint64(len(names)))
		for _, name := range names {
			e := m[name]
			n++
			ea.str(name)
			ea.key(e.key)
			var fl uint64
			if e.sideDir {
				fl |= flagSideDir
			}
			if e.listed {
				fl |= flagListed
			}
			if e.recFound {
				fl |= flagRecFound
			}
			if e.info.CreatedAt != nil {
				fl |= flagCreatedAt
			}
			if e.info.Archived != nil {
				fl |= flagArchived
				if *e.info.Archived {
					fl |= flagArchivedTrue
				}
			}
			if e.info.Nested {
				fl |= flagNested
			}
			if e.info.Forked {
				fl |= flagForked
			}
			ea.uv(fl)
			if e.sideDir {
				for _, k := range []fileKey{e.sideTitle, e.sideArch} {
					if !k.present {
						ea.uv(0)
						continue
					}
					ea.uv(1)
					ea.key(k)
				}
			}
			if !e.listed {
				continue
			}
			in := &e.info
			for _, s := range []string{in.SessionID, in.Summary, in.CustomTitle, in.FirstPrompt, in.GitBranch,
				in.Cwd, in.Tag, in.Entrypoint, in.SessionKind, e.recCwd, e.contIn} {
				ea.str(s)
			}
			ea.v(in.LastModified)
			ea.v(in.FileSize)
			if in.CreatedAt != nil {
				ea.v(*in.CreatedAt)
			}

			lf := e.life
			var ll uint64
			if lf.lastTSok {
				ll |= lifeLastTS
			}
			if lf.convTSok {
				ll |= lifeConvTS
			}
			if lf.tail != nil {
				ll |= lifeTail
			}
			eb.uv(ll)
			eb.bytes(lf.tail)
			eb.str(lf.model)
			eb.str(lf.lastMsg)
			eb.uv(uint64(len(lf.tools)))
			for _, t := range lf.tools {
				eb.str(t)
			}
			if lf.lastTSok {
				eb.v(lf.lastTS)
			}
			if lf.convTSok {
				eb.v(lf.convTS)
			}
			eb.uv(uint64(max(slices.Index(classes, lf.class), 0)))
			eb.uv(uint64(max(slices.Index(states, lf.state), 0)))
		}
	}
	return ea.b, eb.b, n
}

// decoder reads a section: the first from a string (its strings are cut out
// of it, no allocation each), the second from bytes (byte fields are
// slices of it).
type decoder struct {
	s   string // the first section, or
	b   []byte // the second
	off int
	err error
}

func (d *decoder) len() int {
	if d.b != nil {
		return len(d.b)
	}
	return len(d.s)
}

func (d *decoder) at(i int) byte {
	if d.b != nil {
		return d.b[i]
	}
	return d.s[i]
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%s at byte %d", what, d.off)
	}
}

// uv reads a uvarint (binary.Uvarint's encoding).
func (d *decoder) uv() uint64 {
	if d.err != nil {
		return 0
	}
	var v uint64
	var shift uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		if d.off >= d.len() {
			break
		}
		c := d.at(d.off)
		d.off++
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break
			}
			return v | uint64(c)<<shift
		}
		v |= uint64(c&0x7f) << shift
		shift += 7
	}
	d.fail("bad number")
	return 0
}

// v reads a varint (zig-zag, as binary.Varint).
func (d *decoder) v() int64 {
	ux := d.uv()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

// span returns the bounds of the next length-prefixed field.
func (d *decoder) span() (int, int) {
	n := d.uv()
	if d.err != nil {
		return 0, 0
	}
	if n > uint64(d.len()-d.off) {
		d.fail("length out of range")
		return 0, 0
	}
	s := d.off
	d.off += int(n)
	return s, d.off
}

func (d *decoder) str() string {
	s, e := d.span()
	if d.b == nil {
		return d.s[s:e]
	}
	return string(d.b[s:e])
}

func (d *decoder) bytes() []byte {
	s, e := d.span()
	if d.b == nil {
		return []byte(d.s[s:e])
	}
	return d.b[s:e:e]
}

func (d *decoder) key() fileKey {
	return fileKey{present: true, size: d.v(), mtime: d.v(), ctime: d.v(), ino: d.uv()}
}

// count reads an element count, refusing one the rest of the section
// could not hold (each element takes at least one byte).
func (d *decoder) count() int {
	n := d.uv()
	if n > uint64(d.len()-d.off) {
		d.fail("count out of range")
		return 0
	}
	return int(n)
}

func decodeA(a string, count uint32) (*memIndex, error) {
	d := &decoder{s: a}
	x := &memIndex{folders: make(map[string]map[string]*entry)}
	total := 0
	nf := d.count()
	for range nf {
		folder := d.str()
		n := d.count()
		if d.err != nil {
			break
		}
		if _, dup := x.folders[folder]; dup {
			return nil, fmt.Errorf("folder %s twice", folder)
		}
		m := make(map[string]*entry, n)
		x.folders[folder] = m
		for range n {
			name := d.str()
			e := &entry{key: d.key()}
			fl := d.uv()
			e.sideDir = fl&flagSideDir != 0
			if e.sideDir {
				for _, k := range []*fileKey{&e.sideTitle, &e.sideArch} {
					switch d.uv() {
					case 0:
					case 1:
						*k = d.key()
					default:
						d.fail("bad sidecar key")
					}
				}
			}
			if fl&flagListed != 0 {
				e.listed = true
				in := &e.info
				for _, p := range []*string{&in.SessionID, &in.Summary, &in.CustomTitle, &in.FirstPrompt, &in.GitBranch,
					&in.Cwd, &in.Tag, &in.Entrypoint, &in.SessionKind, &e.recCwd, &e.contIn} {
					*p = d.str()
				}
				e.recFound = fl&flagRecFound != 0
				in.LastModified = d.v()
				in.FileSize = d.v()
				if fl&flagCreatedAt != 0 {
					v := d.v()
					in.CreatedAt = &v
				}
				if fl&flagArchived != 0 {
					v := fl&flagArchivedTrue != 0
					in.Archived = &v
				}
				in.Nested = fl&flagNested != 0
				in.Forked = fl&flagForked != 0
				x.listed = append(x.listed, e)
			}
			if d.err != nil {
				return nil, d.err
			}
			if _, dup := m[name]; dup {
				return nil, fmt.Errorf("file %s/%s twice", folder, name)
			}
			m[name] = e
			total++
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if d.off != len(a) {
		return nil, errors.New("trailing bytes in the first section")
	}
	if total != int(count) {
		return nil, fmt.Errorf("%d entries, header says %d", total, count)
	}
	return x, nil
}

func decodeB(b []byte, n int) ([]*lifecycle, error) {
	if n < 0 {
		return nil, fmt.Errorf("second section: negative entry count %d", n)
	}
	d := &decoder{b: b}
	if b == nil {
		d.b = []byte{}
	}
	out := make([]*lifecycle, 0, min(n, len(b)))
	for range n {
		lf := &lifecycle{}
		ll := d.uv()
		lf.tail = d.bytes()
		if ll&lifeTail == 0 {
			lf.tail = nil
		}
		lf.model = d.str()
		lf.lastMsg = d.str()
		if nt := d.count(); nt > 0 {
			lf.tools = make([]string, nt)
			for i := range lf.tools {
				lf.tools[i] = d.str()
			}
		}
		if ll&lifeLastTS != 0 {
			lf.lastTS, lf.lastTSok = d.v(), true
		}
		if ll&lifeConvTS != 0 {
			lf.convTS, lf.convTSok = d.v(), true
		}
		c, st := d.uv(), d.uv()
		if c >= uint64(len(classes)) || st >= uint64(len(states)) {
			d.fail("bad class")
		}
		if d.err != nil {
			return nil, d.err
		}
		lf.class, lf.state = classes[c], states[st]
		out = append(out, lf)
	}
	if d.off != len(b) {
		return nil, errors.New("trailing bytes in the second section")
	}
	return out, nil
}
