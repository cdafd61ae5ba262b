//go:build race

package validate

// raceOn: the race detector slows the long-K tests' loops some tenfold.
const raceOn = true
