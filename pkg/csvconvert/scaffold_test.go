package csvconvert

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The draft mapping of the example export loads as it is, maps the columns
// named like account fields and lists the others commented out.
func TestScaffoldExample(t *testing.T) {
	var files []HeaderFile
	for _, n := range []string{"accounts", "customers", "premises", "meters", "agreements", "notes"} {
		p := filepath.Join("..", "..", "examples", "convert", n+".csv")
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		h, err := ReadHeader(p, f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, h)
	}
	out := string(Scaffold(files))
	if _, err := Load([]byte(out)); err != nil {
		t.Fatalf("draft does not load: %v\n%s", err, out)
	}
	for _, want := range []string{
		`delimiter: ";"`, "key: ACCOUNT_NO", "ACCOUNT_NO: external_account_number", "BILL_POSTCODE: billing_postcode",
		"path: customers", "FIRST_NAME: given_name", "BIRTH_DATE: date_of_birth", "# CUST_SEQ:",
		"key: PREMISE_ID", "ADDR1: supply_address1", "POSTCODE: supply_postcode",
		`path: "supply_addresses[].meter_points"`, "parent_key: PREMISE_ID", "MPXN: mpxn", "SUPPLY_START: supply_start_date",
		`path: "supply_addresses[].meter_points[].agreements"`, "parent_key: MPXN", "key: MPXN",
		"CREATED: created_at", "TEXT: body",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("draft lacks %q:\n%s", want, out)
		}
	}
}

// Schema walk: for every entity the scaffold knows and every scalar field
// of its element, a column named like the field is mapped to it, and the
// draft loads (so no guess is a path the loader refuses). Awkward header
// names are quoted.
func TestScaffoldEveryField(t *testing.T) {
	paths := map[string]bool{}
	for _, p := range entityPaths {
		paths[p] = true
	}
	for p := range paths {
		n, err := entityNode(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		fields := map[string][]string{}
		leafFields(n, "", fields)
		header := []string{"ACC NO", "true", "a:b"}
		for name, ps := range fields {
			if len(ps) == 1 {
				header = append(header, name)
			}
		}
		// Nested files need their parents: give each ancestor a file.
		files := []HeaderFile{{Name: "accounts.csv", Header: []string{"ACC NO", "SALE_DATE"}, Delimiter: ','}}
		if strings.Contains(p, "meter_points") {
			files = append(files, HeaderFile{Name: "premises.csv", Header: []string{"ACC NO", "PID", "POSTCODE"}, Delimiter: ','})
		}
		if strings.HasSuffix(p, "meter_points") {
			header = append(header, "PID")
		}
		if strings.Contains(p, "agreements") {
			files = append(files, HeaderFile{Name: "meters.csv", Header: []string{"ACC NO", "PID", "MID", "MPXN"}, Delimiter: ','})
			header = append(header, "MID")
		}
		name := strings.ReplaceAll(strings.ReplaceAll(p, "[].", "_"), ".", "_")
		if strings.HasSuffix(p, "meter_points") {
			name = "meters"
		} else if strings.HasSuffix(p, "agreements") {
			name = "agreements"
		}
		files = append(files, HeaderFile{Name: name + ".csv", Header: header, Delimiter: ';'})
		out := string(Scaffold(files))
		if _, err := Load([]byte(out)); err != nil {
			t.Fatalf("%s: draft does not load: %v\n%s", p, err, out)
		}
		for fname, ps := range fields {
			if len(ps) == 1 && !strings.Contains(out, "      "+fname+": "+ps[0]+"\n") {
				t.Errorf("%s: column %s not mapped to %s:\n%s", p, fname, ps[0], out)
			}
		}
	}
}
