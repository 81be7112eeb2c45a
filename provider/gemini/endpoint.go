package gemini

import "github.com/augceo/agent/provider"

// Endpoint says where p sends requests.
func (p *Provider) Endpoint() provider.Endpoint {
	return provider.Endpoint{Provider: "gemini", BaseURL: p.baseURL}
}
