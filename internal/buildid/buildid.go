// Package buildid names the build of the running program, for caches
// whose entries one build derives and another must not trust: the VCS
// revision of a clean build, else the module version, else the
// executable's identity (path, size, mtime, ctime, inode).
package buildid

import (
	"crypto/sha256"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// build is the running build's identity, worked out once.
var build = sync.OnceValue(func() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev string
		modified := false
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision":
				rev = kv.Value
			case "vcs.modified":
				modified = kv.Value == "true"
			}
		}
		v := bi.Main.Version
		// A build from a modified tree says so in neither the revision
		// nor (beyond "+dirty") the version: only the binary tells.
		switch {
		case modified || strings.Contains(v, "dirty"):
		case rev != "":
			return "rev:" + rev
		case v != "" && v != "(devel)":
			return "mod:" + v + bi.Main.Sum
		}
	}
	if exe, err := os.Executable(); err == nil {
		var st unix.Stat_t
		if unix.Stat(exe, &st) == nil {
			return fmt.Sprintf("exe:%s:%d:%d:%d:%d", exe, st.Size, st.Mtim.Nano(), st.Ctim.Nano(), st.Ino)
		}
	}
	return "exe:unknown"
})

// Stamp is 16 bytes that name the running build for purpose (a cache's
// name): equal in two processes of the same build, different otherwise.
func Stamp(purpose string) [16]byte {
	h := sha256.Sum256([]byte(purpose + "\x00" + build()))
	var out [16]byte
	copy(out[:], h[:])
	return out
}
