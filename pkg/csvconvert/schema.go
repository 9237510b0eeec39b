package csvconvert

import (
	"reflect"
	"sort"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// kind is what a field of the account holds, as far as a CSV cell is
// concerned: it decides how a cell is parsed and written.
type kind int

const (
	kindObject kind = iota
	kindArray
	kindString
	kindDate
	kindDateTime
	kindDecimal
	kindInteger
	kindBool
)

func (k kind) String() string {
	return [...]string{"object", "array", "string", "date", "datetime", "decimal", "integer", "boolean"}[k]
}

// article: "an array", "a date" (kind's %s in messages).
func (k kind) article() string {
	if k == kindObject || k == kindArray || k == kindInteger {
		return "an " + k.String()
	}
	return "a " + k.String()
}

func (k kind) scalar() bool { return k >= kindString }

// node is one field of the account object's shape.
type node struct {
	kind   kind
	fields map[string]*node // kindObject
	elem   *node            // kindArray
}

// accountSchema is derived from dataimport.Account by reflection, so a field
// another engineer adds to the account is mappable without touching the
// converter, and a misspelt path in a mapping is refused when it is loaded
// rather than by the API much later.
var accountSchema = schemaOf(reflect.TypeFor[dataimport.Account]())

var (
	dateType     = reflect.TypeFor[dataimport.Date]()
	dateTimeType = reflect.TypeFor[dataimport.DateTime]()
	moneyType    = reflect.TypeFor[dataimport.Money]()
	decimalType  = reflect.TypeFor[decimal.Decimal]()
)

func schemaOf(t reflect.Type) *node {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case dateType:
		return &node{kind: kindDate}
	case dateTimeType:
		return &node{kind: kindDateTime}
	case moneyType, decimalType:
		return &node{kind: kindDecimal}
	}
	switch t.Kind() {
	case reflect.Struct:
		n := &node{kind: kindObject, fields: map[string]*node{}}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" || name == "" {
				continue
			}
			if c := schemaOf(f.Type); c != nil {
				n.fields[name] = c
			}
		}
		return n
	case reflect.Slice:
		if e := schemaOf(t.Elem()); e != nil {
			return &node{kind: kindArray, elem: e}
		}
	case reflect.String:
		return &node{kind: kindString}
	case reflect.Bool:
		return &node{kind: kindBool}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &node{kind: kindInteger}
	case reflect.Float32, reflect.Float64:
		return &node{kind: kindDecimal}
	}
	return nil // not representable from a CSV cell (maps, interfaces)
}

// fieldNames lists an object's fields for "unknown field" messages.
func (n *node) fieldNames() string {
	names := make([]string, 0, len(n.fields))
	for k := range n.fields {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
