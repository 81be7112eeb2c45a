package anthropic

import "github.com/augceo/agent/provider"

// DefaultBaseURL is Anthropic's API, used when neither Config.BaseURL nor
// ANTHROPIC_BASE_URL names another.
const DefaultBaseURL = "https://api.anthropic.com/"

// Endpoint says where p sends requests, and the model of a Request that
// names none (Config.Model, else [DefaultModel]).
func (p *Provider) Endpoint() provider.Endpoint {
	return provider.Endpoint{Provider: "anthropic", BaseURL: p.baseURL, Model: p.model}
}
