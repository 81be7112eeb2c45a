package gemini

import "github.com/augceo/agent/provider"

// Endpoint says where p sends requests, and the model of a Request that
// names none (Config.Model).
func (p *Provider) Endpoint() provider.Endpoint {
	return provider.Endpoint{Provider: "gemini", BaseURL: p.baseURL, Model: p.model}
}
