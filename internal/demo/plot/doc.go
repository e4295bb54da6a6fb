// Package plot draws the demo's clocks: an SVG chart of each host's
// |true clock offset| over time, one line per host, on a logarithmic scale
// (the interesting part of a convergence is the fall from hundreds of
// milliseconds to microseconds). No dependency: the chart is written by
// hand, and opens in any browser.
//
// Samples can also come as text, one per line, "SECONDS HOST OFFSET_NS"
// (Read): the demo writes them beside the chart.
package plot
