//go:build !linux

package forge

import "errors"

func setHdrIncl(uintptr) error { return errors.New("forge: spoofing needs Linux") }
