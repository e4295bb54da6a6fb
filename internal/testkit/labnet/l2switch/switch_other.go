//go:build !linux

package l2switch

import "errors"

// Config tunes a Switch.
type Config struct{ Seed uint64 }

// Switch is Linux only: it forwards with AF_PACKET sockets.
type Switch struct{}

var errNotLinux = errors.New("l2switch: needs Linux (AF_PACKET)")

// Open fails: the switch needs Linux.
func Open([]string, Config) (*Switch, error) { return nil, errNotLinux }

func (*Switch) Close() error                    { return errNotLinux }
func (*Switch) SetLink(int, int, Link) error    { return errNotLinux }
func (*Switch) Link(int, int) (Link, error)     { return Link{}, errNotLinux }
func (*Switch) SetPortLoss(int, PortLoss) error { return errNotLinux }
func (*Switch) PortLoss(int) (PortLoss, error)  { return PortLoss{}, errNotLinux }
func (*Switch) Stats(int, int) (Stats, error)   { return Stats{}, errNotLinux }
