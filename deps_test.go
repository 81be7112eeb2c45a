package agent_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies keeps imports pointing inward (STYLE 1): the pure core
// uses the standard library only, schema adds its JSON Schema libraries,
// the root package never imports a provider or store adapter, and
// telemetry only OpenTelemetry's API.
func TestDependencies(t *testing.T) {
	schemaLibs := []string{
		"github.com/santhosh-tekuri/jsonschema/v6", "github.com/santhosh-tekuri/jsonschema/v6/", "github.com/invopop/jsonschema",
		"github.com/bahlo/generic-list-go", "github.com/buger/jsonparser", "go.yaml.in/yaml/", "github.com/pb33f/ordered-map/",
		"golang.org/x/text/",
	}
	core := []string{"github.com/augceo/agent/ref", "github.com/augceo/agent/message", "github.com/augceo/agent/jsonstream", "github.com/augceo/agent/internal/jsonfast", "github.com/augceo/agent/internal/ojson"}
	for _, tt := range []struct {
		pkg     string
		allowed []string
	}{
		{"./ref", core},
		{"./message", core},
		{"./jsonstream", core},
		{"./schema", append([]string{"github.com/augceo/agent/schema", "github.com/augceo/agent/internal/jsonfast"}, schemaLibs...)},
		{"./provider", []string{"github.com/augceo/agent/provider"}},
		{"./store", []string{"github.com/augceo/agent/store", "github.com/augceo/agent/provider"}},
		{".", append(append([]string{"github.com/augceo/agent", "github.com/augceo/agent/internal/", "github.com/augceo/agent/schema",
			"github.com/augceo/agent/provider", "github.com/augceo/agent/platform", "github.com/augceo/agent/store"}, core...), schemaLibs...)},
		// telemetry: the root package and OpenTelemetry's API (traces and
		// metrics), not its SDK.
		{"./telemetry", append(append([]string{"github.com/augceo/agent", "github.com/augceo/agent/telemetry", "github.com/augceo/agent/internal/",
			"github.com/augceo/agent/schema", "github.com/augceo/agent/provider", "github.com/augceo/agent/platform", "github.com/augceo/agent/store",
			"go.opentelemetry.io/otel/attribute", "go.opentelemetry.io/otel/attribute/", "go.opentelemetry.io/otel/codes", "go.opentelemetry.io/otel/semconv/",
			"go.opentelemetry.io/otel/trace", "go.opentelemetry.io/otel/trace/", "go.opentelemetry.io/otel/metric", "go.opentelemetry.io/otel/metric/",
			"github.com/cespare/xxhash/v2"}, core...), schemaLibs...)},
	} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", tt.pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", tt.pkg, err, out)
		}
	deps:
		for _, dep := range strings.Fields(string(out)) {
			for _, a := range tt.allowed {
				if dep == a || strings.HasSuffix(a, "/") && strings.HasPrefix(dep, a) || dep == strings.TrimSuffix(a, "/") {
					continue deps
				}
			}
			if tt.pkg == "." && dep == "github.com/augceo/agent" {
				continue
			}
			t.Errorf("%s imports %s, which is not allowed there", tt.pkg, dep)
		}
	}
}
