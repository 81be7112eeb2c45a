package schema

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
	joined := map[string][]caseProperty{}
	unevaluated := false
	_, err = walk(tree, "", func(o *object, ptr string) (any, error) {
		unevaluated = unevaluated || o.has("unevaluatedProperties") || ptr != "" && o.has("$id")
		replaceBooleans(o)
		if mergeAllOf(o, ptr) != nil {
			return o, nil // Adapt refuses the schema: no strict run has it
		}
		if _, j := caseProperties(o, root); len(j) > 0 {
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
		for _, c := range j {
			var decl any = &object{members: []member{{"anyOf", c.decls}}}
			if len(c.decls) == 1 {
				decl = c.decls[0]
			}
			props.set(c.key, &object{members: []member{
				{"if", &object{members: []member{{"type", "null"}}}},
				{"then", decl},
			}})
		}
		all, _ := o.get("allOf")
		list, _ := all.([]any)
		o.set("allOf", append(list[:len(list):len(list)], &object{members: []member{{"properties", props}}}))
		return o, nil
	})
}
