//go:build !linux

package labnet

import (
	"errors"
	"os/exec"
)

var errNotLinux = errors.New("labnet: network namespaces need Linux")

func inNamespace(string, func() error) error { return errNotLinux }

func writeSysctls(string, [][2]string) error { return errNotLinux }

func startProcess(cmd *exec.Cmd) error { return cmd.Start() }

func namespacePIDs(string) ([]int, error) { return nil, errNotLinux }

func netnsInode(string) (uint64, error) { return 0, errNotLinux }
