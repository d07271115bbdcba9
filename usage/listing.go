package usage

// The listing's snapshot: the transcripts a listing of the store found,
// kept in the cache folder with the folders it read, so that a status
// line call stats those folders (a few hundred) instead of reading them.
// A folder's entries change only with its modification and change times,
// so while every folder is as the snapshot saw it, a listing finds the same
// files. A snapshot is kept only when each folder had been still for
// racyWindow when the listing began (a change in the same tick as the
// listing could leave the times as they were), and the folders are stated
// after the listing: a change while it ran shows as a recent change time.
//
// File, little-endian: magic "SCRIBEUL", format version u32, code stamp
// (16 bytes), payload length u64, crc32c(payload) u32, then the payload:
// the folders (path, whether missing, device, inode, size, mtime, ctime)
// and the files (path, session).

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	"github.com/e0dc0000/scribe/internal/bincodec"
	"github.com/e0dc0000/scribe/internal/durable"
)

const (
	listingFile    = "listing.bin"
	listingMagic   = "SCRIBEUL"
	listingVersion = 1
	// listingWorkers is how many folders are stated at a time.
	listingWorkers = 4
)

// Listing is what a listing of transcripts found, and the folders whose
// entries it read or looked for: while none of them changes, it finds the
// same files. Folders is nil when the listing depends on more than they
// hold; it is then never kept.
type Listing struct {
	Files   []File
	Folders []string
}

// folderStat is a folder as a snapshot saw it.
type folderStat struct {
	path    string
	missing bool
	st      stat
}

// CachedListing gives the files list finds: from the snapshot in cacheDir
// while every folder it read is as it was (used), else from list, whose
// answer is kept for the next calls when its folders had been still for
// racyWindow. A snapshot that cannot be read is listed again and replaced.
func CachedListing(ctx context.Context, cacheDir string, list func() (Listing, error)) (files []File, used bool, err error) {
	path := filepath.Join(cacheDir, listingFile)
	if snap, err := readListing(path); err == nil {
		if same, err := foldersStill(ctx, snap.folders); err == nil && same {
			return snap.files, true, nil
		}
	}
	start := time.Now()
	l, err := list()
	if err != nil || l.Folders == nil {
		return l.Files, false, err
	}
	folders, err := statFolders(ctx, l.Folders)
	if err != nil {
		return l.Files, false, nil
	}
	for _, f := range folders {
		if !f.missing && (start.Sub(time.Unix(0, f.st.mtime)) < racyWindow || start.Sub(time.Unix(0, f.st.ctime)) < racyWindow) {
			return l.Files, false, nil // changed too lately to be vouched for
		}
	}
	_ = saveListing(path, listingSnapshot{folders: folders, files: l.Files}) // only costs time when it fails
	return l.Files, false, nil
}

// listingSnapshot is a listing.bin's content.
type listingSnapshot struct {
	folders []folderStat
	files   []File
}

// statFolders states each folder, side by side.
func statFolders(ctx context.Context, paths []string) ([]folderStat, error) {
	out := make([]folderStat, len(paths))
	err := durable.Each(ctx, listingWorkers, len(paths), func(_ context.Context, i int) error {
		st, err := statFile(paths[i])
		if errors.Is(err, fs.ErrNotExist) {
			out[i] = folderStat{path: paths[i], missing: true}
			return nil
		}
		out[i] = folderStat{path: paths[i], st: st}
		return err
	})
	return out, err
}

// foldersStill says whether every folder is as the snapshot saw it.
func foldersStill(ctx context.Context, folders []folderStat) (bool, error) {
	paths := make([]string, len(folders))
	for i := range folders {
		paths[i] = folders[i].path
	}
	now, err := statFolders(ctx, paths)
	if err != nil {
		return false, err
	}
	for i := range now {
		if now[i] != folders[i] {
			return false, nil
		}
	}
	return true, nil
}

// saveListing writes the snapshot, atomically but without fsync (a
// damaged one fails its checksum and is made again).
func saveListing(path string, snap listingSnapshot) error {
	var e bincodec.Enc
	e.Uv(uint64(len(snap.folders)))
	for _, f := range snap.folders {
		e.Str(f.path)
		missing := uint64(0)
		if f.missing {
			missing = 1
		}
		e.Uv(missing)
		e.Uv(f.st.dev)
		e.Uv(f.st.ino)
		for _, v := range []int64{f.st.size, f.st.mtime, f.st.ctime} {
			e.V(v)
		}
	}
	e.Uv(uint64(len(snap.files)))
	for _, f := range snap.files {
		e.Str(f.Path)
		e.Str(f.Session)
	}
	data := sealFile(listingMagic, listingVersion, e.B)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	_, err := durable.Replace(path, durable.Options{NoSync: true}, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	return err
}

// readListing reads a snapshot.
func readListing(path string) (listingSnapshot, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return listingSnapshot{}, err
	}
	payload, err := unsealFile(data, listingMagic, listingVersion)
	if err != nil {
		return listingSnapshot{}, err
	}
	d := &bincodec.Dec{S: unsafe.String(unsafe.SliceData(payload), len(payload))}
	var snap listingSnapshot
	snap.folders = make([]folderStat, d.Count())
	for i := range snap.folders {
		f := &snap.folders[i]
		f.path, f.missing = d.Str(), d.Uv() != 0
		f.st.dev, f.st.ino = d.Uv(), d.Uv()
		f.st.size, f.st.mtime, f.st.ctime = d.V(), d.V(), d.V()
	}
	snap.files = make([]File, d.Count())
	for i := range snap.files {
		snap.files[i] = File{Path: d.Str(), Session: d.Str()}
	}
	if d.Err == nil && d.Off != d.Len() {
		d.Fail("trailing bytes")
	}
	return snap, d.Err
}
