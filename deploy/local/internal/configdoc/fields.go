package configdoc

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strconv"
	"strings"
)

// Field is a variable a Config reads, as its source declares it.
type Field struct {
	// Var is the env tag's variable.
	Var string
	// Summary is the doc comment's first paragraph, on one line: the
	// meaning File's tables give. Further paragraphs are notes for
	// the code's readers.
	Summary string
}

// Fields are the env-tagged fields of the Config struct in the Go file src,
// in order: the fields of a struct of the same file that a field of Config
// holds (untagged) in its place, then the tagged fields of the file's other
// structs (the wrappers a loader reads a variable through, e.g. fromEnv),
// each variable once.
func Fields(filename string, src []byte) ([]Field, error) {
	file, err := parser.ParseFile(token.NewFileSet(), filename, src, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", filename, err)
	}
	c := collector{structs: structTypes(file), visited: map[string]bool{}, seen: map[string]bool{}}
	if c.structs["Config"] == nil {
		return nil, fmt.Errorf("%s: no Config struct", filename)
	}
	if err := c.walk("Config"); err != nil {
		return nil, fmt.Errorf("%s: %w", filename, err)
	}
	for _, decl := range file.Decls {
		for _, name := range typeNames(decl) {
			if err := c.walk(name); err != nil {
				return nil, fmt.Errorf("%s: %w", filename, err)
			}
		}
	}
	return c.fields, nil
}

// collector gathers the fields of a file's structs, visiting each struct
// once.
type collector struct {
	structs map[string]*ast.StructType
	visited map[string]bool
	seen    map[string]bool // variables already gathered
	fields  []Field
}

func (c *collector) walk(name string) error {
	st := c.structs[name]
	if st == nil || c.visited[name] {
		return nil
	}
	c.visited[name] = true
	for _, f := range st.Fields.List {
		v, err := envTag(f)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if v == "" {
			if err := c.walk(identName(f.Type)); err != nil {
				return err
			}
			continue
		}
		if err := c.add(name, v, f); err != nil {
			return err
		}
	}
	return nil
}

func (c *collector) add(structName, v string, f *ast.Field) error {
	if c.seen[v] {
		return nil
	}
	c.seen[v] = true
	summary := firstParagraph(f.Doc.Text())
	if summary == "" {
		return fmt.Errorf("%s: the field of %s has no doc comment (its meaning in %s)", structName, v, File)
	}
	c.fields = append(c.fields, Field{Var: v, Summary: summary})
	return nil
}

// firstParagraph is a doc comment's first paragraph, on one line.
func firstParagraph(text string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(text), "\n\n")
	return strings.Join(strings.Fields(first), " ")
}

func envTag(f *ast.Field) (string, error) {
	if f.Tag == nil {
		return "", nil
	}
	tag, err := strconv.Unquote(f.Tag.Value)
	if err != nil {
		return "", fmt.Errorf("tag %s: %w", f.Tag.Value, err)
	}
	return reflect.StructTag(tag).Get("env"), nil
}

func identName(e ast.Expr) string {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

func structTypes(file *ast.File) map[string]*ast.StructType {
	out := map[string]*ast.StructType{}
	for _, decl := range file.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, spec := range gd.Specs {
			if ts, ok := spec.(*ast.TypeSpec); ok {
				if st, ok := ts.Type.(*ast.StructType); ok {
					out[ts.Name.Name] = st
				}
			}
		}
	}
	return out
}

func typeNames(decl ast.Decl) []string {
	gd, ok := decl.(*ast.GenDecl)
	if !ok || gd.Tok != token.TYPE {
		return nil
	}
	var names []string
	for _, spec := range gd.Specs {
		names = append(names, spec.(*ast.TypeSpec).Name.Name)
	}
	return names
}
