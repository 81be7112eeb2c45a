package openai

import "github.com/augceo/agent/provider"

// Endpoint says where p sends requests: its name ("openai", "ollama", or
// the name of another OpenAI-compatible server) and base URL, and the
// model of a Request that names none (Config.Model).
func (p *Provider) Endpoint() provider.Endpoint {
	return provider.Endpoint{Provider: p.cfg.Name, BaseURL: p.cfg.BaseURL, Model: p.cfg.Model}
}
