package order

import "flag"

var soak = flag.Bool("soak", false, "run the simulations over hundreds of seeds instead of tens (a nightly run; -sim.seeds=N overrides both)")

// seeds is a simulation's seed count: quick by default, soak under -soak.
func seeds(quick, soakN int) int {
	if *soak {
		return soakN
	}
	return quick
}
