package provider_test

import (
	"testing"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/anthropic"
	"github.com/augceo/agent/provider/gemini"
	"github.com/augceo/agent/provider/openai"
)

// TestEndpoints checks that each adapter, retried or not, says where it
// sends requests: what a durable run saves so a resume calls the same
// server, and the model of a request that names none, which telemetry
// records.
func TestEndpoints(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	oa, err := openai.New(openai.Config{Name: "vllm", BaseURL: "http://127.0.0.1:8000/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	an, err := anthropic.New(anthropic.Config{APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	ge, err := gemini.New(gemini.Config{APIKey: "k", BaseURL: "http://127.0.0.1:9/", Model: "gemini-2.5-flash"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		p    provider.Provider
		want provider.Endpoint
	}{
		{oa, provider.Endpoint{Provider: "vllm", BaseURL: "http://127.0.0.1:8000/v1", Model: "m"}},
		{provider.Retry(oa, provider.RetryConfig{}), provider.Endpoint{Provider: "vllm", BaseURL: "http://127.0.0.1:8000/v1", Model: "m"}},
		{an, provider.Endpoint{Provider: "anthropic", BaseURL: anthropic.DefaultBaseURL, Model: anthropic.DefaultModel}},
		{ge, provider.Endpoint{Provider: "gemini", BaseURL: "http://127.0.0.1:9/", Model: "gemini-2.5-flash"}},
	} {
		d, ok := tt.p.(provider.Describer)
		if !ok {
			t.Fatalf("%T is not a Describer", tt.p)
		}
		if got := d.Endpoint(); got != tt.want {
			t.Errorf("%T: %+v, want %+v", tt.p, got, tt.want)
		}
	}
	if _, ok := provider.Retry(provider.Func(nil), provider.RetryConfig{}).(provider.Describer); ok {
		t.Error("a retried provider that says no endpoint is a Describer")
	}
}
