package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
)

// Limits on what ReadJSON, ReadNamed and ReadFile accept, so that a hostile
// or broken file is refused with a clear error before it can take much
// memory. A document rdmabench writes is far within all of them: about 1 kB
// per result (its histogram included), so the size limit holds some
// 200,000 results or more, and it decodes to less memory than its size.
const (
	// MaxDocumentBytes is the largest document read, in bytes (256 MiB).
	// A regular file over it is refused by its size, before it is read;
	// any other input is read up to the limit and refused beyond it.
	MaxDocumentBytes = 256 << 20
	// MaxDocumentMemory bounds the memory the decoded document may take
	// (256 MiB), as estimated before decoding from the JSON's shape and
	// the types it decodes into. A few bytes of JSON can decode into
	// hundreds ("{}" in "results" is a whole Result), so a document within
	// MaxDocumentBytes could otherwise take gigabytes.
	MaxDocumentMemory = 256 << 20
	// MaxDocumentDepth is the deepest nesting of arrays and objects
	// accepted; the schema itself needs 6 levels.
	MaxDocumentDepth = 32
	// MaxEventBytes is the longest line of an event stream read: a mesh
	// link's event holds its full results (sweeps and repeats hold many
	// histograms), as large as the mesh's control frames.
	MaxEventBytes = 64 << 20
	// MaxHistogramCounters bounds the size of a histogram
	// [Latency.DecodeHistogram] accepts: its geometry may need at most
	// this many counters (8 bytes each). rdmabench's own (1 ns to 60 s, 3
	// digits) needs about 28,000; the limit keeps a hostile or corrupt
	// header from allocating gigabytes.
	MaxHistogramCounters = 1 << 21
)

// readLimited reads all of r, up to limit bytes; more is an error saying
// so. size, when known (a regular file's), sizes the buffer at once.
func readLimited(r io.Reader, limit, size int64) ([]byte, error) {
	if size > limit {
		return nil, tooLarge(size, limit)
	}
	var buf bytes.Buffer
	if size > 0 {
		buf.Grow(int(size) + bytes.MinRead)
	}
	n, err := buf.ReadFrom(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, fmt.Errorf("more than %s: too large for a results document (the limit is %s)", byteCount(limit), byteCount(limit))
	}
	return buf.Bytes(), nil
}

func tooLarge(size, limit int64) error {
	return fmt.Errorf("%s: too large for a results document (the limit is %s)", byteCount(size), byteCount(limit))
}

// byteCount writes n bytes for a message: "268435456 bytes (256 MiB)".
func byteCount(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d bytes (%d GiB)", n, n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%d bytes (%.0f MiB)", n, float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}

// checkShape refuses a document (valid JSON, as checked before) nested
// deeper than MaxDocumentDepth or whose decoded form would take more than
// limit bytes of memory.
func checkShape(data []byte, limit int64) error {
	return checkShapeOf(data, reflect.TypeFor[Document](), limit)
}

// checkShapeOf is checkShape for JSON that decodes into t.
func checkShapeOf(data []byte, t reflect.Type, limit int64) error {
	s := sizer{data: data}
	if err := s.value(t, 0); err != nil {
		return err
	}
	if s.cost > limit {
		biggest, most := "", int64(0)
		for k, c := range s.top {
			if c > most || (c == most && k < biggest) {
				biggest, most = k, c
			}
		}
		where := ""
		if biggest != "" {
			where = fmt.Sprintf(", most of it for %q", biggest)
		}
		return fmt.Errorf("the document would take about %s of memory once decoded%s, more than the %s limit; it is not one rdmabench wrote",
			memCount(s.cost), where, memCount(limit))
	}
	return nil
}

func memCount(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%d MiB", (n+(1<<20)-1)>>20)
}

// sizer walks a JSON document along the Go type it decodes into and adds
// up what encoding/json would allocate: each slice element's and each
// pointed-to value's size, each map entry, each string's bytes. It is an
// estimate from above (a slice's spare capacity aside), and it allocates
// nothing but for object keys with escapes.
type sizer struct {
	data []byte
	pos  int
	cost int64
	top  map[string]int64 // cost per member of the top-level object

	customs map[reflect.Type]bool // types that implement json.Unmarshaler
}

var (
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	anyType         = reflect.TypeFor[any]()
	errBadJSON      = errors.New("malformed JSON")
)

// mapEntryOverhead is a map entry's cost besides its key and value.
const mapEntryOverhead = 16

// value scans one value at s.pos that decodes into t (nil: it is
// skipped) and adds what decoding it allocates beyond t's own storage,
// which the caller counts.
func (s *sizer) value(t reflect.Type, depth int) error {
	s.space()
	if s.pos >= len(s.data) {
		return errBadJSON
	}
	c := s.data[s.pos]
	if c == 'n' { // null allocates nothing, into any type
		return s.literal()
	}
	if t != nil && t != anyType && s.custom(t) {
		// A custom decoder (time.Time): at most about its text.
		start := s.pos
		if err := s.value(nil, depth); err != nil {
			return err
		}
		s.cost += int64(s.pos - start)
		return nil
	}
	for t != nil && t.Kind() == reflect.Pointer {
		s.cost += int64(t.Elem().Size())
		t = t.Elem()
	}
	switch c {
	case '{':
		return s.object(t, depth+1)
	case '[':
		return s.array(t, depth+1)
	case '"':
		start := s.pos
		if err := s.str(); err != nil {
			return err
		}
		if t != nil && (t.Kind() == reflect.String || t.Kind() == reflect.Slice || t == anyType) {
			s.cost += int64(s.pos - start)
		}
		return nil
	}
	if t == anyType {
		s.cost += 8
	}
	return s.literal()
}

// custom tells whether t decodes itself (implements json.Unmarshaler).
func (s *sizer) custom(t reflect.Type) bool {
	c, ok := s.customs[t]
	if !ok {
		c = reflect.PointerTo(t).Implements(unmarshalerType)
		if s.customs == nil {
			s.customs = map[reflect.Type]bool{}
		}
		s.customs[t] = c
	}
	return c
}

func (s *sizer) deep(depth int) error {
	if depth > MaxDocumentDepth {
		return fmt.Errorf("nested more than %d levels deep (at byte %d); a results document has at most 6", MaxDocumentDepth, s.pos)
	}
	return nil
}

func (s *sizer) object(t reflect.Type, depth int) error {
	if err := s.deep(depth); err != nil {
		return err
	}
	s.pos++ // {
	var fields []field
	var entry int64 // a map entry's cost
	var elem reflect.Type
	switch {
	case t == nil:
	case t == anyType:
		entry, elem = int64(anyType.Size())+mapEntryOverhead+16, anyType
	case t.Kind() == reflect.Struct:
		fields = fieldsOf(t)
	case t.Kind() == reflect.Map:
		entry, elem = int64(t.Key().Size()+t.Elem().Size())+mapEntryOverhead, t.Elem()
	}
	for first := true; ; first = false {
		s.space()
		if s.pos >= len(s.data) {
			return errBadJSON
		}
		if s.data[s.pos] == '}' {
			s.pos++
			return nil
		}
		if !first {
			if s.data[s.pos] != ',' {
				return errBadJSON
			}
			s.pos++
			s.space()
		}
		start := s.pos
		if err := s.str(); err != nil {
			return err
		}
		key := s.data[start+1 : s.pos-1]
		s.space()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return errBadJSON
		}
		s.pos++
		var ft reflect.Type
		switch {
		case fields != nil:
			ft = lookup(fields, key)
		case elem != nil:
			ft = elem
			s.cost += entry + int64(len(key))
		}
		before := s.cost
		if err := s.value(ft, depth); err != nil {
			return err
		}
		if depth == 1 && ft != nil {
			k := unescapeKey(key)
			if _, ok := s.top[string(k)]; !ok {
				if s.top == nil {
					s.top = map[string]int64{}
				}
				s.top[string(k)] = 0
			}
			s.top[string(k)] += s.cost - before
		}
	}
}

func (s *sizer) array(t reflect.Type, depth int) error {
	if err := s.deep(depth); err != nil {
		return err
	}
	s.pos++ // [
	var elem reflect.Type
	var each int64
	switch {
	case t == anyType:
		elem, each = anyType, int64(anyType.Size())
	case t != nil && t.Kind() == reflect.Slice:
		elem, each = t.Elem(), int64(t.Elem().Size())
	case t != nil && t.Kind() == reflect.Array: // storage already counted
		elem = t.Elem()
	}
	for first := true; ; first = false {
		s.space()
		if s.pos >= len(s.data) {
			return errBadJSON
		}
		if s.data[s.pos] == ']' {
			s.pos++
			return nil
		}
		if !first {
			if s.data[s.pos] != ',' {
				return errBadJSON
			}
			s.pos++
		}
		s.cost += each // even an element that fails to decode is appended
		if err := s.value(elem, depth); err != nil {
			return err
		}
	}
}

// str moves past a string.
func (s *sizer) str() error {
	if s.pos >= len(s.data) || s.data[s.pos] != '"' {
		return errBadJSON
	}
	i := s.pos + 1
	for {
		j := bytes.IndexByte(s.data[i:], '"')
		if j < 0 {
			return errBadJSON
		}
		k := i + j
		bs := 0
		for bs < k-s.pos-1 && s.data[k-1-bs] == '\\' {
			bs++
		}
		if bs%2 == 0 {
			s.pos = k + 1
			return nil
		}
		i = k + 1
	}
}

// literal moves past a number, true, false or null.
func (s *sizer) literal() error {
	start := s.pos
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ',', ']', '}', ' ', '\t', '\r', '\n':
			if s.pos == start {
				return errBadJSON
			}
			return nil
		}
		s.pos++
	}
	if s.pos == start {
		return errBadJSON
	}
	return nil
}

func (s *sizer) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\r', '\n':
			s.pos++
		default:
			return
		}
	}
}

// field is a struct field as encoding/json names it.
type field struct {
	name []byte
	typ  reflect.Type
}

var fieldCache sync.Map // reflect.Type -> []field

// fieldsOf lists the fields encoding/json decodes into, by JSON name; an
// embedded struct's (the groups of pkg/settings) are its own.
func fieldsOf(t reflect.Type) []field {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]field)
	}
	fs := []field{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct && sf.Tag.Get("json") == "" {
			fs = append(fs, fieldsOf(sf.Type)...)
			continue
		}
		if !sf.IsExported() {
			continue
		}
		name := sf.Name
		if tag, ok := sf.Tag.Lookup("json"); ok {
			n, _, _ := strings.Cut(tag, ",")
			if n == "-" {
				continue
			}
			if n != "" {
				name = n
			}
		}
		fs = append(fs, field{[]byte(name), sf.Type})
	}
	fieldCache.Store(t, fs)
	return fs
}

// lookup finds the field key decodes into: an exact match, else one equal
// under case folding, as encoding/json matches them.
func lookup(fs []field, key []byte) reflect.Type {
	key = unescapeKey(key)
	for _, f := range fs {
		if bytes.Equal(f.name, key) {
			return f.typ
		}
	}
	for _, f := range fs {
		if bytes.EqualFold(f.name, key) {
			return f.typ
		}
	}
	return nil
}

// unescapeKey decodes an object key's escapes ("\u0072esults" is
// "results").
func unescapeKey(key []byte) []byte {
	if bytes.IndexByte(key, '\\') < 0 {
		return key
	}
	var k string
	if json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &k) != nil {
		return key
	}
	return []byte(k)
}
