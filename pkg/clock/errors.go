package clock

import "errors"

// ErrFrequencyRange is returned (wrapped, with the offending value) by
// SetFrequency for a correction the clock cannot apply: not a finite number,
// or beyond the clock's maximum (±500 ppm for a Sim by default, like the
// kernel PLL; about ±100,500 ppm for System, which also moves the tick).
var ErrFrequencyRange = errors.New("clock: frequency correction out of range")

// ErrReadOnly is returned by every writing method of a System built with
// SystemOptions.ReadOnly (timed --no-adjust, and every test).
var ErrReadOnly = errors.New("clock: clock is read-only (--no-adjust): refusing to adjust it")

// ErrPermission is returned (wrapped together with the kernel's EPERM) when
// the kernel refuses to adjust the system clock.
var ErrPermission = errors.New("clock: adjusting the system clock needs CAP_SYS_TIME; run with --clock sim or --no-adjust")

// ErrUnsupported is returned by NewSystem on platforms without adjtimex.
var ErrUnsupported = errors.New("clock: the system clock can only be disciplined on Linux; use --clock sim")
