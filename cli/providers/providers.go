// Package providers builds the model providers of the acts command: it is
// what cmd/acts sets [cli.Env.Providers] to. It is a package of its own
// so that a program running package cli without models (as
// examples/orders does) does not link the provider SDKs:
//
//	os.Exit(cli.Main(ctx, os.Args[1:], cli.Env{Registry: reg, Providers: providers.New}))
package providers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/augceo/agent/cli"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/anthropic"
	"github.com/augceo/agent/provider/gemini"
	"github.com/augceo/agent/provider/openai"
)

// New builds the provider called name for model: openai, anthropic,
// gemini (or google), or ollama (with openai.Config.LegacyMaxTokens), at
// baseURL when it is not empty. Any other name, given a base URL, is an
// OpenAI-compatible server (vLLM, LM Studio); without one it is an error
// wrapping [cli.ErrUnknownProvider].
// Keys come from the providers' usual environment variables
// (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY or GOOGLE_API_KEY),
// Ollama's address from OLLAMA_HOST. New does no I/O; ctx is unused.
func New(_ context.Context, name, model, baseURL string) (provider.Provider, error) {
	p, err := build(name, model, baseURL)
	if errors.Is(err, provider.ErrNoKey) {
		// The adapters name their Config field, which a user of acts
		// cannot set: say the variable.
		vars := map[string]string{
			"openai":    "OPENAI_API_KEY (a server that needs none: --base-url URL or OPENAI_BASE_URL)",
			"anthropic": "ANTHROPIC_API_KEY",
			"gemini":    "GEMINI_API_KEY or GOOGLE_API_KEY",
			"google":    "GEMINI_API_KEY or GOOGLE_API_KEY",
		}
		if v, ok := vars[name]; ok {
			return nil, fmt.Errorf("%w: %s:%s needs %s", provider.ErrNoKey, name, model, v)
		}
	}
	return p, err
}

func build(name, model, baseURL string) (provider.Provider, error) {
	switch name {
	case "openai":
		return openai.New(openai.Config{Model: model, BaseURL: baseURL})
	case "anthropic":
		return anthropic.New(anthropic.Config{Model: model, BaseURL: baseURL})
	case "gemini", "google":
		return gemini.New(gemini.Config{Model: model, BaseURL: baseURL})
	case "ollama":
		if baseURL == "" {
			baseURL = ollamaURL()
		}
		// Ollama reads the output limit from max_tokens only.
		return openai.New(openai.Config{Name: "ollama", Model: model, BaseURL: baseURL, LegacyMaxTokens: true})
	}
	if baseURL == "" {
		return nil, fmt.Errorf("%w %q (openai, anthropic, gemini, ollama, or any name with --base-url for an OpenAI-compatible server)", cli.ErrUnknownProvider, name)
	}
	return openai.New(openai.Config{Name: name, Model: model, BaseURL: baseURL})
}

// ollamaURL is Ollama's OpenAI-compatible endpoint, from OLLAMA_HOST.
func ollamaURL() string {
	host := os.Getenv("OLLAMA_HOST")
	if host == "" {
		return "http://localhost:11434/v1"
	}
	if !strings.Contains(host, "://") {
		host = "http://" + host
	}
	return strings.TrimRight(host, "/") + "/v1"
}
