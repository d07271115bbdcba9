package index

// The sessions index: the encoding of its sections A and B (see index.go).

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/bincodec"
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

type encoder struct{ bincodec.Enc }

func (e *encoder) key(k fileKey) {
	e.V(k.size)
	e.V(k.mtime)
	e.V(k.ctime)
	e.Uv(k.ino)
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
	ea.Uv(uint64(len(folders)))
	for _, folder := range folders {
		m := x.folders[folder]
		names := make([]string, 0, len(m))
		for name, e := range m {
			if !e.racy && (!e.listed || e.life != nil) {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		ea.Str(folder)
		ea.Uv(uint64(len(names)))
		for _, name := range names {
			e := m[name]
			n++
			ea.Str(name)
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
			ea.Uv(fl)
			if e.sideDir {
				for _, k := range []fileKey{e.sideTitle, e.sideArch} {
					if !k.present {
						ea.Uv(0)
						continue
					}
					ea.Uv(1)
					ea.key(k)
				}
			}
			if !e.listed {
				continue
			}
			in := &e.info
			for _, s := range []string{in.SessionID, in.Summary, in.CustomTitle, in.FirstPrompt, in.GitBranch,
				in.Cwd, in.Tag, in.Entrypoint, in.SessionKind, e.recCwd, e.contIn} {
				ea.Str(s)
			}
			ea.V(in.LastModified)
			ea.V(in.FileSize)
			if in.CreatedAt != nil {
				ea.V(*in.CreatedAt)
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
			eb.Uv(ll)
			eb.Bytes(lf.tail)
			eb.Str(lf.model)
			eb.Str(lf.lastMsg)
			eb.Uv(uint64(len(lf.tools)))
			for _, t := range lf.tools {
				eb.Str(t)
			}
			if lf.lastTSok {
				eb.V(lf.lastTS)
			}
			if lf.convTSok {
				eb.V(lf.convTS)
			}
			eb.Uv(uint64(max(slices.Index(classes, lf.class), 0)))
			eb.Uv(uint64(max(slices.Index(states, lf.state), 0)))
		}
	}
	return ea.B, eb.B, n
}

// decoder reads a section: the first from a string (its strings are cut out
// of it, no allocation each), the second from bytes (byte fields are
// slices of it).
type decoder struct{ bincodec.Dec }

func (d *decoder) key() fileKey {
	return fileKey{present: true, size: d.V(), mtime: d.V(), ctime: d.V(), ino: d.Uv()}
}

func decodeA(a string, count uint32) (*memIndex, error) {
	d := &decoder{bincodec.Dec{S: a}}
	x := &memIndex{folders: make(map[string]map[string]*entry)}
	total := 0
	nf := d.Count()
	for range nf {
		folder := d.Str()
		n := d.Count()
		if d.Err != nil {
			break
		}
		if _, dup := x.folders[folder]; dup {
			return nil, fmt.Errorf("folder %s twice", folder)
		}
		m := make(map[string]*entry, n)
		x.folders[folder] = m
		for range n {
			name := d.Str()
			e := &entry{key: d.key()}
			fl := d.Uv()
			e.sideDir = fl&flagSideDir != 0
			if e.sideDir {
				for _, k := range []*fileKey{&e.sideTitle, &e.sideArch} {
					switch d.Uv() {
					case 0:
					case 1:
						*k = d.key()
					default:
						d.Fail("bad sidecar key")
					}
				}
			}
			if fl&flagListed != 0 {
				e.listed = true
				in := &e.info
				for _, p := range []*string{&in.SessionID, &in.Summary, &in.CustomTitle, &in.FirstPrompt, &in.GitBranch,
					&in.Cwd, &in.Tag, &in.Entrypoint, &in.SessionKind, &e.recCwd, &e.contIn} {
					*p = d.Str()
				}
				e.recFound = fl&flagRecFound != 0
				in.LastModified = d.V()
				in.FileSize = d.V()
				if fl&flagCreatedAt != 0 {
					v := d.V()
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
			if d.Err != nil {
				return nil, d.Err
			}
			if _, dup := m[name]; dup {
				return nil, fmt.Errorf("file %s/%s twice", folder, name)
			}
			m[name] = e
			total++
		}
	}
	if d.Err != nil {
		return nil, d.Err
	}
	if d.Off != len(a) {
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
	d := &decoder{bincodec.Dec{B: b}}
	if b == nil {
		d.B = []byte{}
	}
	out := make([]*lifecycle, 0, min(n, len(b)))
	for range n {
		lf := &lifecycle{}
		ll := d.Uv()
		lf.tail = d.Bytes()
		if ll&lifeTail == 0 {
			lf.tail = nil
		}
		lf.model = d.Str()
		lf.lastMsg = d.Str()
		if nt := d.Count(); nt > 0 {
			lf.tools = make([]string, nt)
			for i := range lf.tools {
				lf.tools[i] = d.Str()
			}
		}
		if ll&lifeLastTS != 0 {
			lf.lastTS, lf.lastTSok = d.V(), true
		}
		if ll&lifeConvTS != 0 {
			lf.convTS, lf.convTSok = d.V(), true
		}
		c, st := d.Uv(), d.Uv()
		if c >= uint64(len(classes)) || st >= uint64(len(states)) {
			d.Fail("bad class")
		}
		if d.Err != nil {
			return nil, d.Err
		}
		lf.class, lf.state = classes[c], states[st]
		out = append(out, lf)
	}
	if d.Off != len(b) {
		return nil, errors.New("trailing bytes in the second section")
	}
	return out, nil
}
