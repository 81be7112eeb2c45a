package agent_test

import (
	"fmt"
	"testing"

	"github.com/augceo/agent"
)

// BenchmarkWriteGrowth runs BenchmarkLoopGrowth's run with other writes,
// and reports the framework's time and bytes per step, which must not
// grow with the run either.
//
// fanout/S=…: each step's call writes its result to a new state key and
// to one more (†state.k<n> && †state.last): two writes to one identity,
// checked against each other before they are appended.
//
// scoped/S=…: each step's call sees only the state (_scopes: ["state"]),
// and writes its result to a new state key, so the value it is given
// grows with the run.
func BenchmarkWriteGrowth(b *testing.B) {
	for _, tt := range []struct {
		name   string
		answer func(i int) string
	}{
		{"fanout", func(i int) string {
			return fmt.Sprintf(`{"calls":[{"_tool":"t%d","x":%d,"_outputPath":"†state.k%d && †state.last"}],"output":null}`, i%10, i, i)
		}},
		{"scoped", func(i int) string {
			return fmt.Sprintf(`{"calls":[{"_tool":"t%d","x":%d,"_scopes":["state"],"_outputPath":"†state.k%d"}],"output":null}`, i%10, i, i)
		}},
	} {
		for _, steps := range []int{10, 100, 500} {
			b.Run(fmt.Sprintf("%s/S=%d", tt.name, steps), func(b *testing.B) {
				growth(b, steps, tt.answer, func(int) agent.Config { return agent.Config{} })
			})
		}
	}
}
