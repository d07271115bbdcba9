package cmdutil

import "runtime/debug"

// BuildVersion is the version the binary says it is: set, the -X value
// when one was given (Factory.Version), else the module's version (`go
// install ...@v1.2.3`), else the commit it was built from (`go build` in a
// checkout stamps vcs.revision, with "+dirty" when the tree had changes),
// else "unknown".
func BuildVersion(set string) string {
	if set != "" {
		return set
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return versionOf(info)
}

// versionOf picks the version from a binary's build information.
func versionOf(info *debug.BuildInfo) string {
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, when string
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown (built without version control information)"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v := "commit " + rev
	if dirty {
		v += "+dirty"
	}
	if when != "" {
		v += " of " + when
	}
	return v
}
