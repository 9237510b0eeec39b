package dataimport

import (
	"strings"
	"testing"

	"github.com/shopspring/decimal"
)

type decInner struct {
	Name  string   `json:"name" dataimport:"required"`
	Count *int     `json:"count"`
	Tags  []string `json:"tags" dataimport:"max=3"`
}

type decTarget struct {
	S    string            `json:"s"`
	SP   *string           `json:"sp"`
	B    bool              `json:"b"`
	BP   *bool             `json:"bp"`
	I    int               `json:"i"`
	D    decimal.Decimal   `json:"d"`
	DP   *decimal.Decimal  `json:"dp"`
	M    Money             `json:"m"`
	Day  Date              `json:"day"`
	DayP *Date             `json:"day_p"`
	At   DateTime          `json:"at"`
	In   decInner          `json:"in"`
	InP  *decInner         `json:"in_p"`
	List []decInner        `json:"list" dataimport:"max=2"`
	Decs []decimal.Decimal `json:"decs" dataimport:"max=10"`
	Skip string            `json:"-"`
	//lint:ignore U1000 present to prove the binder skips unexported fields
	inner string
}

func TestDecodeStrictValues(t *testing.T) {
	var v decTarget
	body := `{"s":"  padded\t","sp":" x ","b":true,"bp":false,"i":-7,"d":0.1,"dp":" 12345678901234567.25 ",
		"m":"1.100","day":" 2024-02-29 ","day_p":null,"at":"2024-01-01T23:30:00-01:00",
		"in":{"name":"a","count":3,"tags":[" t1 ","t2"]},"in_p":{"name":"b"},"list":[{"name":"c"}],"decs":[0.2,"0.3"]}`
	errs, err := DecodeStrict([]byte(body), &v)
	if err != nil || len(errs) != 0 {
		t.Fatalf("err=%v errs=%s", err, dump(errs))
	}
	if v.S != "padded" || *v.SP != "x" || !v.B || *v.BP || v.I != -7 {
		t.Errorf("scalars: %+v", v)
	}
	// Exact decimals: 0.1 + 0.2 == 0.3, never float noise.
	if sum := v.D.Add(v.Decs[0]); !sum.Equal(v.Decs[1]) || sum.String() != "0.3" {
		t.Errorf("0.1+0.2 = %s", sum)
	}
	if v.DP.String() != "12345678901234567.25" || v.M.String() != "1.10" {
		t.Errorf("decimals %s %s", v.DP, v.M)
	}
	if v.Day.String() != "2024-02-29" || v.DayP != nil || v.At.String() != "2024-01-02T00:30:00Z" {
		t.Errorf("dates %s %v %s", v.Day, v.DayP, v.At)
	}
	if v.In.Name != "a" || *v.In.Count != 3 || v.In.Tags[0] != "t1" || v.InP.Name != "b" || v.List[0].Name != "c" {
		t.Errorf("nested %+v", v)
	}
}

func TestDecodeStrictErrors(t *testing.T) {
	cases := []struct {
		name string
		body string
		want []string
	}{
		{"unknown top-level", `{"zzz":1}`, []string{"unknown_field@zzz"}}, // absent "in": nothing inside is checked
		{"unknown nested", `{"in":{"name":"a","nick":1},"list":[{"name":"b"},{"name":"c","x":{}}]}`,
			[]string{"unknown_field@in.nick", "unknown_field@list.1.x"}},
		{"keys are case-sensitive", `{"S":"x","in":{"name":"a"}}`, []string{"unknown_field@S"}},
		{"wrong types", `{"s":1,"b":"true","i":1.5,"d":true,"m":[],"day":20240101,"at":"2024-01-01","in":[],"list":{},"decs":["x"]}`,
			[]string{"invalid@s", "invalid@b", "invalid@i", "invalid_decimal@d", "invalid_decimal@m", "invalid_date@day",
				"invalid_datetime@at", "invalid@in", "invalid@list", "invalid_decimal@decs.0"}},
		{"nulls", `{"s":null,"b":null,"d":null,"day":null,"in":null,"list":null,"sp":null,"bp":null,"dp":null,"in_p":null,"day_p":null}`,
			[]string{"null@s", "null@b", "null@d", "null@day", "null@in", "null@list"}},
		{"null in list", `{"in":{"name":"a"},"list":[null,{"name":null}]}`, []string{"null@list.0", "null@list.1.name"}},
		{"required missing at depth", `{"in":{},"in_p":{"count":1},"list":[{}]}`,
			[]string{"required@in.name", "required@in_p.name", "required@list.0.name"}},
		{"bad dates", `{"day":"2023-02-29","day_p":"29/02/2024","at":"2024-01-01T10:00:00","in":{"name":"a"}}`,
			[]string{"invalid_date@day", "invalid_date@day_p", "invalid_datetime@at"}},
		{"bad decimals", `{"d":"1e999999999999","dp":"NaN","m":"0x10","decs":["1_000",".5","1234567890123456789",1e300,"0.000000000000000000001"],"in":{"name":"a"}}`,
			[]string{"invalid_decimal@d", "invalid_decimal@dp", "invalid_decimal@m", "invalid_decimal@decs.0",
				"invalid_decimal@decs.1", "max_whole_digits@decs.2", "max_whole_digits@decs.3", "max_decimal_places@decs.4"}},
		{"duplicate key", `{"s":"a","s":"b","in":{"name":"a"}}`, []string{"invalid@s"}},
		{"NUL in string", `{"s":"a\u0000b","in":{"name":"a"}}`, []string{"null_characters_not_allowed@s"}},
		{"int overflow", `{"i":99999999999999999999,"in":{"name":"a"}}`, []string{"invalid@i"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var v decTarget
			errs, err := DecodeStrict([]byte(tc.body), &v)
			if err != nil {
				t.Fatal(err)
			}
			wantErrs(t, errs, tc.want...)
			for _, e := range errs {
				if e.Detail == "" {
					t.Errorf("empty detail for %s", e.Code)
				}
			}
		})
	}
}

func TestDecodeStrictParseErrors(t *testing.T) {
	deep := strings.Repeat(`{"in":`, 70) + "1" + strings.Repeat("}", 70)
	deepList := `{"list":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "}"
	for _, body := range []string{
		``, `   `, `{`, `{"s":}`, `{"s":"a"} {"s":"b"}`, `{"s":"a"}x`, `{"s":'a'}`, `{s:"a"}`,
		`{"s":"a",}`, `[1,]`, "{\"s\":\"\xff\"}", `NaN`, deep, deepList,
	} {
		var v decTarget
		errs, err := DecodeStrict([]byte(body), &v)
		e, ok := AsError(err)
		if !ok || e.Code != CodeParseError || !strings.HasPrefix(e.Detail, "JSON parse error - ") || errs != nil {
			t.Errorf("body %.40q: err=%v errs=%v", body, err, errs)
		}
	}
}

func TestDecodeStrictNotAnObject(t *testing.T) {
	for _, body := range []string{`[]`, `"x"`, `1`, `null`, `true`} {
		var v decTarget
		errs, err := DecodeStrict([]byte(body), &v)
		if err != nil {
			t.Fatal(err)
		}
		wantErrs(t, errs, "invalid@non_field_errors")
	}
}

func TestDecodeStrictProgrammerErrors(t *testing.T) {
	var v decTarget
	type bad struct {
		F float64 `json:"f"`
	}
	for _, dst := range []any{v, nil, new(int), (*decTarget)(nil), &bad{}} {
		if _, err := DecodeStrict([]byte(`{}`), dst); err == nil || ErrorCode(err) != "" {
			t.Errorf("%T: want a plain programming error, got %v", dst, err)
		}
	}
}

func TestDecodeAccountPaths(t *testing.T) {
	m := generic(t, validAccountJSON(t))
	set(t, m, "customers.0.nickname", "Al")
	set(t, m, "supply_addresses.0.meter_points.0.colour", "blue")
	set(t, m, "supply_addresses.0.meter_points.1.agreements.0.valid_to", "31/01/2025")
	set(t, m, "current_statement_transactions.2.line_items.0.extra", true)
	_, errs := accountErrors(t, encode(t, m))
	wantErrs(t, errs,
		"unknown_field@customers.0.nickname",
		"unknown_field@supply_addresses.0.meter_points.0.colour",
		"invalid_date@supply_addresses.0.meter_points.1.agreements.0.valid_to",
		"unknown_field@current_statement_transactions.2.line_items.0.extra",
	)
}

func BenchmarkDecodeValidateAccount(b *testing.B) {
	body := validAccountJSON(b)
	for b.Loop() {
		if _, err := DecodeAccount(body, testRules); err != nil {
			b.Fatal(err)
		}
	}
}

func TestTooManyErrors(t *testing.T) {
	body := `{"import_supplier":"S","external_account_number":"E","sales_channel":"DIRECT","notes":[` +
		strings.TrimSuffix(strings.Repeat(`{"x":1},`, 1000), ",") + `],"customers":[{"x":1}]}`
	_, err := DecodeAccount([]byte(body), testRules)
	e, ok := AsError(err)
	if !ok || len(e.Errors) != MaxReportedErrors+1 || e.Errors[MaxReportedErrors].Code != CodeTooManyErrors {
		t.Fatalf("got %v", err)
	}
}
