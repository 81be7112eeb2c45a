package agent

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/augceo/agent/ref"
)

// PlanGraph draws a plan as a Mermaid flowchart (graph TD): a node per
// call, labelled with its index and tool; an edge from each call to every
// call that reads what it writes, labelled with the reference read (dotted
// when it comes through a later branch of a branching _outputPath, which
// is taken on failure or by the activity's choice); and a source node per
// reference no call writes (input and context data), with an edge to each
// call that reads it. The output is deterministic. Malformed calls are a
// *PlanError; cycles are drawn.
func PlanGraph(plan []json.RawMessage) (string, error) {
	g := analyse(plan, nil)
	if err := g.err(0); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("graph TD\n")
	for _, n := range g.nodes {
		label := strconv.Itoa(n.index) + ": " + n.call.Tool
		if n.call.Instance != "" {
			label += " (_instance: " + n.call.Instance + ")"
		}
		fmt.Fprintf(&b, "    c%d[\"%s\"]\n", n.index, mermaidText(label))
	}
	type edge struct {
		from, to string
		label    string
	}
	sources := map[string]string{} // reference → node id
	var sourceOrder []string
	var edges []edge
	dotted := map[edge]bool{}
	seen := map[edge]bool{}
	for _, n := range g.nodes {
		for _, rd := range n.reads {
			for _, x := range rd.expr.Refs() {
				label := strings.TrimPrefix(x.String(), ref.Dagger)
				var ws []planEdge
				for _, d := range n.deps {
					if d.param == rd.param && d.ref.Offset == x.Offset {
						ws = append(ws, d)
					}
				}
				if len(ws) == 0 {
					id, ok := sources[label]
					if !ok {
						id = "s" + strconv.Itoa(len(sources))
						sources[label] = id
						sourceOrder = append(sourceOrder, label)
					}
					e := edge{id, "c" + strconv.Itoa(n.index), ""}
					if !seen[e] {
						seen[e] = true
						edges = append(edges, e)
					}
					continue
				}
				for _, w := range ws {
					e := edge{"c" + strconv.Itoa(w.from), "c" + strconv.Itoa(n.index), label}
					if !seen[e] {
						seen[e] = true
						edges = append(edges, e)
						dotted[e] = true
					}
					if w.branch == 0 {
						dotted[e] = false
					}
				}
			}
		}
	}
	for _, s := range sourceOrder {
		fmt.Fprintf(&b, "    %s{{\"%s\"}}\n", sources[s], mermaidText(s))
	}
	for _, e := range edges {
		switch {
		case e.label == "":
			fmt.Fprintf(&b, "    %s --> %s\n", e.from, e.to)
		case dotted[e]:
			fmt.Fprintf(&b, "    %s -.->|%s| %s\n", e.from, mermaidText(e.label), e.to)
		default:
			fmt.Fprintf(&b, "    %s -->|%s| %s\n", e.from, mermaidText(e.label), e.to)
		}
	}
	return b.String(), nil
}

// mermaidText escapes what would end a quoted Mermaid label.
func mermaidText(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "|", "#124;").Replace(s)
}
