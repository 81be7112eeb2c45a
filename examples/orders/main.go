// Command orders fulfils a batch of orders offline, as a durable plan run
// once per order: price, charge, then ship or hold. It is the acts command
// line with the batch's activities registered, so every acts command works
// on its runs:
//
//	go run ./examples/orders run examples/orders/orders.json --input @examples/orders/orders.jsonl
//	go run ./examples/orders runs
//	go run ./examples/orders log RUN
//	go run ./examples/orders resume RUN
//
// Each order is an instance (013): the plan in orders.json is a template
// run per order, reading the order's input and the global config. charge
// writes to a branching output path (†state.receipt || †state.declined),
// and ship reads whichever branch was written.
//
// Two settings exist for demonstrations and the crash test:
// ORDERS_DELAY (a duration each call takes, e.g. 2ms) and ORDERS_AUDIT (a
// file each call appends "tool instance" to when it runs).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/augceo/agent"
	"github.com/augceo/agent/cli"
)

func main() {
	reg := agent.NewRegistry()
	if err := register(reg, os.Getenv("ORDERS_DELAY"), os.Getenv("ORDERS_AUDIT")); err != nil {
		os.Stderr.WriteString("orders: " + err.Error() + "\n")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The commands it suggests (trace: … log RUN) name this program, which
	// has the activities its runs need, not acts, which lacks them.
	os.Exit(cli.Main(ctx, os.Args[1:], cli.Env{Registry: reg, Name: "go run ./examples/orders"}))
}
