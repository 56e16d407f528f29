// Package openapi holds the gateway's API contract, openapi.yaml, the source
// of truth from which internal/api/gen is generated (make generate-openapi),
// and serves it as JSON.
//
// The document names no generator's bindings: the gateway's own Go types
// are bound in go-bindings.overlay.yaml, which only its generator applies,
// so that any client generator can read what is served.
//
// The document names Sundial's own response headers with the default prefix
// (Sundial-HookQuota-Limit...). A deployment that renames them with
// SUNDIAL_HEADER_PREFIX serves a document that uses its own names, so that
// what a client reads matches what it gets.
package openapi

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// YAML is the document as written.
//
//go:embed openapi.yaml
var YAML []byte

// DefaultHeaderPrefix is the prefix of Sundial's own header names in YAML.
const DefaultHeaderPrefix = "Sundial"

// JSON returns the document as JSON, with the members of every object in
// the order the YAML gives them, and Sundial's own header names (those that
// start with "Sundial-") given headerPrefix instead. It is made once per
// process and prefix (every gateway started in one process shares it):
// callers must not modify it.
func JSON(headerPrefix string) ([]byte, error) {
	documentsMu.Lock()
	defer documentsMu.Unlock()
	if doc, ok := documents[headerPrefix]; ok {
		return doc, nil
	}
	doc, err := convert(headerPrefix)
	if err != nil {
		return nil, err
	}
	documents[headerPrefix] = doc
	return doc, nil
}

var (
	documentsMu sync.Mutex
	documents   = map[string][]byte{}
)

// convert writes the document as JSON with headerPrefix. The YAML tree is
// not kept: JSON caches what it makes, and the tree is several times the
// document's size.
func convert(headerPrefix string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(YAML, &doc); err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	c := converter{rename: func(key string) string {
		if rest, ok := strings.CutPrefix(key, DefaultHeaderPrefix+"-"); ok && headerPrefix != DefaultHeaderPrefix {
			return headerPrefix + "-" + rest
		}
		return key
	}}
	var buf bytes.Buffer
	if err := c.write(&buf, &doc); err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	return buf.Bytes(), nil
}

// converter writes YAML nodes as JSON. encoding/json would sort the members
// of a decoded map; walking the nodes keeps the document's own order, which
// is the order people read it in.
type converter struct {
	// rename maps a member name to the one written.
	rename func(string) string
}

func (c converter) write(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return fmt.Errorf("line %d: want one document", n.Line)
		}
		return c.write(buf, n.Content[0])
	case yaml.AliasNode:
		return c.write(buf, n.Alias)
	case yaml.MappingNode:
		return c.mapping(buf, n)
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, item := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := c.write(buf, item); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	case yaml.ScalarNode:
		return scalar(buf, n)
	}
	return fmt.Errorf("line %d: unexpected YAML node kind %d", n.Line, n.Kind)
}

func (c converter) mapping(buf *bytes.Buffer, n *yaml.Node) error {
	buf.WriteByte('{')
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := n.Content[i], n.Content[i+1]
		if key.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: a member name must be a scalar", key.Line)
		}
		if key.Value == "<<" {
			return fmt.Errorf("line %d: YAML merge keys are not supported", key.Line)
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		name, err := json.Marshal(c.rename(key.Value))
		if err != nil {
			return err
		}
		buf.Write(name)
		buf.WriteByte(':')
		if err := c.write(buf, value); err != nil {
			return err
		}
	}
	buf.WriteByte('}')
	return nil
}

// scalar writes a scalar by its resolved YAML tag: numbers are re-encoded
// so that YAML spellings JSON lacks (0x1F, +1, .5) cannot leak through.
func scalar(buf *bytes.Buffer, n *yaml.Node) error {
	var v any
	switch n.ShortTag() {
	case "!!null":
		v = nil
	case "!!bool":
		b, err := strconv.ParseBool(n.Value)
		if err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		v = b
	case "!!int", "!!float":
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
	default:
		v = n.Value
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	buf.Write(b)
	return nil
}
