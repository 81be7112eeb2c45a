package openai

import "github.com/augceo/agent/provider"

// Endpoint says where p sends requests: its name ("openai", "ollama", or
// the name of another OpenAI-compatible server) and base URL.
func (p *Provider) Endpoint() provider.Endpoint {
	return provider.Endpoint{Provider: p.cfg.Name, BaseURL: p.cfg.BaseURL}
}
