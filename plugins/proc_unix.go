//go:build unix

package plugins

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the plugin in a process group of its own, so that a
// kill reaches whatever it started (a shell script's children included).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killProcessGroup(pid int) {
	if pid <= 0 {
		return
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}
