// Package stops holds what the adapters' errors for stopped solutions
// (see provider.SolutionError) share: an error names the lowest solution
// stopped, as Index, and the others, as Others.
package stops

import "slices"

// Solutions returns index followed by others, in a new slice: what
// Solutions of provider.SolutionError returns.
func Solutions(index int, others []int) []int {
	return append([]int{index}, others...)
}

// Others returns the indexes of stopped other than index, each once, in
// increasing order; nil when there are none.
func Others(index int, stopped []int) []int {
	var o []int
	for _, i := range stopped {
		if i != index && !slices.Contains(o, i) {
			o = append(o, i)
		}
	}
	slices.Sort(o)
	return o
}
