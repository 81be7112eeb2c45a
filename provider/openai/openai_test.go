package openai

import (
	"testing"

	"github.com/augceo/agent/provider/providertest"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, fake, providertest.Capabilities{Thinking: true})
}
