package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
)

type item struct {
	SKU   string  `json:"sku"`
	Qty   int     `json:"qty"`
	Price float64 `json:"price"`
}

type quote struct {
	Subtotal float64 `json:"subtotal"`
	Tax      float64 `json:"tax"`
	Shipping float64 `json:"shipping"`
	Total    float64 `json:"total"`
}

// price totals an order with its country's tax rate.
func price(_ context.Context, p struct {
	Items    []item             `json:"items"`
	Country  string             `json:"country"`
	Rates    map[string]float64 `json:"rates"`
	Shipping float64            `json:"shipping"`
}) (quote, error) {
	rate, ok := p.Rates[p.Country]
	if !ok {
		return quote{}, fmt.Errorf("no tax rate for country %q", p.Country)
	}
	var q quote
	for _, it := range p.Items {
		q.Subtotal += float64(it.Qty) * it.Price
	}
	q.Subtotal = cents(q.Subtotal)
	q.Tax = cents(q.Subtotal * rate)
	q.Shipping = p.Shipping
	q.Total = cents(q.Subtotal + q.Tax + q.Shipping)
	return q, nil
}

func cents(v float64) float64 { return math.Round(v*100) / 100 }

// charge charges a card; the order (the call's instance) is the
// idempotency key, as payment APIs take one, so a retried charge is not
// charged twice. A card number ending in 0000 is declined: the decline is
// written to the last branch of the output path.
func charge(_ context.Context, c *agent.Call) (*agent.Result, error) {
	var p struct {
		Card   string  `json:"card"`
		Amount float64 `json:"amount"`
	}
	if err := json.Unmarshal(c.Args(), &p); err != nil {
		return nil, err
	}
	if strings.HasSuffix(p.Card, "0000") {
		v, _ := json.Marshal(map[string]any{"reason": "card_declined", "amount": p.Amount})
		return &agent.Result{Value: v, Branch: message.Failure}, nil
	}
	h := fnv.New32a()
	h.Write([]byte(c.Instance))
	return agent.Value(map[string]any{"receipt": fmt.Sprintf("rcpt_%08x", h.Sum32()), "amount": p.Amount, "card": "…" + p.Card[len(p.Card)-4:]})
}

// ship ships a paid order and holds one whose payment was declined.
func ship(_ context.Context, p struct {
	Address string `json:"address"`
	Payment struct {
		Receipt string  `json:"receipt,omitempty"`
		Card    string  `json:"card,omitempty"`
		Reason  string  `json:"reason,omitempty"`
		Amount  float64 `json:"amount"`
	} `json:"payment"`
}) (map[string]string, error) {
	if p.Payment.Receipt == "" {
		return map[string]string{"status": "held", "reason": p.Payment.Reason}, nil
	}
	return map[string]string{"status": "shipped", "to": p.Address, "receipt": p.Payment.Receipt}, nil
}

// register adds the activities. Every one is idempotent (charge through
// its idempotency key), so a resumed run may safely run again a call that
// a crash interrupted.
func register(reg *agent.Registry, delay, audit string) error {
	var d time.Duration
	if delay != "" {
		var err error
		if d, err = time.ParseDuration(delay); err != nil {
			return fmt.Errorf("ORDERS_DELAY: %w", err)
		}
	}
	var mu sync.Mutex
	var f *os.File
	if audit != "" {
		var err error
		if f, err = os.OpenFile(audit, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return fmt.Errorf("ORDERS_AUDIT: %w", err)
		}
	}
	wrap := func(name string, a agent.Activity) agent.Activity {
		return agent.Idempotent(agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
			if f != nil {
				mu.Lock()
				_, err := fmt.Fprintf(f, "%s %s\n", name, c.Instance)
				mu.Unlock()
				if err != nil {
					return nil, err
				}
			}
			if d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return a.Run(ctx, c)
		}))
	}
	reg.Activity("price", wrap("price", agent.Bind(price)))
	reg.Activity("charge", wrap("charge", agent.ActivityFunc(charge)))
	reg.Activity("ship", wrap("ship", agent.Bind(ship)))
	return nil
}
