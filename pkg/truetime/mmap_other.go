//go:build !unix

package truetime

import (
	"errors"
	"fmt"
)

type fileID struct{}

var errPlatform = errors.New("truetime: shared memory needs a unix system")

func mapFile(path string) (*mapping, error) { return nil, fmt.Errorf("%w (%s)", errPlatform, path) }

func mapWritable(path string, gid int) (*mapping, bool, error) {
	return nil, false, fmt.Errorf("%w (%s)", errPlatform, path)
}
