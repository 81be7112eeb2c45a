package schema

import "slices"

// caseRules returns the schema tree, bundled, with a rule for each
// property that Adapt joins to an object from the cases of its anyOf or
// oneOf (see dropRefinements), or nil when it joins none. A strict OpenAI
// model writes such a property in every case, null where it leaves it
// out; a case that does not name the property would take that null for a
// value, and the tool's code would get "iban":null for a card. The rule
// refuses a null there that every case naming the property refuses, so
// that it counts as absent (see Schema.Accept); a null some case takes
// for the property may be its value, and the schema as written judges it
// there. It changes nothing for a value without such a null.
//
// A tree with "unevaluatedProperties" anywhere gets no rules: the rule's
// "properties" would count as evaluating the property there. Nor does one
// with an "$id" below its root: a case's refs resolve against it, and the
// rule, at the object, would resolve them elsewhere.
func (r *Registry) caseRules(tree any) (any, error) {
	if _, ok := tree.(*object); !ok {
		return nil, nil
	}
	b := &bundler{r: r, keys: map[string]string{}, taken: map[string]bool{}}
	tree, err := b.bundle(tree)
	if err != nil {
		return nil, err
	}
	// Find the cases as Adapt does, on the tree as it merges it, and keep
	// what each object joins by the object's place in the tree.
	root := tree.(*object)
	joined := map[string][]member{}
	unevaluated := false
	_, err = walk(tree, "", func(o *object, ptr string) (any, error) {
		unevaluated = unevaluated || o.has("unevaluatedProperties") || ptr != "" && o.has("$id")
		replaceBooleans(o)
		if mergeAllOf(o, ptr) != nil {
			return o, nil // Adapt refuses the schema: no strict run has it
		}
		if _, j := caseProperties(o, root); len(j) > 0 {
			for i, m := range j {
				if d := caseDeclarations(o, root, m.key); len(d) > 1 {
					j[i].val = &object{members: []member{{"anyOf", d}}}
				}
			}
			joined[ptr] = j
		}
		return o, nil
	})
	if err != nil || len(joined) == 0 || unevaluated {
		return nil, err
	}
	return walk(tree, "", func(o *object, ptr string) (any, error) {
		j := joined[ptr]
		if len(j) == 0 {
			return o, nil
		}
		props := &object{}
		for _, m := range j {
			props.set(m.key, &object{members: []member{
				{"if", &object{members: []member{{"type", "null"}}}},
				{"then", m.val},
			}})
		}
		all, _ := o.get("allOf")
		list, _ := all.([]any)
		o.set("allOf", append(list[:len(list):len(list)], &object{members: []member{{"properties", props}}}))
		return o, nil
	})
}

// caseDeclarations returns the schemas that the cases of o's anyOf and
// oneOf (see caseProperties) declare for the property key.
func caseDeclarations(o, root *object, key string) []any {
	var decls []any
	for _, k := range []string{"anyOf", "oneOf"} {
		v, _ := o.get(k)
		list, _ := v.([]any)
		if slices.ContainsFunc(list, func(alt any) bool { return refinement(alt, root) == nil }) {
			continue // a union of types, which caseProperties leaves
		}
		for _, alt := range list {
			cp, _ := refinement(alt, root).get("properties")
			if co, ok := cp.(*object); ok {
				if d, ok := co.get(key); ok {
					decls = append(decls, d)
				}
			}
		}
	}
	return decls
}
