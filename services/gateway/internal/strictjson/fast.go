package strictjson

import (
	"reflect"
	"sync"
)

// wellFormed is the fast path of Decode: one pass over the bytes that
// checks what the walker checks (one object and nothing after it but
// whitespace, no duplicate names at any level, only the struct's names at
// struct levels, nesting within MaxDepth, numbers PostgreSQL can store),
// for the bodies clients actually send. It allocates nothing for them.
//
// It answers true only when it is sure the walker would find nothing
// wrong; anything it is not sure of (a syntax error, an escape in a name,
// an unknown name, a duplicate, a number to judge, a struct of more than
// 64 fields) makes it answer false, and Decode then runs the walker, which
// says what is wrong in the same words as before. Its answer changes
// nothing but the time taken: FuzzFastPathAgrees checks that.
//
// Valid UTF-8 and the absence of unstorable escapes are checked before, as
// for the walker.
func wellFormed(body []byte, t reflect.Type) bool {
	s := scanner{b: body}
	s.space()
	if !s.object(t, 1) {
		return false
	}
	s.space()
	return s.i == len(s.b)
}

// scanner reads a body the fast path checks.
type scanner struct {
	b []byte
	i int
}

// maxLinearNames is how many names of a free-form object are compared one
// by one for duplicates before a map takes over.
const maxLinearNames = 16

// plainNumberLength bounds number literals without an exponent that need
// no further check: fewer digits than numeric's limits, whatever they are.
const plainNumberLength = 1000

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next consumes c, after whitespace.
func (s *scanner) next(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// object reads an object of type t (free-form when t has no fields) at
// depth, the body's own object being 1, as the walker counts.
func (s *scanner) object(t reflect.Type, depth int) bool {
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false
	}
	s.i++
	fs := fieldsOf(t)
	if fs != nil && fs.tooMany {
		return false
	}
	if s.next('}') {
		return true
	}
	var (
		seenFields uint64   // struct levels: a bit per field
		seenNames  [][]byte // free-form levels, the first maxLinearNames
		seenMap    map[string]struct{}
	)
	for {
		s.space()
		name, ok := s.name()
		if !ok {
			return false
		}
		var child reflect.Type
		if fs != nil {
			idx, known := fs.index[string(name)]
			if !known || seenFields&(1<<idx) != 0 {
				return false
			}
			seenFields |= 1 << idx
			child = fs.types[idx]
		} else if !unique(name, &seenNames, &seenMap) {
			return false
		}
		if !s.next(':') {
			return false
		}
		s.space()
		if !s.value(child, depth) {
			return false
		}
		if s.next(',') {
			continue
		}
		return s.next('}')
	}
}

// unique records a name of a free-form object, reporting false for one
// already seen.
func unique(name []byte, seen *[][]byte, seenMap *map[string]struct{}) bool {
	if *seenMap != nil {
		if _, dup := (*seenMap)[string(name)]; dup {
			return false
		}
		(*seenMap)[string(name)] = struct{}{}
		return true
	}
	for _, n := range *seen {
		if string(n) == string(name) {
			return false
		}
	}
	if len(*seen) < maxLinearNames {
		*seen = append(*seen, name)
		return true
	}
	m := make(map[string]struct{}, 2*maxLinearNames)
	for _, n := range *seen {
		m[string(n)] = struct{}{}
	}
	m[string(name)] = struct{}{}
	*seenMap = m
	return true
}

// name reads a member name without escapes, returning its bytes (its
// value, then).
func (s *scanner) name() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			return s.b[start:j], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// value reads one value of type t inside a container at depth.
func (s *scanner) value(t reflect.Type, depth int) bool {
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '{':
		return depth < MaxDepth && s.object(t, depth+1)
	case '[':
		return depth < MaxDepth && s.array(elem(t), depth+1)
	case '"':
		return s.str()
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	default:
		return s.number()
	}
}

func (s *scanner) array(t reflect.Type, depth int) bool {
	s.i++ // the '['
	if s.next(']') {
		return true
	}
	for {
		s.space()
		if !s.value(t, depth) {
			return false
		}
		if s.next(',') {
			continue
		}
		return s.next(']')
	}
}

func (s *scanner) literal(word string) bool {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		return false
	}
	s.i += len(word)
	return true
}

// str reads a string value: escapes are checked for form only (which ones
// PostgreSQL cannot store was decided before).
func (s *scanner) str() bool {
	for j := s.i + 1; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if j+1 >= len(s.b) {
				return false
			}
			switch s.b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
			case 'u':
				if _, ok := hex4(s.b, j+2); !ok {
					return false
				}
				j += 5
			default:
				return false
			}
		}
	}
	return false
}

// number reads a number literal of JSON's grammar, and gives up on one
// whose size must be judged against numeric's limits (numberProblem).
func (s *scanner) number() bool {
	start, j := s.i, s.i
	if j < len(s.b) && s.b[j] == '-' {
		j++
	}
	switch {
	case j < len(s.b) && s.b[j] == '0':
		j++
	case j < len(s.b) && s.b[j] >= '1' && s.b[j] <= '9':
		j = digits(s.b, j)
	default:
		return false
	}
	if j < len(s.b) && s.b[j] == '.' {
		k := digits(s.b, j+1)
		if k == j+1 {
			return false
		}
		j = k
	}
	exponent := j < len(s.b) && (s.b[j] == 'e' || s.b[j] == 'E')
	if exponent {
		j++
		if j < len(s.b) && (s.b[j] == '+' || s.b[j] == '-') {
			j++
		}
		k := digits(s.b, j)
		if k == j {
			return false
		}
		j = k
	}
	if exponent || j-start > plainNumberLength {
		if numberProblem(string(s.b[start:j])) != "" {
			return false
		}
	}
	s.i = j
	return true
}

func digits(b []byte, j int) int {
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	return j
}

// fieldSet is jsonFields(t) indexed for the fast path.
type fieldSet struct {
	index   map[string]int
	types   []reflect.Type
	tooMany bool // more than 64 names: the fast path gives up
}

var fieldSets sync.Map // reflect.Type -> *fieldSet (nil: free-form)

// fieldsOf returns the names of struct type t (through pointers), or nil
// when objects of t are free-form, as jsonFields decides.
func fieldsOf(t reflect.Type) *fieldSet {
	if t == nil {
		return nil
	}
	if fs, ok := fieldSets.Load(t); ok {
		return fs.(*fieldSet)
	}
	var fs *fieldSet
	if fields := jsonFields(t); fields != nil {
		fs = &fieldSet{index: make(map[string]int, len(fields)), tooMany: len(fields) > 64}
		for name, ft := range fields {
			fs.index[name] = len(fs.types)
			fs.types = append(fs.types, ft)
		}
	}
	fieldSets.Store(t, fs)
	return fs
}
