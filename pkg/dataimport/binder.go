package dataimport

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"
)

// binder fills a destination value straight from the JSON bytes, collecting
// errors instead of stopping. The current dot path is kept as a stack of
// segments and joined only when an error is reported, so a valid body costs
// no string building.
type binder struct {
	r    jsonReader
	c    *collector
	path []pathSeg
	err  error // a string the reader could not decode (cannot happen after checkJSON)
}

// pathSeg is a key (name) or, with index >= 0, an array position.
type pathSeg struct {
	name  string
	index int
}

// CodeMaxItems reports an array longer than its declared maximum.
const CodeMaxItems = "max_items"

func (d *binder) add(code, detail string) {
	if d.c.full() { // skip building the path of an error nobody sees
		return
	}
	d.c.add(d.attr(), code, detail)
}

func (d *binder) attr() string {
	if len(d.path) == 0 {
		return CodeNonFieldErrors
	}
	var b strings.Builder
	for i, s := range d.path {
		if i > 0 {
			b.WriteByte('.')
		}
		if s.index >= 0 {
			b.WriteString(strconv.Itoa(s.index))
		} else {
			b.WriteString(s.name)
		}
	}
	return b.String()
}

func (d *binder) push(name string) { d.path = append(d.path, pathSeg{name: name, index: -1}) }
func (d *binder) pushIndex(i int)  { d.path = append(d.path, pathSeg{index: i}) }
func (d *binder) pop()             { d.path = d.path[:len(d.path)-1] }

// addAtKey reports on key of the current object. An empty key has no name
// to put in a dot path, so it is reported on its object (non_field_errors
// at the top), keeping every attr non-empty.
func (d *binder) addAtKey(key, code, detail string) {
	if key == "" {
		d.add(code, detail)
		return
	}
	d.push(key)
	d.add(code, detail)
	d.pop()
}

// done reports that binding should only skim from here on: the error list
// is full (nothing more can be reported, and the value will be refused) or
// the reader failed.
func (d *binder) done() bool { return d.c.full() || d.err != nil }

// bindStruct binds the object the reader is on into v.
func (d *binder) bindStruct(v reflect.Value) {
	info := structInfoFor(v.Type())
	var seen uint64 // bit i: fields[i] was given (checkType allows 64 fields)
	var dups []string
	var unknown map[string]bool // unknown keys reported, to spot their repeats
	var opt reflect.Value       // the object's optional values (info.optional), made at the first
	want := 0                   // the field after the last one bound
	for {
		// Past the error cap (counting the duplicates still to report)
		// keys are only skimmed: not even unescaped.
		skim := d.done() || len(dups) >= MaxReportedErrors
		key, more, err := d.r.nextKey(!skim)
		if err != nil {
			d.err = err
			return
		}
		if !more {
			break
		}
		if skim {
			d.r.skip()
			continue
		}
		fi, ok := info.lookup(key, want)
		if !ok {
			k := string(key)
			if unknown[k] {
				dups = append(dups, k)
			} else {
				d.addAtKey(k, CodeUnknownField, "Unknown field.")
				if unknown == nil {
					unknown = make(map[string]bool)
				}
				unknown[k] = true
			}
			d.r.skip()
			continue
		}
		f := info.fields[fi]
		if seen&(1<<fi) != 0 { // the first value is kept
			dups = append(dups, f.name)
			d.r.skip()
			continue
		}
		seen |= 1 << fi
		want = fi + 1
		d.push(f.name)
		if f.slot >= 0 {
			d.bindOptional(v.Field(f.index), &f, info, &opt)
		} else {
			d.bind(v.Field(f.index), f.maxItems)
		}
		d.pop()
	}
	for _, key := range dups {
		d.addAtKey(key, CodeInvalid, "Duplicate key.")
	}
	for fi, f := range info.fields {
		if f.required && seen&(1<<fi) == 0 {
			d.addAtKey(f.name, CodeRequired, "This field is required.")
		}
	}
}

// lookup finds the field named key. Bodies usually list keys in the
// order of the fields (loadgen, the SDKs and encoding/json all write them
// so), so the field after the last one bound is tried before the map.
func (info *structInfo) lookup(key []byte, want int) (int, bool) {
	if info.inOrder && want < len(info.fields) && info.fields[want].name == string(key) {
		return want, true
	}
	fi, ok := info.byName[string(key)] // no allocation for the lookup
	return fi, ok
}

// bindOptional binds the value of pointer field f of an object into the
// object's optional values (made at the first one given: one allocation
// per object, not one per value) and points the field at it.
func (d *binder) bindOptional(v reflect.Value, f *fieldInfo, info *structInfo, opt *reflect.Value) bool {
	if d.done() {
		d.r.skip()
		return false
	}
	if d.r.peek() == 'n' { // null on an optional field means "not given"
		d.r.literal()
		v.SetZero()
		return true
	}
	if !opt.IsValid() {
		*opt = reflect.New(info.optional).Elem()
	}
	return d.bindInto(v, opt.Field(f.slot), f.maxItems)
}

// bindInto binds the next value (not null) into elem and points v at it.
func (d *binder) bindInto(v, elem reflect.Value, maxItems int) bool {
	next := d.r.peek()
	ok := d.bind(elem, maxItems)
	// A scalar that failed stays nil so later checks treat it as absent
	// and do not pile a second error onto the same attr. Structs are
	// kept: their valid parts still deserve validation.
	if ok || (next == '{' && elem.Kind() == reflect.Struct && !isLeafType(elem.Type())) {
		v.Set(elem.Addr())
	}
	return ok
}

// bind binds the next value into v and reports whether it bound without
// error. maxItems is the maximum of a slice field.
func (d *binder) bind(v reflect.Value, maxItems int) bool {
	if d.done() {
		d.r.skip()
		return false
	}
	t := v.Type()
	next := d.r.peek()
	if t.Kind() == reflect.Pointer {
		if next == 'n' { // null on an optional field means "not given"
			d.r.literal()
			v.SetZero()
			return true
		}
		return d.bindInto(v, reflect.New(t.Elem()).Elem(), maxItems)
	}
	if next == 'n' {
		d.r.literal()
		d.add(CodeNull, "This field may not be null.")
		return false
	}
	switch t {
	case dateType:
		return d.bindDate(v, false)
	case dateTimeType:
		return d.bindDate(v, true)
	case decimalType, moneyType:
		return d.bindDecimal(v, t == moneyType)
	}
	switch t.Kind() {
	case reflect.String:
		if next != '"' {
			return d.refuse(CodeInvalid, "Not a valid string.")
		}
		s, err := d.r.str()
		if err != nil {
			d.err = err
			return false
		}
		// Postgres text and jsonb cannot hold NUL; refusing it here keeps
		// a hostile string from surfacing later as a 500.
		if strings.ContainsRune(s, 0) {
			d.add(CodeNullCharactersNotAllowed, "Null characters are not allowed.")
			return false
		}
		v.SetString(strings.TrimSpace(s))
	case reflect.Bool:
		if next != 't' && next != 'f' {
			return d.refuse(CodeInvalid, "Must be a valid boolean.")
		}
		v.SetBool(d.r.literal()[0] == 't')
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if next == '"' || next == '{' || next == '[' || next == 't' || next == 'f' {
			return d.refuse(CodeInvalid, "A valid integer is required.")
		}
		i, err := strconv.ParseInt(string(d.r.literal()), 10, t.Bits())
		if err != nil {
			d.add(CodeInvalid, "A valid integer is required.")
			return false
		}
		v.SetInt(i)
	case reflect.Slice:
		if next != '[' {
			return d.refuse(CodeInvalid, fmt.Sprintf("Expected a list of items but got %s.", d.r.kind()))
		}
		return d.bindSlice(v, maxItems)
	case reflect.Struct:
		if next != '{' {
			return d.refuse(CodeInvalid, fmt.Sprintf("Invalid data. Expected an object, but got %s.", d.r.kind()))
		}
		before := len(d.c.errs)
		d.bindStruct(v)
		return len(d.c.errs) == before
	default:
		// checkType refuses such types before binding starts.
		panic(fmt.Sprintf("dataimport: unsupported type %s", t))
	}
	return true
}

// refuse reports the next value as the wrong type and skips it.
func (d *binder) refuse(code, detail string) bool {
	d.add(code, detail)
	d.r.skip()
	return false
}

// bindSlice binds the array the reader is on, item by item. Items beyond
// maxItems are reported once, on the array, and skipped unread: a hostile
// array costs a scan of its bytes, nothing more.
func (d *binder) bindSlice(v reflect.Value, maxItems int) bool {
	// Counted first, so the slice is sized once (an empty array stays an
	// empty list, not null) and a list too long is reported before its
	// items' errors can fill the list.
	n := d.r.countElems(maxItems + 1)
	ok := n <= maxItems
	if !ok {
		d.add(CodeMaxItems, fmt.Sprintf("Ensure this list has no more than %d items.", maxItems))
		n = maxItems
	}
	if n == 0 {
		v.Set(reflect.MakeSlice(v.Type(), 0, 0)) // [] stays an empty list, not null
	} else {
		// Grown in place: the array is the one allocation (MakeSlice
		// also boxes a slice header for the Value it returns).
		v.SetZero()
		v.Grow(n)
	}
	for n := 0; d.r.nextElem(); n++ {
		if n >= maxItems || d.done() {
			d.r.skip()
			continue
		}
		v.SetLen(n + 1)
		d.pushIndex(n)
		ok = d.bind(v.Index(n), 0) && ok
		d.pop()
	}
	return ok
}

func (d *binder) bindDate(v reflect.Value, withTime bool) bool {
	detail := "Date has wrong format. Use one of these formats instead: YYYY-MM-DD."
	code := CodeInvalidDate
	if withTime {
		detail = "Datetime has wrong format. Use one of these formats instead: YYYY-MM-DDThh:mm:ssZ."
		code = CodeInvalidDatetime
	}
	if d.r.peek() != '"' {
		return d.refuse(code, detail)
	}
	b, err := d.r.strBytes()
	if err != nil {
		d.err = err
		return false
	}
	b = bytes.TrimSpace(b)
	// Values are set through their address: boxing them in an interface
	// for reflect.Value.Set would allocate for every date.
	if withTime {
		p, err := ParseDateTime(string(b))
		if err != nil {
			d.add(code, detail)
			return false
		}
		*v.Addr().Interface().(*DateTime) = p
		return true
	}
	p, err := parseDate(b)
	if err != nil {
		d.add(code, detail)
		return false
	}
	*v.Addr().Interface().(*Date) = p
	return true
}

func (d *binder) bindDecimal(v reflect.Value, money bool) bool {
	var text string
	switch d.r.peek() {
	case '"':
		b, err := d.r.strBytes()
		if err != nil {
			d.err = err
			return false
		}
		text = strings.TrimSpace(string(b))
	case '{', '[', 't', 'f':
		return d.refuse(CodeInvalidDecimal, "A valid number is required.")
	default:
		text = string(d.r.literal())
	}
	dec, code, detail := parseDecimal(text)
	if code != "" {
		d.add(code, detail)
		return false
	}
	if money {
		*v.Addr().Interface().(*Money) = Money{dec}
	} else {
		*v.Addr().Interface().(*decimal.Decimal) = dec
	}
	return true
}
