package apisnapshot

import (
	"bytes"
	"fmt"
	"go/types"
)

// packageLines returns one line per exported name of pkg, and one per
// exported field and method of its exported types.
func packageLines(pkg *types.Package) []string {
	prefix := "pkg " + pkg.Path() + ", "
	qual := func(p *types.Package) string {
		if p == pkg {
			return ""
		}
		return p.Path()
	}
	typ := func(t types.Type) string { return types.TypeString(t, qual) }
	sig := func(s *types.Signature) string { return signature(s, qual) }

	var lines []string
	add := func(format string, a ...any) { lines = append(lines, prefix+fmt.Sprintf(format, a...)) }
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Const:
			add("const %s %s = %s", name, typ(obj.Type()), obj.Val().ExactString())
		case *types.Var:
			add("var %s %s", name, typ(obj.Type()))
		case *types.Func:
			sig := obj.Type().(*types.Signature)
			add("func %s%s%s", name, typeParams(sig.TypeParams(), qual), signature(sig, qual))
		case *types.TypeName:
			lines = append(lines, typeLines(prefix, obj, typ, sig, qual)...)
		}
	}
	return lines
}

func typeLines(prefix string, obj *types.TypeName, typ func(types.Type) string, sig func(*types.Signature) string, qual types.Qualifier) []string {
	name := obj.Name()
	var lines []string
	add := func(format string, a ...any) { lines = append(lines, prefix+fmt.Sprintf(format, a...)) }
	if obj.IsAlias() {
		add("type %s = %s", name, typ(types.Unalias(obj.Type())))
		return lines
	}
	named, ok := obj.Type().(*types.Named)
	if !ok {
		add("type %s %s", name, typ(obj.Type().Underlying()))
		return lines
	}
	full := name + typeParams(named.TypeParams(), qual)
	switch u := named.Underlying().(type) {
	case *types.Struct:
		add("type %s struct", full)
		for i := range u.NumFields() {
			f := u.Field(i)
			switch {
			case f.Embedded():
				add("type %s struct, embedded %s", name, typ(f.Type()))
			case f.Exported():
				add("type %s struct, %s %s", name, f.Name(), typ(f.Type()))
			}
		}
	case *types.Interface:
		add("type %s interface", full)
		for i := range u.NumEmbeddeds() {
			add("type %s interface, embedded %s", name, typ(u.EmbeddedType(i)))
		}
		for i := range u.NumExplicitMethods() {
			m := u.ExplicitMethod(i)
			if m.Exported() {
				add("type %s interface, %s%s", name, m.Name(), sig(m.Type().(*types.Signature)))
			} else {
				add("type %s interface, unexported methods", name)
			}
		}
		return lines // the methods are the interface's own
	default:
		add("type %s %s", full, typ(u))
	}
	// Methods, promoted ones included: they are part of the type's API.
	value := types.NewMethodSet(named)
	ptr := types.NewMethodSet(types.NewPointer(named))
	for i := range ptr.Len() {
		m := ptr.At(i).Obj()
		if !m.Exported() {
			continue
		}
		recv := "*" + name
		if value.Lookup(m.Pkg(), m.Name()) != nil {
			recv = name
		}
		add("method (%s) %s%s", recv, m.Name(), sig(m.Type().(*types.Signature)))
	}
	return lines
}

func typeParams(list *types.TypeParamList, qual types.Qualifier) string {
	if list.Len() == 0 {
		return ""
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range list.Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		tp := list.At(i)
		b.WriteString(tp.Obj().Name() + " " + types.TypeString(tp.Constraint(), qual))
	}
	b.WriteByte(']')
	return b.String()
}

// signature writes s without parameter names, as Go's api files do: a
// renamed parameter is no change to the API.
func signature(s *types.Signature, qual types.Qualifier) string {
	tuple := func(t *types.Tuple, variadic bool) string {
		var b bytes.Buffer
		for i := range t.Len() {
			if i > 0 {
				b.WriteString(", ")
			}
			v := t.At(i).Type()
			if variadic && i == t.Len()-1 {
				b.WriteString("..." + types.TypeString(v.(*types.Slice).Elem(), qual))
				continue
			}
			b.WriteString(types.TypeString(v, qual))
		}
		return b.String()
	}
	out := "(" + tuple(s.Params(), s.Variadic()) + ")"
	switch r := s.Results(); r.Len() {
	case 0:
	case 1:
		out += " " + tuple(r, false)
	default:
		out += " (" + tuple(r, false) + ")"
	}
	return out
}
