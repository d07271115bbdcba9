package plugins

import "fmt"

// CheckBinary checks, without running anything, what a start of cfg would
// check first: that the binary it names exists and is executable (found as
// the host finds it: a relative path against workDir, a bare name in
// pathEnv, the PATH the host passes on) and that its sha256 is the one cfg
// gives. cfg must have passed Validate (Component.Decode runs it). It
// returns the binary's absolute path; a reattach block without a command
// has nothing to check and returns "". The errors wrap ErrNotFound or
// ErrChecksum.
func CheckBinary(cfg *Config, workDir, pathEnv string) (string, error) {
	if cfg.Command == "" {
		return "", nil
	}
	if len(cfg.sum) == 0 {
		return "", fmt.Errorf("plugin %s: the configuration was not validated", cfg.Command)
	}
	path, err := lookPath(cfg.Command, workDir, pathEnv)
	if err != nil {
		return "", err
	}
	if err := checkSum(path, cfg.sum); err != nil {
		return path, err
	}
	return path, nil
}
